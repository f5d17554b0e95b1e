"""``clstream run matrix``: every chosen system on every chosen protocol's small default
dataset, into one results directory (docs/design.md §11.5).

Each protocol says what its small default dataset is (``matrix_data(seed)``, a
:class:`~clstream.core.protocol.MatrixData`). The matrix writes it under ``DIR/data/PROTOCOL``
once: a file or directory already there is reused as it is, and a new one is generated under a
temporary name and renamed into place, so a matrix killed while generating never leaves half a
dataset to be reused. Then each protocol's runs are planned by that protocol's own parser and
planner, from the same arguments ``clstream run PROTOCOL`` takes (so a cell has the run id the
same run typed by hand has), and all of them go through the one driver: a rerun does only what
is missing, and a run that fails, even by raising, leaves the other cells to run and the
matrix ends with exit 3 and the command that resumes it.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from clstream.arguments.groups import add_backend_arguments, add_sampling_arguments
from clstream.core.errors import SpecError
from clstream.core.protocol import MatrixData, StreamProtocol
from clstream.core.registry import names, resolve

_MODEL_DEFAULT = "builtin"


def split_systems(values: list[str]) -> list[str]:
    """``rag:k=4,w=2,mem0`` -> ``["rag:k=4,w=2", "mem0"]``: a comma starts a new system unless
    what follows it is another ``key=value`` of the system before (a system name never holds
    ``=``)."""
    systems: list[str] = []
    for value in values:
        for piece in value.split(","):
            piece = piece.strip()
            if not piece:
                continue
            if systems and "=" in piece and ":" not in piece.split("=", 1)[0] \
                    and ":" in systems[-1]:
                systems[-1] += "," + piece
            else:
                systems.append(piece)
    return list(dict.fromkeys(systems))


def add_matrix_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--protocols", default=None, metavar="NAME,...",
                   help="protocols to run (default: every protocol with default data)")
    p.add_argument("--systems", action="append", required=True, metavar="NAME[:k=v,...],...",
                   help="systems to run on every protocol, comma-separated (repeatable)")
    p.add_argument("--model", default=_MODEL_DEFAULT,
                   help="builtin | openai:<model> | hf:<path> | vllm:<path> (default: builtin)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="results directory; the data goes under DIR/data/PROTOCOL")
    p.add_argument("--no-progress", action="store_true")
    add_sampling_arguments(p)
    add_backend_arguments(p)


def _shared_flags(args: argparse.Namespace) -> list[str]:
    """The sampling and backend flags given (those that differ from their defaults), as
    every protocol's ``run`` takes them; ``--seed`` always."""
    parser = argparse.ArgumentParser(add_help=False)
    add_sampling_arguments(parser)
    add_backend_arguments(parser)
    words: list[str] = []
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if action.dest == "seeds" or (action.dest != "seed"
                                      and (value is None or value == action.default)):
            continue
        words += [max(action.option_strings, key=len), str(value)]
    return words + (["--no-progress"] if args.no_progress else [])


def matrix_protocols(given: str | None) -> list[tuple[StreamProtocol, Any]]:
    """The chosen protocols, each with its ``matrix_data`` method, in the order given (the
    registry's order by default)."""
    known = names("protocol")
    chosen = [p.strip() for p in given.split(",") if p.strip()] if given is not None else None
    if chosen == []:  # `--protocols ''` names none; it does not mean all of them
        raise SpecError("flag --protocols: give one or more protocol names, e.g. oaks,seqmem")
    out = []
    for name in chosen if chosen is not None else known:
        if name not in known:
            raise SpecError(f"flag --protocols: unknown protocol {name!r} (known: "
                            f"{', '.join(known)})")
        protocol: StreamProtocol = resolve("protocol", name)
        data = getattr(protocol, "matrix_data", None)
        if data is None:
            if chosen is None:
                continue
            raise SpecError(f"flag --protocols: {name} has no default data for a matrix run")
        out.append((protocol, data))
    if not out:
        raise SpecError("flag --protocols: no protocol to run")
    return list({p.name: (p, d) for p, d in out}.values())


def _generate(argv: list[str]) -> int:
    """``clstream generate NAME ...`` through the generator's own parser and handler."""
    from clstream.commands.specfile import _Parser, _Refused

    if argv[:1] != ["generate"] or len(argv) < 2:
        raise SpecError(f"not a generate command: {shlex.join(argv)}")
    for name in names("protocol"):
        for generator in resolve("protocol", name).generators:
            if generator.name == argv[1]:
                parser = _Parser(prog=f"clstream generate {generator.name}", add_help=False)
                generator.add_to(parser)
                try:
                    args = parser.parse_args(argv[2:])
                except _Refused as exc:
                    raise SpecError(f"{shlex.join(argv)}: {exc}") from None
                return generator.run(args)
    raise SpecError(f"no generator {argv[1]!r}")


def ensure_data(data: MatrixData, directory: Path) -> Path:
    """The dataset at ``directory / data.name``: reused when it is there, else generated
    under a temporary name and renamed into place."""
    target = directory / data.name
    if target.exists():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f".partial-{data.name}"
    if partial.is_dir():
        shutil.rmtree(partial)
    elif partial.exists():
        partial.unlink()
    for argv in data.generate(partial):
        print("$ clstream " + shlex.join(argv), file=sys.stderr)
        with contextlib.redirect_stdout(sys.stderr):  # stdout is the results directory only
            code = _generate(argv)
        if code:
            raise SpecError(f"generating {target} failed (exit {code})")
    partial.replace(target)
    return target


def _resume(args: argparse.Namespace, protocols: list[str], systems: list[str]) -> str:
    words = ["clstream", "run", "matrix", "--protocols", ",".join(protocols), "--systems",
             ",".join(systems), "--model", args.model, "--out", str(args.out)]
    shared = _shared_flags(args)
    if args.seeds is not None:  # every seed again, not the first seed's --seed
        shared = [*shared[:shared.index("--seed")], *shared[shared.index("--seed") + 2:],
                  "--seeds", str(args.seeds)]
    return shlex.join(words + shared)


def run_matrix(args: argparse.Namespace) -> int:
    """Generate (or reuse) each protocol's default data, then run every system on it; with
    ``--seeds``, all of that once per seed (each seed its own data, as ``--seed`` makes it)."""
    from clstream.arguments.requests import per_seed
    from clstream.driver.assemble import shared_models
    from clstream.driver.components import parse_components
    from clstream.driver.execute import drive

    systems = split_systems(args.systems)
    if not systems:
        raise SpecError("flag --systems: give at least one system")
    chosen = matrix_protocols(args.protocols)
    parse_components(args.model, args.model_args, systems)  # a typo fails before any writing
    jobs = []
    for protocol, matrix_data in chosen:
        with shared_models():  # one model per protocol, as without --seeds, for all seeds
            jobs += [_seed_job(one, protocol, matrix_data, systems) for one in per_seed(args)]
    return drive(jobs, resume=_resume(args, [p.name for p, _ in chosen], systems),
                 keep_going=True)


def _seed_job(args: argparse.Namespace, protocol: StreamProtocol, matrix_data: Any,
              systems: list[str]) -> Any:
    """One protocol's run job for the seed ``args.seed``, its data made first."""
    from clstream.arguments.requests import command_request
    from clstream.commands.specfile import _protocol_parser, _Refused

    out = Path(args.out)
    data: MatrixData = matrix_data(args.seed)
    path = ensure_data(data, out / "data" / protocol.name)
    words = [*data.run(path), "--model", args.model, "--out", str(out), *_shared_flags(args),
             *[w for s in systems for w in ("--system", s)]]
    try:
        run_args = _protocol_parser(protocol).parse_args(words)
    except _Refused as exc:
        raise SpecError(f"run matrix: {protocol.name}: {exc}") from None
    return protocol.run_command.planned(
        command_request(run_args, protocol.name, protocol.run_command))
