"""Declared parameters of a component (system, model backend, judge, protocol).

A component class says what it accepts as ``params: ClassVar[dict[str, Param]]`` and what it is
as ``summary: ClassVar[str]`` (one line). From that one declaration come argument checking,
the defaults filled into a spec before it is hashed (so ``rag`` and ``rag:k=8`` are one run),
and what ``clstream list`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clstream.core.errors import SpecError


@dataclass(frozen=True)
class Param:
    """One argument: its default (whose type is the type required), a one-line help, and
    optionally a lower bound (numbers) or the allowed values (strings)."""

    default: Any
    help: str
    minimum: int | float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def type_name(self) -> str:
        return type(self.default).__name__


def _type_ok(value: Any, want: type) -> bool:
    if isinstance(value, bool) != (want is bool):
        return False
    if want is float:
        return isinstance(value, int | float)
    return isinstance(value, want)


def check_args(owner: str, params: Mapping[str, Param], args: Mapping[str, Any]) -> dict[str, Any]:
    """The complete, validated arguments: every declared parameter, defaults filled in.

    ``owner`` names the component in errors (``system 'rag'``). Unknown names, wrong types,
    values below ``minimum`` and values outside ``choices`` are a :class:`SpecError`.
    """
    out = {name: p.default for name, p in params.items()}
    for key, value in args.items():
        if key not in params:
            known = ", ".join(sorted(params)) or "none"
            raise SpecError(f"{owner}: unknown argument {key!r} (known: {known})")
        p = params[key]
        want = type(p.default)
        if not _type_ok(value, want):
            kind = {int: "an integer", float: "a number", bool: "true or false"}.get(want, "a string")
            raise SpecError(f"{owner}: argument {key!r} must be {kind}, got {value!r}")
        if p.minimum is not None and value < p.minimum:
            raise SpecError(f"{owner}: argument {key!r} must be >= {p.minimum}, got {value}")
        if p.choices is not None and value not in p.choices:
            raise SpecError(
                f"{owner}: argument {key!r} must be one of {', '.join(p.choices)}, got {value!r}"
            )
        out[key] = float(value) if want is float else value
    return dict(sorted(out.items()))
