"""Command-line options every protocol's ``run`` verb shares: sampling, model backend and
executor.

Sampling flags are part of the run spec (they change outputs); backend flags (endpoint,
concurrency, retries, cache) are not, except ``--model-args``, which the spec includes. Without
``--max-concurrency`` the openai backend adapts the number of requests in flight to the server
(:mod:`clstream.models.concurrency`); with it, the number is fixed.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clstream.core.errors import SpecError

if TYPE_CHECKING:
    from clstream.core.types import SamplingParams
    from clstream.driver.plan import ExecutorChoice

# The openai backend's default endpoint (clstream.models.openai_compat.DEFAULT_BASE_URL, not
# imported here so that building the command line does not load the HTTP client).
OPENAI_DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


def endpoint_url(text: str) -> str:
    """argparse type of an endpoint flag: an ``http(s)://HOST[:PORT]/...`` URL whose port is
    a port, refused as it is typed rather than as a traceback from the HTTP client's first
    connection (``http://[::1``, ``http://127.0.0.1:99999/v1``)."""
    from urllib.parse import urlsplit

    shown = _short_text(re.sub(r"//[^/]*@", "//", text))  # never a user:password
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


def seed_list(args: argparse.Namespace) -> list[int] | None:
    """The seeds ``--seeds`` names (in the order given, each once), or None without it; a
    one-line error (exit 2) for ``--seed`` with it or for a value that is not integers."""
    text = getattr(args, "seeds", None)
    if text is None:
        return None
    if getattr(args, "seed_typed", False):
        raise SpecError("flags --seed and --seeds: give one of them (--seeds runs every seed "
                        "it names)")
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            seeds.append(bounded_int(part, 0, SEED_MAX))
        except ValueError as exc:
            raise SpecError(f"flag --seeds: {exc}") from None
    if not seeds:
        raise SpecError("flag --seeds: give at least one seed, e.g. 0,1,2")
    distinct = list(dict.fromkeys(seeds))
    if len(distinct) > MOST_SEEDS:
        raise SpecError(f"flag --seeds: {len(distinct):,} seeds; at most {MOST_SEEDS:,}")
    return distinct


MOST_SEEDS = 1_000
"""Most seeds one command runs (each seed is a run of every system)."""


SEED_MAX = 2**63 - 1
"""The largest seed: what a signed 64-bit integer holds, so every backend and store can keep
it; seeds are 0..SEED_MAX wherever they are typed (flags, ``--seeds``, spec files)."""


def _short_text(text: str) -> str:
    """A typed value as a message quotes it: whole when short, else its length."""
    return repr(text) if len(text) <= 40 else f"a value of {len(text):,} characters"


def bounded_int(text: str, least: int, most: int) -> int:
    """``text`` as an integer in [least, most], or a :class:`ValueError` whose message says
    so (a number of thousands of digits is refused by its length, never converted)."""
    stripped = text.strip()
    value: int | None = None
    if len(stripped) <= 24:
        try:
            value = int(stripped)
        except ValueError:
            value = None
    if value is None or not least <= value <= most:
        raise ValueError(f"must be an integer in [{least:,}, {most:,}], got {_short_text(text)}")
    return value


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
        raise argparse.ArgumentTypeError(f"expected {kind}, got {_short_text(text)}") from None


def _interval(least: float, most: float, above: bool) -> str:
    return f"({least:g}, {most:g}]" if above else f"[{least:g}, {most:g}]"


def _in_interval(value: float, least: float, most: float, above: bool) -> bool:
    low_ok = value > least if above else value >= least
    return math.isfinite(value) and low_ok and value <= most


def finite_float_type(least: float, most: float, above: bool = False) -> Any:
    """argparse type of a real-valued flag: a finite number in [least, most] (or
    (least, most] with ``above``); ``inf`` and ``nan`` are refused by name, never run."""

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not _in_interval(value, least, most, above):
            raise argparse.ArgumentTypeError(f"must be a finite number in "
                                             f"{_interval(least, most, above)}, got "
                                             f"{_short_text(text)}")
        return value

    return number


_REAL_SAMPLING: dict[str, tuple[float, float, bool]] = {
    "temperature": (0.0, 2.0, False), "top_p": (0.0, 1.0, True), "min_p": (0.0, 1.0, False)}
"""The bounds of the real-valued sampling flags (least, most, whether least is excluded):
what OpenAI-compatible servers accept; never ``inf`` or ``nan``."""


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


TRANSCRIPTS = ("all", "none")
"""``--transcripts``: what a run stores of its model calls (recorded in the run's info, never
in its spec hash: docs/design.md §5.1)."""


def transcripts_on(args: argparse.Namespace) -> bool:
    """Whether the flags keep transcripts (the default)."""
    return getattr(args, "transcripts", "all") != "none"


EXECUTORS = ("local", "ray")
RAY_MISSING = "--executor ray: ray is not installed (pip install 'clstream[ray]')"
EXECUTOR_FLAGS = frozenset({"executor", "ray_address", "ray_workers"})
"""Destinations of the executor flags: how a run is carried out, never what it is (not in the
run spec, not among the flags a results directory records)."""


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


# SamplingParams fields whose flag has another name.
_SAMPLING_FLAGS = {"n": "samples"}


def sampling_from_args(args: argparse.Namespace) -> SamplingParams:
    # Imported here: the option groups above build parsers, which must not load pydantic.
    from pydantic import ValidationError

    from clstream.core.types import SamplingParams

    for dest, (least, most, above) in _REAL_SAMPLING.items():
        value = getattr(args, dest)
        if not _in_interval(value, least, most, above):
            raise SpecError(f"flag --{dest.replace('_', '-')}: must be a finite number in "
                            f"{_interval(least, most, above)}, got {value}")
    try:
        return SamplingParams(
            temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, min_p=args.min_p,
            max_tokens=args.max_tokens, n=args.samples, seed=args.seed,
            thinking=None if args.thinking is None else args.thinking == "on",
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0])
        flag = "--" + _SAMPLING_FLAGS.get(field, field.replace("_", "-"))
        raise SpecError(f"flag {flag}: {err['msg']}") from None


def executor_from_args(args: argparse.Namespace) -> ExecutorChoice:
    """The executor the flags choose; a one-line error (exit 2) for ``--executor ray`` where
    ray is not installed, or for Ray flags without it, before anything is written."""
    from clstream.driver.plan import ExecutorChoice

    kind = getattr(args, "executor", "local") or "local"
    address = getattr(args, "ray_address", None)
    workers = getattr(args, "ray_workers", None)
    positive("--ray-workers", workers, MOST_IN_FLIGHT)
    if kind != "ray":
        if address is not None or workers is not None:
            raise SpecError("flags --ray-address and --ray-workers need --executor ray")
        return ExecutorChoice()
    if importlib.util.find_spec("ray") is None:
        raise SpecError(RAY_MISSING)
    if address is not None and workers is not None:
        raise SpecError("flag --ray-workers sizes a local cluster; not with --ray-address")
    return ExecutorChoice("ray", address, workers)


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "base_url": args.base_url, "api_key_env": args.api_key_env,
        "max_concurrency": args.max_concurrency, "request_timeout": args.request_timeout,
        "max_retries": args.max_retries, "cache_path": args.cache,
    }


MOST_ROLLOUTS = 1_000
"""More stateful rollouts than any study reports; the bound keeps a typo from sizing work."""
MOST_IN_FLIGHT = 1_024
"""Cells (rollouts, documents, instances) played at once."""


def positive(flag: str, value: int | None, most: int | None = None) -> None:
    """A count flag must be >= 1 when given, and at most ``most`` where the count sizes work
    (checked before anything is registered: docs/design.md §7, one line and exit 2)."""
    if value is not None and value < 1:
        raise SpecError(f"flag {flag}: must be >= 1, got {value}")
    if value is not None and most is not None and value > most:
        raise SpecError(f"flag {flag}: must be at most {most:,}, got {_short(value)}")


def _short(value: int) -> str:
    """A number as a message shows it: whole when short, else its digit count."""
    text = str(value)
    return text if len(text) <= 24 else f"a {len(text)}-digit number"
