"""``clstream list [systems|models|protocols|judges] [--json]``: what can be named in a spec.

One block per kind: each registered name with its one-line summary and its parameters (type,
default, lower bound or allowed values, help), read from the class declarations through
:func:`clstream.core.registry.describe` without instantiating anything. An entry whose module
cannot be imported (an optional extra that is not installed) is listed with a note naming the
extra instead of failing the command.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from clstream.core.params import Param
from clstream.core.registry import Description, describe, names

# Command-line word -> registry kind, in the order the blocks are printed.
KINDS: dict[str, str] = {
    "systems": "system", "models": "model", "protocols": "protocol", "judges": "judge",
    "policies": "policy",
}


def add_parser(subparsers: Any) -> None:
    """Add ``list`` to the top-level sub-commands."""
    p = subparsers.add_parser(
        "list", help="registered systems, models, protocols, judges and builtin policies with "
        "their parameters"
    )
    p.add_argument("what", nargs="?", choices=list(KINDS), default=None,
                   help="one kind only (default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=handler)


def descriptions(what: str | None = None) -> dict[str, list[Description]]:
    """The descriptions of every entry of the kinds asked for, keyed by the plural word."""
    words = [what] if what is not None else list(KINDS)
    return {word: [describe(KINDS[word], name) for name in names(KINDS[word])]
            for word in words}


def show_value(value: Any) -> str:
    """A value as it is written on the command line (``true``, ``8``, ``auto``)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if value != "" else "''"


def _bounds(p: Param) -> str:
    if p.choices is not None:
        return "|".join(p.choices)
    bounds = [f"{sign} {show_value(limit)}" for sign, limit in
              ((">=", p.minimum), ("<=", p.maximum)) if limit is not None]
    return ", ".join(bounds)


def _param_lines(params: Mapping[str, Param]) -> list[str]:
    rows = [(name, p.type_name, show_value(p.default), _bounds(p), p.help)
            for name, p in sorted(params.items())]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return ["      " + "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True))
            + "  " + row[4] for row in rows]


def render_text(blocks: Mapping[str, list[Description]]) -> str:
    """The human-readable listing: one block per kind, one entry per name."""
    out: list[str] = []
    for word, items in blocks.items():
        if out:
            out.append("")
        out.append(word)
        width = max((len(d.entry.name) for d in items), default=0)
        for d in items:
            head = f"  {d.entry.name.ljust(width)}  {d.summary}".rstrip()
            out.append(head)
            if d.note is not None:
                out.append(f"      (not available: {d.note})")
            elif d.params is None and d.entry.kind == "protocol":
                out.append(f"      (options: clstream run {d.entry.name} --help)")
            elif d.params is None:
                out.append("      (parameters not declared)")
            elif not d.params:
                out.append("      (no parameters)")
            else:
                out.extend(_param_lines(d.params))
    return "\n".join(out)


def handler(args: argparse.Namespace) -> int:
    blocks = descriptions(args.what)
    if args.json:
        print(json.dumps({word: [d.to_json() for d in items] for word, items in blocks.items()},
                         indent=2))
    else:
        print(render_text(blocks))
    return 0
