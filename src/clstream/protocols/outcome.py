"""How a ``run`` command starts and ends (DESIGN.md, "Trust": a run that failed exits non-zero
and says why in one line).

Before anything is written, :func:`check_endpoint` asks the model to check its endpoint (the
optional :class:`~clstream.core.contracts.Preflight` part), so a dead server or a wrong model
name fails in seconds, with the server's reason, and leaves no results directory behind. Where
the server reported its context length, a system whose prompt budget and answer cap cannot
fit it (``full:budget=120000`` against an 8,192-token server) is refused there too, in one line
naming both numbers, instead of failing request by request.

After the runs, :func:`finish` raises :class:`RunFailed` (exit status 3) when any run ended with
work that failed and a resume would retry: one line with the count of failed records, the first
error message (quoted, shortened) and the exact command that resumes the run.

A run goes through :func:`run_interruptible`, where SIGTERM (``kill``, a scheduler's preemption,
``timeout``) interrupts it as Ctrl-C does, so the runners' cleanup records the wall time spent
so far before the process ends (SIGKILL leaves no chance to: that session's time is lost, its
stored answers are not).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shlex
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from clstream.core.contracts import Model, check_model
from clstream.core.errors import ClstreamError, SpecError
from clstream.core.reader import ResultsReader
from clstream.core.registry import resolve
from clstream.core.specs import ComponentSpec
from clstream.core.types import SamplingParams

ERROR_CHARS = 160  # of the first error message quoted in the line
T = TypeVar("T")


class RunFailed(ClstreamError):
    """A run ended with failed work that a rerun of the same command retries."""

    exit_code = 3


# A system parameter bounds the prompt when its help says it is a prompt or context budget.
_PROMPT_BUDGET = re.compile(r"\b(prompt|context)( token)? budget\b")


def prompt_budget(system: ComponentSpec) -> int | None:
    """The most prompt tokens ``system`` sends, where a parameter bounds them (``budget`` of
    the context systems), else None."""
    params = getattr(resolve("system", system.name), "params", {}) or {}
    for name, param in params.items():
        if _PROMPT_BUDGET.search(getattr(param, "help", "")):
            value = system.args.get(name, param.default)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def check_context(model: Model, sampling: SamplingParams, systems: Sequence[ComponentSpec]
                  ) -> None:
    """Refuse a system whose prompts and answers cannot fit the context the server reported."""
    server = getattr(model, "server", None)
    context = getattr(server, "context_length", None)
    if not isinstance(context, int):
        return
    for system in systems:
        budget = prompt_budget(system)
        if budget is not None and budget + sampling.max_tokens > context:
            room = max(0, context - sampling.max_tokens)
            raise SpecError(
                f"system {system.label!r} sends prompts of up to {budget:,} tokens plus "
                f"{sampling.max_tokens:,} answer tokens, but {model.name} serves a context of "
                f"{context:,} tokens; give a budget of at most {room:,} or a server with a "
                "longer context")


def check_endpoint(model: Model, sampling: SamplingParams,
                   systems: Sequence[ComponentSpec] = ()) -> None:
    """The model's endpoint check (raises a one-line error); its notes go to stderr. With
    ``systems``, also :func:`check_context`."""
    for note in asyncio.run(check_model(model, sampling)):
        print(f"clstream: warning: {note}", file=sys.stderr)
    check_context(model, sampling, systems)


def run_interruptible(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, except that SIGTERM cancels ``coro`` the way Ctrl-C does (its
    cleanup runs: the runners record the wall time spent), then raises KeyboardInterrupt."""
    interrupted = False

    async def main() -> T | None:
        nonlocal interrupted
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True
            if task is not None:
                task.cancel()

        try:
            loop.add_signal_handler(signal.SIGTERM, stop)
            installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            installed = False
        try:
            return await coro
        except asyncio.CancelledError:
            if not stopped:
                raise
            interrupted = True
            return None
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGTERM)

    result = asyncio.run(main())
    if interrupted:
        raise KeyboardInterrupt
    return cast(T, result)


@dataclass
class Failure:
    """One run's unfinished work, out of ``total`` units (probes, records): ``failed`` ones
    ended in an error, ``missing`` ones were never done (a stream stopped before them);
    ``first_error`` is the first error message."""

    label: str
    run_id: str
    failed: int
    missing: int
    total: int
    first_error: str | None


def first_error(store: ResultsReader, run_id: str, kinds: tuple[str, ...]) -> str | None:
    """The first stored error message of the run among records of ``kinds``."""
    for kind in kinds:
        for row in store.iter_records(run_id, kind, errors=True):
            return str(row["error"])
    return None


def _shorten(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= ERROR_CHARS else one[: ERROR_CHARS - 3] + "..."


def resume_command(protocol: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                   args: argparse.Namespace) -> str:
    """The command line that resumes this run: the one typed when it is ``clstream run
    <protocol> ...``, else rebuilt from ``args`` (every flag that differs from its default)."""
    typed = sys.argv[1:]
    if typed[:2] == ["run", protocol]:
        return shlex.join(["clstream", *typed])
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    words = ["clstream", "run", protocol]
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if not action.option_strings:
            words.append(str(value))
            continue
        if value is None or value is False or value == action.default:
            continue
        flag = max(action.option_strings, key=len)
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def failure_line(protocol: str, unit: str, failures: list[Failure], resume: str) -> str:
    """One line: how much failed in which runs, the first error, and the resume command
    (``unit``: what is counted, singular)."""
    failed, missing = sum(f.failed for f in failures), sum(f.missing for f in failures)
    per_run = "; ".join(
        f"{f.label} ({f.run_id}): {f.failed} failed" + (f", {f.missing} not done" if f.missing
                                                        else "") + f" of {f.total}"
        for f in failures)
    line = f"run {protocol} ended with {failed} failed {unit}{'' if failed == 1 else 's'}"
    if missing:
        line += f" and {missing} not done"
    line += f" ({per_run})"
    first = next((f for f in failures if f.first_error), None)
    if first is not None and first.first_error is not None:
        line += f"; first error: {json.dumps(_shorten(first.first_error), ensure_ascii=False)}"
    return f"{line}; resume with: {resume}"


def finish(protocol: str, unit: str, failures: list[Failure], resume: str) -> None:
    """Raise :class:`RunFailed` with :func:`failure_line` when any run failed."""
    if failures:
        raise RunFailed(failure_line(protocol, unit, failures, resume))
