"""Declared parameters of a component (system, model backend, judge, protocol).

A component class says what it accepts as ``params: ClassVar[dict[str, Param]]`` and what it is
as ``summary: ClassVar[str]`` (one line). From that one declaration come argument checking,
the defaults filled into a spec before it is hashed (so ``rag`` and ``rag:k=8`` are one run),
and what ``clstream list`` prints.

Values are the scalars a command line can write: bool, int, float, str. A parameter that is
unset unless given (the backend then decides, e.g. ``max_model_len``) has the default ``None``
and names its type: ``Param(None, "...", minimum=1, value_type=int)``. A declaration that
contradicts itself (a default outside its own choices or below its own minimum, a type no
command line can write) fails when the class is defined, not when a user first trips on it.

Every number given is bounded and finite: a float is never ``inf`` or ``nan`` (they would be
recorded in the run spec and reach the system), an int lies within a signed 64-bit integer,
and ``minimum``/``maximum`` bound it further where the parameter declares them.

A parameter added to a component that already has recorded runs is declared with
``recorded_at_default=False``: at its default it is left out of the spec, so the specs, and
run ids, of those runs stay what they were; set to anything else it is recorded as usual.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clstream.core.errors import SpecError

SCALARS: tuple[type, ...] = (bool, int, float, str)
INT_LIMIT = 2**63 - 1
"""The largest magnitude of an int argument: what every store and backend can hold."""


@dataclass(frozen=True)
class Param:
    """One argument: its default (whose type is the type required), a one-line help, and
    optionally bounds (numbers: ``minimum``, ``maximum``) or the allowed values (strings).
    ``value_type`` is needed only when the default is ``None``."""

    default: Any
    help: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] | None = None
    value_type: type | None = None
    recorded_at_default: bool = True

    def __post_init__(self) -> None:
        want = self.type
        if want not in SCALARS:
            raise TypeError(
                f"Param({self.default!r}): type must be one of bool, int, float, str "
                "(a None default needs value_type=...)"
            )
        if self.value_type is not None and self.default is not None \
                and type(self.default) is not self.value_type:
            raise TypeError(f"Param({self.default!r}): default is not a {self.value_type.__name__}")
        bounded = self.minimum is not None or self.maximum is not None
        if bounded and want not in (int, float):
            raise TypeError(f"Param({self.default!r}): minimum and maximum apply to numbers only")
        if self.minimum is not None and self.default is not None and self.default < self.minimum:
            raise ValueError(f"Param({self.default!r}): default below its minimum {self.minimum}")
        if self.maximum is not None and self.default is not None and self.default > self.maximum:
            raise ValueError(f"Param({self.default!r}): default above its maximum {self.maximum}")
        if self.choices is not None and self.default is not None \
                and self.default not in self.choices:
            raise ValueError(f"Param({self.default!r}): default not among {self.choices}")

    @property
    def type(self) -> type:
        """The type a value must have."""
        return self.value_type if self.value_type is not None else type(self.default)

    @property
    def type_name(self) -> str:
        return self.type.__name__


_KIND_WORDS: dict[type, str] = {int: "an integer", float: "a number", bool: "true or false"}


def _type_ok(value: Any, want: type) -> bool:
    if isinstance(value, bool) != (want is bool):
        return False
    if want is float:
        return isinstance(value, int | float)
    return isinstance(value, want)


def check_args(owner: str, params: Mapping[str, Param], args: Mapping[str, Any]) -> dict[str, Any]:
    """The complete, validated arguments: every declared parameter, defaults filled in (but
    for a parameter not ``recorded_at_default`` left at its default).

    ``owner`` names the component in errors (``system 'rag'``). Unknown names, wrong types,
    numbers that are not finite (``nan``, ``inf``) or beyond a 64-bit integer, values below
    ``minimum`` or above ``maximum`` and values outside ``choices`` are a :class:`SpecError`.
    """
    out = {name: p.default for name, p in params.items() if p.recorded_at_default}
    for key, value in args.items():
        if key not in params:
            known = ", ".join(sorted(params)) or "none"
            raise SpecError(f"{owner}: unknown argument {key!r} (known: {known})")
        p = params[key]
        want = p.type
        if value is None and p.default is None:  # explicitly unset, as by default
            continue
        if not _type_ok(value, want):
            kind = _KIND_WORDS.get(want, "a string")
            raise SpecError(f"{owner}: argument {key!r} must be {kind}, got {value!r}")
        if want in (int, float):
            _check_number(owner, key, p, value)
        if p.choices is not None and value not in p.choices:
            raise SpecError(
                f"{owner}: argument {key!r} must be one of {', '.join(p.choices)}, got {value!r}"
            )
        value = float(value) if want is float else value
        if not p.recorded_at_default and type(value) is type(p.default) and value == p.default:
            continue  # a later parameter at its default: the spec stays as it was before it
        out[key] = value
    return dict(sorted(out.items()))


def _check_number(owner: str, key: str, p: Param, value: int | float) -> None:
    """A number within its declared bounds, finite, and within a 64-bit integer."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{owner}: argument {key!r} must be a finite number, got {value}")
    if abs(value) > INT_LIMIT:
        shown = str(value) if abs(value) < 10**24 else f"a number of {int(value).bit_length()} bits"
        raise SpecError(f"{owner}: argument {key!r} must be at most {INT_LIMIT:,} in "
                        f"magnitude, got {shown}")
    if p.minimum is not None and value < p.minimum:
        raise SpecError(f"{owner}: argument {key!r} must be >= {p.minimum}, got {value}")
    if p.maximum is not None and value > p.maximum:
        raise SpecError(f"{owner}: argument {key!r} must be <= {p.maximum}, got {value}")
