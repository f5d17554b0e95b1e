"""Command-line options every protocol's ``run`` verb shares: sampling, model backend,
transcripts, progress and executor; and the argparse types that bound each typed value.

Sampling flags are part of the run spec (they change outputs); backend flags (endpoint,
concurrency, retries, cache) are not, except ``--model-args``, which the spec includes. Without
``--max-concurrency`` the openai backend adapts the number of requests in flight to the server
(:mod:`clstream.models.concurrency`); with it, the number is fixed. What the flags parse to
becomes a :class:`~clstream.driver.request.RunRequest` (:mod:`clstream.arguments.requests`).
"""

from __future__ import annotations

import argparse
import functools
import math
import re
from collections.abc import Callable
from typing import Any

from clstream.driver.flags import (
    EXECUTORS,
    OPENAI_DEFAULT_BASE_URL,
    SEED_MAX,
    TRANSCRIPTS,
    bounded_int,
    in_interval,
    interval,
    short_text,
)


def endpoint_url(text: str) -> str:
    """argparse type of an endpoint flag: an ``http(s)://HOST[:PORT]/...`` URL whose port is
    a port, refused as it is typed rather than as a traceback from the HTTP client's first
    connection (``http://[::1``, ``http://127.0.0.1:99999/v1``)."""
    from urllib.parse import urlsplit

    shown = short_text(re.sub(r"//[^/]*@", "//", text))  # never a user:password
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL ({exc}), got {shown}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected http://HOST[:PORT]/... or https://..., "
                                         f"got {shown}")
    if port == 0:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {shown}")
    return text


class BaseUrlFlag(argparse._AppendAction):
    """``--base-url URL``, given once (kept as the string it always was, so recorded flags and
    resume commands read as before) or several times (a list: replicas of one model, requests
    routed by affinity, :mod:`clstream.models.replicas`). An append action, so a spec file
    may give a list (``base_url = ["http://a/v1", "http://b/v1"]``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        try:
            endpoint_url(str(values))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        current = getattr(namespace, self.dest, None)
        if current is None:
            setattr(namespace, self.dest, values)
        elif isinstance(current, list):
            setattr(namespace, self.dest, [*current, values])
        else:
            setattr(namespace, self.dest, [current, values])


class _SeedFlag(argparse.Action):
    """``--seed N``, remembering that it was typed (``seed_typed``), so that ``--seeds``
    given with it is refused rather than one of them silently ignored."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.seed_typed = True


def seed_value(text: str) -> int:
    """argparse type of every ``--seed`` flag: an integer in [0, SEED_MAX]."""
    try:
        return bounded_int(text, 0, SEED_MAX)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count_type(least: int, most: int) -> Any:
    """argparse type of a count flag (tasks, items, retries, ...): an integer in
    [least, most], so that no typo sizes work without bound (docs/design.md §7)."""

    def count(text: str) -> int:
        try:
            return bounded_int(text, least, most)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return count


def int_value(text: str) -> int:
    """argparse type of an integer flag checked later (by the sampling parameters' own
    bounds): a value of thousands of digits is refused by its length, never converted."""
    try:
        return bounded_int(text, -SEED_MAX, SEED_MAX)
    except ValueError:
        digits = text.strip().lstrip("+-")
        kind = "an integer within 64 bits" if digits.isdigit() else "an integer"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {short_text(text)}") from None


def finite_float_type(least: float, most: float, above: bool = False) -> Any:
    """argparse type of a real-valued flag: a finite number in [least, most] (or
    (least, most] with ``above``); ``inf`` and ``nan`` are refused by name, never run."""

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not in_interval(value, least, most, above):
            raise argparse.ArgumentTypeError(f"must be a finite number in "
                                             f"{interval(least, most, above)}, got "
                                             f"{short_text(text)}")
        return value

    return number


def add_sampling_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sampling (defaults: the OAKS paper's setup)")
    g.add_argument("--temperature", type=float, default=0.7)
    g.add_argument("--top-p", type=float, default=0.8)
    g.add_argument("--top-k", type=int_value, default=20)
    g.add_argument("--min-p", type=float, default=0.0)
    g.add_argument("--max-tokens", type=int_value, default=4096)
    g.add_argument("--samples", type=int_value, default=1, help="completions per probe (n)")
    g.add_argument("--seed", type=seed_value, default=0, action=_SeedFlag,
                   help="run seed; per-request seeds derive from it")
    g.add_argument("--seeds", default=None, metavar="N,N,...",
                   help="run every system once per seed (each its own run, as --seed N makes "
                        "it), into the same results directory; not with --seed")
    g.add_argument("--thinking", choices=["on", "off"], default=None,
                   help="thinking mode through chat_template_kwargs, where the model supports it")


def add_backend_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model backend")
    g.add_argument("--model-args", default=None, metavar="KEY=VALUE,...",
                   help="backend settings that are part of the run spec, e.g. dtype=bfloat16")
    g.add_argument("--base-url", default=None, action=BaseUrlFlag,
                   help="OpenAI-compatible server (openai:<model>; default: "
                        f"{OPENAI_DEFAULT_BASE_URL}); given several times, replicas of one "
                        "model, each request routed to the replica serving its document, "
                        "stream or instance")
    g.add_argument("--api-key-env", default=None,
                   help="name of the environment variable holding the API key")
    g.add_argument("--max-concurrency", type=int, default=None,
                   help="requests in flight, fixed (default: adaptive, starting at the "
                        "server's slot count where it reports one)")
    g.add_argument("--request-timeout", type=finite_float_type(0.0, 7 * 86_400, above=True),
                   default=None,
                   help="seconds of silence (no token) before an attempt is given up "
                        "(default 120; a long answer that keeps coming never times out)")
    g.add_argument("--max-retries", type=count_type(0, 1_000), default=None)
    g.add_argument("--cache", default=None, help="response cache (SQLite file) shared across runs")


def add_run_arguments(p: argparse.ArgumentParser, system_help: str) -> None:
    """The flags of every ``run`` verb: systems, model, results directory, sampling, backend."""
    p.add_argument("--system", action="append", required=True, help=system_help)
    p.add_argument("--model", default=None,
                   help="builtin | openai:<model> | hf:<path> | vllm:<path> (default: builtin, "
                        "the offline reader for demos and tests, not a language model)")
    p.add_argument("--out", required=True, help="results directory")


def add_driver_arguments(p: argparse.ArgumentParser) -> None:
    """The flags the driver reads in every ``run`` verb: progress, sampling, backend and
    executor."""
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--transcripts", choices=TRANSCRIPTS, default="all",
                   help="all (default): store every model call with its messages and reply "
                        "next to the records it served; none: store no transcripts")
    add_sampling_arguments(p)
    add_backend_arguments(p)
    add_executor_arguments(p)


@functools.lru_cache(maxsize=64)
def parser_actions(add_arguments: Callable[[argparse.ArgumentParser], None]
                   ) -> tuple[argparse.Action, ...]:
    """The actions (flags and positionals) a verb's ``add_arguments`` declares, built once per
    process: reading a run's flags back (recorded flags, resume commands) happens once per run,
    thousands of times for a large spec file, and a parser costs a millisecond to build."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return tuple(parser._actions)


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("executor (where the cells of a run are carried out)")
    g.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: in this process; ray: on a Ray cluster, results still written "
                        "by this process only (needs the ray extra)")
    g.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="Ray cluster to use (HOST:6379 or ray://HOST:10001); default: a local "
                        "cluster started for the run")
    g.add_argument("--ray-workers", type=int, default=None, metavar="N",
                   help="CPUs of the local cluster started for the run (default: all)")
