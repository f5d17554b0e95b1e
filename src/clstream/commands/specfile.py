"""Run spec files: ``clstream run --spec FILE`` and ``clstream runs DIR --spec``
(docs/design.md §11.2).

A spec file (TOML) names runs the way the command line does, so a run it names gets the same
run id as the same run given as flags: each ``[[run]]`` entry is turned into the arguments of
``clstream run PROTOCOL`` and read by that protocol's own parser, then planned by the
protocol's own planner (its ``run_command.plan``); every entry's runs go through one driver
into one results directory::

    out = "results"            # the results directory (--out overrides it)
    seeds = [0, 1]             # optional: every entry once per seed

    [defaults]                 # settings every entry takes unless it gives its own
    model = "builtin"
    temperature = 0.7

    [[run]]
    protocol = "oaks"
    data = "oaks.json"         # the protocol's positional argument, by its name
    systems = ["full", "rag:k=4"]
    docs_in_flight = 2         # any flag of `clstream run oaks`, by its name (- or _)

A relative path that names a file or directory beside the spec file is taken from there, else
from the working directory; an entry's data that is in neither says so, naming both. A
malformed file is one line naming the file, the entry and the field (exit 2) before anything
runs; so is a file beyond the bounds below (values nested deeper than
:data:`MAX_SPEC_DEPTH`, more than :data:`MAX_SPEC_RUNS` entries or runs). An entry's own
``seeds = "0,1"`` (the flag ``--seeds``) runs every seed it names, as the flag does. Entries that
name the same run (the same flags, after defaults and seeds) are run once.

``clstream runs DIR --spec`` prints a spec file that reruns every run of a results directory:
each run records its flags (:func:`clstream.driver.assemble.run_flags`), and runs that differ
only in their system become one entry.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from clstream.core.errors import DataError, SpecError
from clstream.core.protocol import StreamProtocol
from clstream.core.registry import names, resolve

if TYPE_CHECKING:
    from clstream.store.db import ResultsStore

_TOP = frozenset({"out", "seeds", "defaults", "run"})
MAX_SPEC_DEPTH = 32
"""Deepest nesting of tables and arrays a spec file may have (it needs three)."""
MAX_SPEC_RUNS = 10_000
"""Most ``[[run]]`` entries, and most runs after seeds, that one spec file may name."""
MAX_SPEC_SEEDS = 1_000
"""Most seeds in the ``seeds`` list."""


class _Refused(Exception):
    """argparse's complaint about one argument, caught instead of exiting."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


def _protocol_parser(protocol: StreamProtocol) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"clstream run {protocol.name}", add_help=False)
    protocol.run_command.add_to(parser)
    return parser


def _field_of(message: str, parser: argparse.ArgumentParser) -> str | None:
    """The setting an argparse message is about (``argument --samples: ...`` -> samples)."""
    head = message.partition(":")[0].removeprefix("argument ")
    for action in parser._actions:
        if head in action.option_strings or head == action.dest or head == action.metavar:
            return action.dest
    return None


def _exists(path: Path) -> bool:
    """Whether ``path`` names something; a value no path can be (a name too long for the file
    system, say) names nothing rather than failing."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _absolute(value: Any, base: Path) -> Any:
    if isinstance(value, str) and value and not Path(value).is_absolute() \
            and _exists(base / value):
        return str(base / value)
    return value


def _check_inputs(args: argparse.Namespace, parser: argparse.ArgumentParser, path: Path,
                  where: str, base: Path) -> None:
    """Each positional argument (the data an entry reads) is there; a relative one that is not
    says where it was looked for, as the rule of :func:`_absolute` goes."""
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if action.option_strings or not isinstance(value, str) or _exists(Path(value)):
            continue
        looked = (f" (resolved against {base}, the spec file's directory, and then the working "
                  f"directory {Path.cwd()})" if not Path(value).is_absolute() else "")
        raise DataError(path, where, action.dest, f"no such file or directory: {value}{looked}")


def _words(entry: dict[str, Any], parser: argparse.ArgumentParser, path: Path, where: str,
           base: Path) -> list[str]:
    """The ``run PROTOCOL`` arguments an entry stands for (its keys checked one by one)."""
    actions = {a.dest: a for a in parser._actions if a.dest != "help"}
    positional: list[str] = []
    flags: list[str] = []
    for key, value in entry.items():
        dest = key.replace("-", "_")
        if dest == "systems":
            dest = "system"
        action = actions.get(dest)
        if action is None:
            known = ", ".join(sorted({d for d in actions if d != "system"} | {"systems"}))
            raise DataError(path, where, key, f"not a setting of this protocol's run "
                                              f"(settings: {known})")
        if isinstance(value, dict):
            raise DataError(path, where, key, "expected a value or a list, got a table")
        if isinstance(value, float) and not math.isfinite(value):
            raise DataError(path, where, key, f"not a finite number: {value}")
        if any(isinstance(v, str) and "\x00" in v for v in
               (value if isinstance(value, list) else [value])):
            raise DataError(path, where, key, "holds a NUL character, which no path, name or "
                                              "flag can")
        if not action.option_strings:
            if isinstance(value, (list, bool)):
                raise DataError(path, where, key, "expected one value")
            positional.append(str(_absolute(value, base)))
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # a switch
            if not isinstance(value, bool):
                raise DataError(path, where, key, f"expected true or false, got {value!r}")
            flags += [flag] if value else []
            continue
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and not isinstance(action, argparse._AppendAction):
            raise DataError(path, where, key, "expected one value, got a list")
        for item in values:
            if isinstance(item, (dict, list)):
                raise DataError(path, where, key, "expected a value")
            text = json.dumps(item) if isinstance(item, bool) else str(item)
            flags += [flag, str(_absolute(text, base)) if dest not in ("system", "model")
                      else text]
    return positional + flags


def _protocol(entry: dict[str, Any], path: Path, where: str) -> StreamProtocol:
    name = entry.get("protocol")
    known = names("protocol")
    if not isinstance(name, str) or name not in known:
        raise DataError(path, where, "protocol", f"expected one of {', '.join(known)}, "
                                                 f"got {name!r}")
    protocol: StreamProtocol = resolve("protocol", name)
    if getattr(protocol.run_command, "plan", None) is None:
        raise DataError(path, where, "protocol", f"{name} runs cannot be planned from a "
                                                 "spec file")
    return protocol


def _depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value``, counted up to past the bound only."""
    deepest, level = 0, [(value, 1)]
    while level:
        item, depth = level.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_SPEC_DEPTH:
                break
            children = item.values() if isinstance(item, dict) else item
            level.extend((child, depth + 1) for child in children)
    return deepest


def _read_toml(path: Path) -> dict[str, Any]:
    """The parsed spec file, or one line on why it is not one: not UTF-8, not TOML, an integer
    of thousands of digits, values nested too deeply."""
    import tomllib

    from clstream.core.jsonio import read_file_bytes

    raw = read_file_bytes(path)  # a device (/dev/zero) is refused, not read without end
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DataError(path, None, None, f"not a TOML spec file: {exc}") from None
    except UnicodeDecodeError:
        raise DataError(path, None, None, "not a TOML spec file (not UTF-8 text)") from None
    except ValueError:  # an integer longer than Python converts
        raise DataError(path, None, None, "not a TOML spec file: an integer of more than "
                                          f"{sys.get_int_max_str_digits():,} digits") from None
    except RecursionError:
        raise DataError(path, None, None, f"not a TOML spec file: values nested deeper than "
                                          f"{MAX_SPEC_DEPTH} levels") from None
    if _depth(doc) > MAX_SPEC_DEPTH:
        raise DataError(path, None, None, f"values nested deeper than {MAX_SPEC_DEPTH} levels")
    return doc


def _check_entry(args: argparse.Namespace, path: Path, where: str) -> int:
    """The systems, seeds and sampling values of an entry, checked as its run will check them
    (names, arguments, bounds), so that an error names the spec file and the entry; the
    number of runs per system the entry names (its own seeds, else one)."""
    from clstream.arguments.requests import sampling_flags, seed_list
    from clstream.core.registry import canonical_component
    from clstream.core.specs import ComponentSpec
    from clstream.driver.request import sampling_params

    for system in args.system:
        try:
            canonical_component("system", ComponentSpec.parse(system, "system"))
        except SpecError as exc:
            raise DataError(path, where, "systems", str(exc)) from None
    try:  # an entry's own seeds (seeds = "0,1"): every one is run, none with seed as well
        seeds = seed_list(args)
    except SpecError as exc:
        both = getattr(args, "seed_typed", False)  # the file's seeds, or the entry's seed
        raise DataError(path, where, "seeds", f"{exc}" + (
            " (the file's top-level seeds, or the entry's seed, set one seed)" if both
            else "")) from None
    if hasattr(args, "temperature"):
        try:
            sampling_params(sampling_flags(args), args.seed)
        except SpecError as exc:
            raise DataError(path, where, None, str(exc)) from None
    return 1 if seeds is None else len(seeds)


def load_spec(path: str | Path, out: str | None = None) -> list[tuple[StreamProtocol,
                                                                       argparse.Namespace]]:
    """Each run entry of a spec file (once per seed) as its protocol and parsed flags; an
    entry that repeats an earlier one's run (the same protocol and flags) is left out."""
    from clstream.driver.flags import SEED_MAX

    path = Path(path)
    doc = _read_toml(path)
    for key in doc:
        if key not in _TOP:
            raise DataError(path, None, key, f"not a spec setting (settings: "
                                             f"{', '.join(sorted(_TOP))})")
    base = path.resolve().parent
    target = out if out is not None else doc.get("out")
    if not isinstance(target, str) or not target:
        raise DataError(path, None, "out", "give the results directory (out = \"DIR\", or "
                                           "--out DIR)")
    if "\x00" in target:
        raise DataError(path, None, "out", "holds a NUL character, which no path can")
    if out is None:
        target = str(base / target)
    seeds = doc.get("seeds", [None])
    if not isinstance(seeds, list) or not seeds or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool)) for s in seeds):
        raise DataError(path, None, "seeds", "expected a list of integers, e.g. [0, 1, 2]")
    if any(s is not None and not 0 <= s <= SEED_MAX for s in seeds):
        raise DataError(path, None, "seeds", f"every seed must be in [0, {SEED_MAX:,}]")
    seeds = list(dict.fromkeys(seeds))
    if len(seeds) > MAX_SPEC_SEEDS:
        raise DataError(path, None, "seeds", f"{len(seeds):,} seeds; at most "
                                             f"{MAX_SPEC_SEEDS:,}")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise DataError(path, None, "defaults", "expected a table of settings")
    entries = doc.get("run")
    if not isinstance(entries, list) or not entries:
        raise DataError(path, None, "run", "expected one or more [[run]] entries")
    if len(entries) > MAX_SPEC_RUNS:
        raise DataError(path, None, "run", f"{len(entries):,} entries; at most "
                                           f"{MAX_SPEC_RUNS:,} (split the file)")
    planned = []
    seen: set[tuple[str, ...]] = set()
    runs = 0  # entries times seeds, an entry's own seeds included
    parsers: dict[str, argparse.ArgumentParser] = {}
    for number, entry in enumerate(entries, start=1):
        where = f"run {number}"
        if not isinstance(entry, dict):
            raise DataError(path, where, None, "expected a table of settings")
        protocol = _protocol(entry, path, where)
        where = f"run {number} ({protocol.name})"
        settings = {k: v for k, v in {**defaults, **entry}.items() if k != "protocol"}
        if "systems" not in settings and "system" not in settings:
            raise DataError(path, where, "systems", "give the systems to run, e.g. "
                                                    "systems = [\"full\"]")
        if "out" in settings:
            raise DataError(path, where, "out", "one results directory per spec file: set "
                                                "out at the top")
        if protocol.name not in parsers:
            parsers[protocol.name] = _protocol_parser(protocol)
        parser = parsers[protocol.name]
        for seed in seeds:
            words = _words(settings if seed is None else {**settings, "seed": seed},
                           parser, path, where, base) + ["--out", target]
            if (protocol.name, *words) in seen:
                continue
            seen.add((protocol.name, *words))
            if len(seen) > MAX_SPEC_RUNS:
                raise DataError(path, where, None, f"more than {MAX_SPEC_RUNS:,} runs (entries "
                                                   "times seeds); split the file")
            try:
                args = parser.parse_args(words)
            except _Refused as exc:
                field = _field_of(str(exc), parser)
                message = str(exc).partition(": ")[2] if field else str(exc)
                raise DataError(path, where, field, message) from None
            runs += _check_entry(args, path, where)
            if runs > MAX_SPEC_RUNS:
                raise DataError(path, where, None, f"more than {MAX_SPEC_RUNS:,} runs (entries "
                                                   "times seeds); split the file")
            _check_inputs(args, parser, path, where, base)
            planned.append((protocol, args))
    return planned


def run_spec(args: argparse.Namespace) -> int:
    """``clstream run --spec FILE [--out DIR]``: every run the file names, through one driver."""
    from clstream.arguments.requests import command_requests
    from clstream.driver.execute import drive

    if args.spec is None:
        raise SpecError(f"run: give a protocol ({', '.join(names('protocol'))}) or --spec FILE")

    from clstream.driver.plan import first_of_each_run

    # Entries spelt differently may still name one run: each is run once, by the first entry.
    jobs = first_of_each_run([
        protocol.run_command.planned(request)
        for protocol, run_args in load_spec(args.spec, args.out)
        for request in command_requests(run_args, protocol.name, protocol.run_command)])
    resume = ["clstream", "run", "--spec", str(args.spec)]
    if args.out is not None:
        resume += ["--out", str(args.out)]
    return drive(jobs, resume=shlex.join(resume))


# -- writing a spec file from a results directory ---------------------------------------------


_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n",
                 "\f": "\\f", "\r": "\\r"}


def _toml_char(char: str) -> str:
    if char in _TOML_ESCAPES:
        return _TOML_ESCAPES[char]
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate: no TOML string holds one; kept as text
        return f"\\\\u{code:04x}"
    if code < 0x20 or code == 0x7F:
        return f"\\u{code:04X}"
    return char


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (TOML 1.0 §String): quotes, backslashes and control
    characters escaped, so a directory or file name holding a newline or a quote reads back
    as itself; a lone surrogate (from a name that is not UTF-8) is written as its ``\\udcxx``
    escape text, as clstream keeps such characters everywhere (docs/design.md §7)."""
    return '"' + "".join(map(_toml_char, text)) + '"'


def _toml_key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else toml_string(key)


def _comment(text: str) -> str:
    """Text for a ``#`` comment: one line, whatever the text holds."""
    return toml_string(text)[1:-1]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return toml_string(str(value))


def spec_text(store: ResultsStore, out: str) -> str:
    """A spec file that reruns every run of ``store`` (runs recorded before run flags were
    kept are named in a comment instead)."""
    entries: dict[str, dict[str, Any]] = {}
    skipped = []
    for run in store.runs():
        flags = run.info.get("run_flags")
        if not isinstance(flags, dict):
            skipped.append(run)
            continue
        key = json.dumps([run.protocol, flags], sort_keys=True)
        entry = entries.setdefault(key, {"protocol": run.protocol, "systems": [], **flags})
        entry["systems"].append(run.system)
    lines = [f"# Reruns (resumes) the runs of {_comment(out)}: clstream run --spec THIS_FILE",
             f"out = {_toml_value(out)}"]
    for run in skipped:
        lines.append(_comment(f"# not included (recorded without its flags): {run.protocol} "
                              f"{run.system} ({run.run_id})"))
    for entry in entries.values():
        lines += ["", "[[run]]"]
        lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in entry.items()
                  if value is not None]
    return "\n".join(lines) + "\n"
