"""The ``clstream`` command line, built from the protocol registry.

``generate``, ``run`` and ``score`` get one sub-command per registered protocol (its
:class:`~clstream.core.protocol.Command` entries); ``summary``, ``report``, ``export``, ``merge``,
``runs``, ``list``, ``check`` (an OpenAI-compatible endpoint's readiness), ``plan`` (a run's
cost, counted before it runs) and ``view`` (a local web viewer of results) are shared by all. Adding a
protocol therefore adds its verbs here without an edit.

Building the parser imports no protocol's code: a protocol's verbs are names, one line of help
and ``"module:name"`` targets (:class:`~clstream.core.protocol.Command`), and a verb's own flags
are added only when that verb is parsed or its help is shown. ``clstream --version`` and
``--help`` therefore cost little more than the interpreter, and ``run NAME`` imports its
runner only when it runs.

Every user error (bad file, record, field, flag or spec) is printed as one line
``clstream: error: ...`` with exit status 2 and no traceback; nothing stored is touched.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from clstream import __version__
from clstream.commands import check, listing, merge, plan, results, runs, specfile, view
from clstream.core.errors import ClstreamError, Interrupted
from clstream.core.outputs import replacing
from clstream.core.protocol import Command, StreamProtocol
from clstream.core.registry import names, resolve


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the flag, and exit status 2; and the
    arguments of a sub-command may be deferred (:meth:`defer`): they are added the first time
    this parser parses or formats its usage or help, so a verb nobody typed costs nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, add_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
        self._deferred.append(add_arguments)

    def _complete(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()

    def format_help(self) -> str:
        self._complete()
        return super().format_help()

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:  # named after the verb that was given them, not the top-level parser
            verb = [getattr(parsed, dest, None) for dest in ("command", "protocol", "benchmark")]
            print(f"clstream: error: {' '.join([self.prog, *filter(None, verb)])}: "
                  f"unrecognized arguments: {' '.join(unknown)}", file=sys.stderr)
            raise SystemExit(2)
        return parsed

    def error(self, message: str) -> NoReturn:
        print(f"clstream: error: {self.prog}: {usage_problem(message)}", file=sys.stderr)
        raise SystemExit(2)


_ARGUMENT = re.compile(r"argument (?P<flag>[^:]+): (?P<problem>.*)", re.DOTALL)
_INVALID_VALUE = re.compile(r"invalid (?P<kind>\w+) value: (?P<value>.*)", re.DOTALL)
_EXPECTED = {"float": "a number", "int": "an integer"}


def usage_problem(message: str) -> str:
    """argparse's complaint as the flag and what it expected, on one line
    (``argument --temperature: invalid float value: 'x'`` -> ``--temperature: expected a
    number, got 'x'``); its usage lines are never printed (docs/design.md §7)."""
    message = " ".join(message.split())
    found = _ARGUMENT.fullmatch(message)
    if found is None:
        return message
    flag, problem = found["flag"], found["problem"]
    invalid = _INVALID_VALUE.fullmatch(problem)
    if invalid is not None:
        expected = _EXPECTED.get(invalid["kind"])
        problem = (f"expected {expected}, got {invalid['value']}" if expected
                   else f"invalid value {invalid['value']}")
    return f"{flag}: {problem}"


def _add(group: Any, command: Command) -> None:
    """Sub-command ``command`` of ``group``; its arguments (and so its module) are loaded only
    when it is the one parsed."""
    p: _Parser = group.add_parser(command.name, help=command.help)
    p.set_defaults(handler=command.run)
    p.defer(command.add_to)


def protocols(argv: Sequence[str] | None = None) -> list[StreamProtocol]:
    """The registered protocols the command line needs, in the registry's order.

    ``run NAME``, ``score NAME`` and ``plan NAME`` need only protocol NAME, so only it is imported (the builtin
    protocols' packages are cheap to import, a protocol registered from elsewhere need not be).
    Anything else (``generate``, whose generator names are the protocols' own, ``--help``, a
    misspelt name) loads every one.
    """
    known = names("protocol")
    words = [a for a in (argv or ()) if not a.startswith("-")][:2]
    if len(words) == 2 and words[0] in ("run", "score", "plan") and words[1] in known:
        return [resolve("protocol", words[1])]
    return [resolve("protocol", name) for name in known]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(prog="clstream",
                     description="Measure continual learning of LLM systems on streams.")
    parser.add_argument("--version", action="version", version=f"clstream {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    gen = sub.add_parser("generate", help="write a procedural benchmark stream")
    gsub = gen.add_subparsers(dest="benchmark", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="run systems over a benchmark into a results directory",
                         usage="%(prog)s PROTOCOL ... | %(prog)s matrix ... | "
                               "%(prog)s --spec FILE [--out DIR]")
    run.add_argument("--spec", default=None, metavar="FILE",
                     help="a run spec file (TOML) naming runs of any protocols; see "
                          "docs/design.md")
    run.add_argument("--out", default=None, metavar="DIR",
                     help="with --spec: the results directory (instead of the file's)")
    run.set_defaults(handler=specfile.run_spec)
    # Named here: argparse would name run's sub-commands after run's whole usage line.
    rsub = run.add_subparsers(dest="protocol", required=False, parser_class=_Parser,
                              prog="clstream run")
    score = sub.add_parser("score", help="score a predictions or records file")
    ssub = score.add_subparsers(dest="protocol", required=True, parser_class=_Parser)
    loaded = protocols(argv)
    for protocol in loaded:
        for generator in protocol.generators:
            _add(gsub, generator)
        _add(rsub, protocol.run_command)
        _add(ssub, protocol.score_command)
    _add(rsub, Command("matrix", "every system on every protocol's small default data, into "
                                 "one results directory (docs/design.md §11.5)",
                       "clstream.commands.matrix:add_matrix_arguments",
                       "clstream.commands.matrix:run_matrix"))
    results.add_parsers(sub)
    merge.add_parser(sub)
    runs.add_parser(sub)
    listing.add_parser(sub)
    check.add_parser(sub)
    plan.add_parser(sub, loaded)
    view.add_parser(sub)
    return parser


# OSErrors that say what is wrong with the machine or a path, not with clstream.
_ENVIRONMENT_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES,
                                 errno.EPERM, errno.EISDIR, errno.ENOTDIR})


def _escape_unprintable_text() -> None:
    """Print text no encoding can hold (a lone surrogate from a file or a model) as its
    ``\\ud800`` escape instead of failing on it (docs/design.md §7)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")


def _one_line(message: str) -> str:
    """An error as one line, also when it quotes a name that holds a line break."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    _escape_unprintable_text()
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "protocol", None) is not None and getattr(args, "spec", None) is not None:
        parser.error("run: give a protocol with its flags, or --spec FILE, not both")
    try:
        with replacing(bool(getattr(args, "force", False))):
            return int(args.handler(args) or 0)
    except ClstreamError as exc:
        print(f"clstream: error: {_one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # e.g. `clstream summary DIR --json | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        if not isinstance(exc, FileNotFoundError) and exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        from clstream.core.files import os_error_cause

        cause = "no such file" if isinstance(exc, FileNotFoundError) else os_error_cause(exc)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"clstream: error: {_one_line(where + cause)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM during a run: exit 128 + signal
        stop = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
        print("clstream: interrupted; " + (f"resume with: {stop.resume}" if stop.resume
                                           else "rerun the same command to resume"),
              file=sys.stderr)
        return 128 + stop.signum


if __name__ == "__main__":
    sys.exit(main())
