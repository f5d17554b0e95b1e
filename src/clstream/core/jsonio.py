"""Reading JSON and JSON Lines files that may be hostile, with one-line errors.

Every loader of a user's file (data, predictions, records, prices) reads through here, so a
bad file is always a :class:`~clstream.core.errors.DataError` naming the file and, where it
applies, the line, never a traceback:

* a missing file, a directory, an unreadable file: ``cannot read: file not found`` ...;
* bytes that are not UTF-8 (a leading UTF-8 byte order mark is allowed): the line and byte;
* an empty file (whole-file JSON): ``the file is empty``;
* a syntax error: the line and column and the parser's message;
* ``NaN``, ``Infinity`` and numbers too large for a float (``1e999``): JSON has no such numbers,
  and Python's parser would otherwise accept them silently;
* integers with more digits than Python converts (4,300 by default);
* nesting deeper than :data:`MAX_DEPTH` levels (the parser would otherwise fail with a
  RecursionError, or later code that walks the value would).

Positions of the last three are found by a scan that skips strings, run only on the error path.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from clstream.core.errors import DataError
from clstream.core.files import atomic_writer, os_error_cause

MAX_DEPTH = 200
"""Deepest nesting of arrays and objects accepted (clstream's formats need fewer than 10)."""

_BOM = b"\xef\xbb\xbf"
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|(?P<const>NaN|-?Infinity)'
    r"|(?P<num>-?\d+(?P<frac>(?:\.\d+)?(?:[eE][-+]?\d+)?))|(?P<open>[\[{])|(?P<close>[\]}])",
    re.S,
)
PairsHook = Callable[[list[tuple[str, Any]]], Any]


class _Rejected(ValueError):
    def __init__(self, kind: str, text: str):
        super().__init__(text)
        self.kind, self.text = kind, text


def _reject_constant(name: str) -> Any:
    raise _Rejected("const", name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected("float", text)
    return value


def _int_limit() -> int:
    return sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0


def _find(text: str, kind: str) -> int | None:
    """Offset of the first value of ``kind`` outside strings (const, int, float, depth)."""
    depth = 0
    limit = _int_limit()
    for match in _TOKEN.finditer(text):
        if match["open"]:
            depth += 1
            if kind == "depth" and depth > MAX_DEPTH:
                return match.start()
        elif match["close"]:
            depth -= 1
        elif match["const"] and kind == "const":
            return match.start()
        elif match["num"] and kind == "int" and not match["frac"]:
            if limit and len(match["num"].lstrip("-")) > limit:
                return match.start()
        elif match["num"] and kind == "float" and match["frac"]:
            if not math.isfinite(float(match["num"])):
                return match.start()
    return None


def _where(text: str, offset: int | None, whole_file: bool) -> str:
    if offset is None:
        return ""
    column = offset - text.rfind("\n", 0, offset)
    if not whole_file:
        return f" at column {column}"
    return f" at line {text.count(chr(10), 0, offset) + 1} column {column}"


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests more than MAX_DEPTH arrays/objects (an iterative walk)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse_json(
    text: str, path: object, record: str | None = None, *,
    object_pairs_hook: PairsHook | None = None,
) -> Any:
    """Parse one JSON text strictly; ``record`` (e.g. ``"line 3"``) names a JSON Lines line,
    None a whole file (positions then give the line as well as the column)."""
    whole = record is None
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                           object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if whole else f" at column {exc.colno}"
        raise DataError(path, record, None, f"invalid JSON{where}: {exc.msg}") from None
    except _Rejected as exc:
        if exc.kind == "const":
            problem = f"{exc.text} is not a number JSON allows (numbers must be finite)"
        else:
            problem = f"number {exc.text[:40]} is out of range"
        where = _where(text, _find(text, exc.kind), whole)
        raise DataError(path, record, None, f"invalid JSON{where}: {problem}") from None
    except RecursionError:
        value = None
    except ValueError as exc:  # an integer longer than int() converts, or a hook's own error
        if "integer string conversion" not in str(exc):
            raise DataError(path, record, None, f"invalid JSON: {exc}") from None
        where = _where(text, _find(text, "int"), whole)
        raise DataError(path, record, None, f"invalid JSON{where}: an integer with more than "
                                            f"{_int_limit()} digits") from None
    else:
        if not _too_deep(value):
            return value
    where = _where(text, _find(text, "depth"), whole)
    raise DataError(path, record, None,
                    f"invalid JSON{where}: nested more than {MAX_DEPTH} levels deep")


MAX_STREAM_BYTES = 1 << 30
"""Most bytes read from a pipe (``<(...)``), whose size is not known before it is read; a
regular file is read whole, its size being its own bound."""


def _refuse_device(handle: BinaryIO, source: object) -> bool:
    """A device (``/dev/zero``, ``/dev/urandom``, a terminal) is refused: it never ends, or
    waits for typing. Returns whether ``handle`` is a pipe or socket (read with a bound)."""
    mode = os.fstat(handle.fileno()).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise DataError(source, None, None, "a device, not a file")
    return not stat.S_ISREG(mode)


def read_file_bytes(path: str | Path, source: object | None = None) -> bytes:
    """The bytes of ``path``; any OSError is a DataError naming ``source`` (default: path),
    and so is a device, or a pipe that holds more than :data:`MAX_STREAM_BYTES`."""
    where = path if source is None else source
    try:
        with open(path, "rb") as handle:
            if not _refuse_device(handle, where):
                return handle.read()
            data = handle.read(MAX_STREAM_BYTES + 1)
    except OSError as exc:
        raise DataError(where, None, None,
                        f"cannot read: {os_error_cause(exc, writing=False)}") from None
    if len(data) > MAX_STREAM_BYTES:
        raise DataError(where, None, None, f"more than {MAX_STREAM_BYTES >> 20:,} MiB from a "
                                           "pipe; give a file")
    return data


def decode_utf8(
    raw: bytes, path: object, record: str | None = None, *, allow_bom: bool = True
) -> str:
    """Strict UTF-8 (a leading byte order mark is dropped unless ``allow_bom`` is False); a
    bad byte is a DataError naming its line (whole file) or its offset in the line (``record``
    given)."""
    start = 3 if allow_bom and raw.startswith(_BOM) else 0
    try:
        return raw[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + start
        if record is not None:
            raise DataError(path, record, None,
                            f"not UTF-8 text (byte {offset} of the line)") from None
        line = raw.count(b"\n", 0, offset) + 1
        raise DataError(path, f"line {line}", None,
                        f"not UTF-8 text (byte {offset} of the file)") from None


def loads_json_bytes(
    raw: bytes, path: object, *, object_pairs_hook: PairsHook | None = None
) -> Any:
    """A whole-file JSON document from its bytes (see :func:`load_json_file`)."""
    text = decode_utf8(raw, path)
    if not text.strip():
        raise DataError(path, None, None, "the file is empty")
    return parse_json(text, path, object_pairs_hook=object_pairs_hook)


def load_json_file(path: str | Path, *, object_pairs_hook: PairsHook | None = None) -> Any:
    """Read and parse a whole-file JSON document, with the checks of the module docstring."""
    return loads_json_bytes(read_file_bytes(path), path, object_pairs_hook=object_pairs_hook)


def iter_json_lines(
    path: str | Path, *, object_pairs_hook: PairsHook | None = None
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line of a JSON Lines file, read as a
    stream. Errors name the line (``record "line N"``); an empty file yields nothing."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, also when the caller stops
    except OSError as exc:
        raise DataError(path, None, None,
                        f"cannot read: {os_error_cause(exc, writing=False)}") from None
    with handle:
        _refuse_device(handle, path)
        number = 0
        while True:
            try:
                raw = handle.readline()
            except OSError as exc:
                raise DataError(path, None, None,
                                f"cannot read: {os_error_cause(exc, writing=False)}") from None
            if not raw:
                return
            number += 1
            record = f"line {number}"
            text = decode_utf8(raw, path, record, allow_bom=number == 1)
            if text.strip():
                yield number, parse_json(text, path, record, object_pairs_hook=object_pairs_hook)


# --- JSON Lines at orjson's speed ------------------------------------------------------------
# Scoring a run reads every prediction once, and ``json`` with the checking hooks above costs
# more than the scoring itself. Each line is parsed by orjson first; a line orjson rejects (bad
# syntax, NaN, a byte order mark, invalid UTF-8, a lone surrogate, an out-of-range number), a
# line that is blank after Unicode whitespace, a value nested deeper than MAX_DEPTH, and a value
# holding a float of 2**63 or more (orjson reads an integer too large for 64 bits as a float,
# where ``json`` keeps the integer) is read again through :func:`parse_json`, so every accepted
# file gives the same values and every rejected one the same one-line error as
# :func:`iter_json_lines`. Line numbers count ``\n``-terminated lines, as that reader does.

_BIG = float(2**63)
_FLAT = frozenset({str, int, bool, type(None)})


def plain_json(value: Any) -> bool:
    """Whether an object or array ``value`` is one orjson and ``json`` read alike: no float
    of 2**63 or more and no nesting deeper than MAX_DEPTH. Walked level by level, each level's
    scalars skipped in one comprehension."""
    level = [value]
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            return False
        dicts = [item for item in level if isinstance(item, dict)]
        lists = [item for item in level if not isinstance(item, dict)]
        children = chain(chain.from_iterable(map(dict.values, dicts)),
                         chain.from_iterable(lists))
        level = []
        for child in [c for c in children if type(c) not in _FLAT]:
            if isinstance(child, float):
                if abs(child) >= _BIG:
                    return False
            else:  # an object or an array: JSON has nothing else
                level.append(child)
        depth += 1
    return True


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (restored as it was after): for
    reading large files into many small acyclic objects, which it would otherwise rescan."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _strict(raw: bytes, path: str, number: int) -> tuple[bool, Any]:
    """(whether the line holds a value, the value) through the strict reader."""
    record = f"line {number}"
    text = decode_utf8(raw, path, record, allow_bom=number == 1)
    if not text.strip():
        return False, None
    return True, parse_json(text, path, record)


def iter_json_lines_fast(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line, as :func:`iter_json_lines` yields
    them (see the comment above).

    The whole file is parsed first, one orjson call per line; when every line parses and
    every value is an object of scalars (checked in one pass in C) the values are handed out
    as they are. Otherwise lines are handed out one by one, each through the checks of the
    module docstring, so an error is raised at its line, after the lines before it.
    """
    read = flat_json_lines(path)
    if isinstance(read, list):
        yield from enumerate(read, start=1)
    else:
        yield from read


def _all_flat(values: list[Any]) -> bool:
    """Whether every value is an object of scalars (orjson reads those as ``json`` does)."""
    # The set of the types met, not a test per value: one C pass that only adds to a set.
    return all(map(dict.__instancecheck__, values)) \
        and set(map(type, chain.from_iterable(map(dict.values, values)))) <= _FLAT


class JsonLinesFile:
    """A JSON Lines file read whole and split into lines, to be parsed in batches of flat
    objects (:meth:`flat_batches`) or, where that fails, line by line with the strict checks
    (:meth:`one_by_one`). Parsing a large file a batch at a time keeps only one batch of
    parsed objects alive at once: a reader that takes what it needs from each batch holds a
    fraction of the memory, and spends less time getting it from the system."""

    def __init__(self, path: str | Path):
        self.name = str(path)
        data = read_file_bytes(path, self.name)
        self.ends_in_newline = data.endswith(b"\n")
        self.lines = data.split(b"\n")
        if self.lines and not self.lines[-1]:
            self.lines.pop()

    def flat_batches(self, size: int) -> Iterator[list[dict[str, Any]] | None]:
        """The values of each ``size`` lines in turn (line ``start + i + 1`` is item ``i``
        of the batch that starts at ``start``), or None for a batch where some line is not
        JSON or not an object of scalars: the caller then reads the file :meth:`one_by_one`."""
        for start in range(0, len(self.lines), size):
            try:
                values = list(map(orjson.loads, self.lines[start:start + size]))
            except orjson.JSONDecodeError:
                yield None
                continue
            yield values if _all_flat(values) else None

    def one_by_one(self) -> Iterator[tuple[int, Any]]:
        """``(line number, value)`` for every non-blank line, each line checked on its own
        as :func:`iter_json_lines` checks it: an error names its line."""
        return _one_by_one(self.lines, self.ends_in_newline, self.name)


def flat_json_lines(path: str | Path) -> list[dict[str, Any]] | Iterator[tuple[int, Any]]:
    """The file of :func:`iter_json_lines_fast`, read at once: the list of its values where
    every line is an object of scalars that orjson reads as the strict reader does (line
    ``i + 1`` is item ``i``), so a caller can check them in bulk; else the ``(line number,
    value)`` pairs :func:`iter_json_lines_fast` yields."""
    source = JsonLinesFile(path)
    try:
        values = list(map(orjson.loads, source.lines))
    except orjson.JSONDecodeError:
        return source.one_by_one()
    if _all_flat(values):
        return values
    return _checked(values, source.lines, source.name)


def _checked(values: list[Any], lines: list[bytes], name: str) -> Iterator[tuple[int, Any]]:
    """Parsed lines not all flat objects: each read again strictly where orjson might not
    read it as the strict reader does."""
    for i, value in enumerate(values):
        if isinstance(value, dict | list) and not plain_json(value) \
                or isinstance(value, float) and abs(value) >= _BIG:
            value = _strict(lines[i] + b"\n", name, i + 1)[1]
        yield i + 1, value


def _one_by_one(lines: list[bytes], ends_in_newline: bool, name: str
                ) -> Iterator[tuple[int, Any]]:
    """The lines of a file some line of which orjson rejects, each checked on its own."""
    last = len(lines) - 1
    for i, line in enumerate(lines):
        raw = line if i == last and not ends_in_newline else line + b"\n"
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            held, value = _strict(raw, name, i + 1)
            if held:
                yield i + 1, value
            continue
        if isinstance(value, dict | list) and not plain_json(value) \
                or isinstance(value, float) and abs(value) >= _BIG:
            value = _strict(raw, name, i + 1)[1]
        yield i + 1, value


# --- JSON written for others to read -----------------------------------------------------------


def finite_json(value: Any) -> Any:
    """``value`` with every float that is not finite (a metric over nothing, a cost beyond a
    float) replaced by ``null``: strict JSON has no NaN or Infinity, and the parsers of other
    languages reject Python's spelling of them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(item) for item in value]
    return value


def dumps_finite(value: Any, **options: Any) -> str:
    """``json.dumps`` for output (``--json``, files written for others): never NaN or
    Infinity (:func:`finite_json`), and ``allow_nan=False`` keeps it so."""
    return json.dumps(finite_json(value), allow_nan=False, **options)


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write ``rows`` as JSON Lines, atomically (:func:`~clstream.core.files.atomic_writer`);
    returns how many. No NaN or Infinity is written (strict JSON has none:
    :func:`dumps_finite`)."""
    count = 0
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(dumps_finite(row) + "\n")
            count += 1
    return count
