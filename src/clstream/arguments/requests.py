"""From a ``run`` verb's parsed flags to :class:`~clstream.driver.request.RunRequest` values:
where argparse ends (docs/design.md §11.1).

A protocol's ``run`` handler, a spec file entry, a matrix cell and ``clstream plan`` all parse
the same flags and hand them to :func:`seed_requests`: one request per seed of ``--seeds``
(docs/design.md §11.6), each planned exactly as ``--seed N`` plans it, so each has the run
spec and run id the single-seed command gives it and a rerun resumes only what is missing.
What a request records of its flags (:func:`recorded_flags`: a results directory's spec file)
and its resume command (:func:`resume_command`) are read from the parser here, once, so that
the driver never sees the parser or the namespace.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from clstream.arguments.groups import parser_actions
from clstream.core.errors import SpecError
from clstream.core.protocol import Command
from clstream.core.secrets import redacted_url
from clstream.driver.flags import EXECUTOR_FLAGS, MOST_SEEDS, SEED_MAX, bounded_int
from clstream.driver.request import BackendFlags, ExecutorFlags, RunRequest, SamplingFlags

OptionsT = TypeVar("OptionsT")
AddArguments = Callable[[argparse.ArgumentParser], None]

SHARED = frozenset({
    "help", "system", "model", "out", "no_progress", "transcripts", "seed", "seeds",
    *(f.name for f in dataclasses.fields(SamplingFlags)), "model_args",
    *(f.name for f in dataclasses.fields(BackendFlags)), *EXECUTOR_FLAGS})
"""Destinations of the flags every ``run`` verb has (:func:`~clstream.arguments.groups.
add_run_arguments`, :func:`~clstream.arguments.groups.add_driver_arguments`); the others are
the protocol's own, its options."""


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


def per_seed(args: argparse.Namespace) -> list[argparse.Namespace]:
    """``args`` once per seed of ``--seeds`` (each with ``--seed`` set to it and ``--seeds``
    cleared), or ``[args]`` alone without ``--seeds``."""
    seeds = seed_list(args)
    if seeds is None:
        return [args]
    return [argparse.Namespace(**{**vars(args), "seed": seed, "seeds": None}) for seed in seeds]


# Flags a results directory's spec file does not repeat: per run (--system), where results go,
# how progress shows, where cells are carried out.
_UNRECORDED = frozenset({"help", "system", "out", "no_progress"}) | EXECUTOR_FLAGS


def recorded_flags(args: argparse.Namespace, add_arguments: AddArguments) -> dict[str, Any]:
    """The run's flags that differ from their defaults, by destination name, plus every
    positional argument (a path that exists made absolute): recorded with the run, so that
    ``clstream runs DIR --spec`` writes a spec file that reruns it."""
    out: dict[str, Any] = {}
    for action in parser_actions(add_arguments):
        if action.dest in _UNRECORDED or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if isinstance(value, str) and "://" in value:
            value = redacted_url(value)  # never a user:password of an endpoint
        elif isinstance(value, list):
            value = [redacted_url(v) if isinstance(v, str) and "://" in v else v
                     for v in value]
        if not action.option_strings:
            out[action.dest] = (str(Path(value).resolve())
                                if isinstance(value, str) and Path(value).exists() else value)
        elif value is not None and value != action.default:
            out[action.dest] = value
    return out


def resume_command(protocol: str, add_arguments: AddArguments, args: argparse.Namespace) -> str:
    """The command line that resumes this run: the one typed when it is ``clstream run
    <protocol> ...``, else rebuilt from ``args`` (every flag that differs from its default)."""
    typed = sys.argv[1:]
    if typed[:2] == ["run", protocol]:
        return shlex.join(["clstream", *typed])
    words = ["clstream", "run", protocol]
    for action in parser_actions(add_arguments):
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


def backend_flags(args: argparse.Namespace) -> BackendFlags:
    """The model backend flags (:func:`~clstream.arguments.groups.add_backend_arguments`) of
    any verb that builds a model."""
    return BackendFlags(**{f.name: getattr(args, f.name)
                           for f in dataclasses.fields(BackendFlags)})


def sampling_flags(args: argparse.Namespace) -> SamplingFlags:
    """The sampling flags (:func:`~clstream.arguments.groups.add_sampling_arguments`) as
    typed; :func:`~clstream.driver.request.sampling_params` checks them."""
    return SamplingFlags(**{f.name: getattr(args, f.name)
                            for f in dataclasses.fields(SamplingFlags)})


def run_request(args: argparse.Namespace, protocol: str, add_arguments: AddArguments,
                options: type[OptionsT]) -> RunRequest[OptionsT]:
    """The request of one seed's parsed ``run`` flags; ``options``: the protocol's dataclass
    of its own flags, whose fields must be exactly the flags of ``add_arguments`` that no
    other ``run`` verb has (a flag left out would otherwise be parsed and never used)."""
    fields = [f.name for f in dataclasses.fields(cast(Any, options))]
    own = {a.dest for a in parser_actions(add_arguments)} - SHARED
    if own != set(fields):
        raise TypeError(f"{options.__name__} of run {protocol}: fields {sorted(fields)}, but "
                        f"the verb's own flags are {sorted(own)}")
    return RunRequest(
        systems=tuple(args.system), out=args.out,
        options=options(**{name: getattr(args, name) for name in fields}),
        model=getattr(args, "model", None), model_args=args.model_args, seed=args.seed,
        sampling=sampling_flags(args),
        backend=backend_flags(args),
        executor=ExecutorFlags(getattr(args, "executor", "local") or "local",
                               getattr(args, "ray_address", None),
                               getattr(args, "ray_workers", None)),
        transcripts=getattr(args, "transcripts", "all"),
        show_progress=not args.no_progress,
        recorded=recorded_flags(args, add_arguments),
        resume=resume_command(protocol, add_arguments, args))


def seed_requests(args: argparse.Namespace, protocol: str, add_arguments: AddArguments,
                  options: type[OptionsT]) -> list[RunRequest[OptionsT]]:
    """One request per seed of ``--seeds`` (one without it): see the module docstring."""
    return [run_request(one, protocol, add_arguments, options) for one in per_seed(args)]


def command_request(args: argparse.Namespace, protocol: str, command: Command) -> RunRequest[Any]:
    """:func:`run_request` of a registered protocol's ``run`` command, its flags and options
    type read from it, for flags that name one seed (the matrix gives each seed's flags
    itself)."""
    return run_request(args, protocol, command.arguments(), command.options_type())


def command_requests(args: argparse.Namespace, protocol: str,
                     command: Command) -> list[RunRequest[Any]]:
    """:func:`seed_requests` of a registered protocol's ``run`` command: one request per seed
    of ``--seeds``, as ``run PROTOCOL`` makes them, for ``clstream plan`` and a spec file entry
    (``seeds = "0,1"``), so that neither plans or runs the first seed alone."""
    return seed_requests(args, protocol, command.arguments(), command.options_type())
