"""The orjson JSON Lines reader gives what the strict reader gives: the same values for every
accepted file and the same DataError for every rejected one, line numbers included; and the
OAKS loader's fast parse matches the strict one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.core.jsonio import (
    MAX_DEPTH,
    JsonLinesFile,
    gc_paused,
    iter_json_lines,
    iter_json_lines_fast,
    plain_json,
)
from clstream.protocols.oaks.loader import load_oaks

DEEP = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
CASES = {
    "plain": b'{"a": 1}\n{"b": "x"}\n',
    "no final newline": b'{"a": 1}\n{"b": 2}',
    "blank lines": b'\n{"a": 1}\n   \n\r\n{"b": 2}\n',
    "unicode blank": '\u00a0\u2003\n{"a": 1}\n'.encode(),
    "bom on line 1": b'\xef\xbb\xbf{"a": 1}\n',
    "bom on line 2": b'{"a": 1}\n\xef\xbb\xbf{"b": 1}\n',
    "big int": b'{"t": 123456789012345678901234567890}\n',
    "big int nested": b'{"t": [1, {"u": -99999999999999999999}]}\n',
    "big float": b'{"x": 1e30, "y": [2.5]}\n',
    "lone surrogate": b'{"s": "\\ud800"}\n',
    "duplicate key": b'{"a": 1, "b": 2, "a": 3}\n',
    "scalars": b'1\n"two"\nnull\n[true, 4.5]\n',
    "nan": b'{"a": 1}\n{"a": NaN}\n',
    "infinity": b'{"a": 1e999}\n',
    "syntax": b'{"a": 1}\n{"a": }\n',
    "not utf-8": b'{"a": 1}\n{"a": "\xff"}\n',
    "too deep": b'{"a": 1}\n' + DEEP.encode() + b"\n",
    "deep but allowed": ("[" * MAX_DEPTH + "]" * MAX_DEPTH).encode() + b"\n",
    "two values": b'{"a": 1} {"b": 2}\n',
    "empty": b"",
}


def outcome(read: Any, path: Path) -> tuple[str, Any]:
    try:
        return "ok", list(read(path))
    except DataError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_reader_matches_the_strict_reader(tmp_path: Path, case: str) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(CASES[case])
    fast = outcome(iter_json_lines_fast, path)
    assert fast == outcome(iter_json_lines, path)
    rejected = ("nan", "syntax", "not utf-8", "too deep", "infinity", "two values",
                "bom on line 2")
    assert (fast[0] == "error") == (case in rejected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_line_by_line_from_the_split_file_matches_the_strict_reader(tmp_path: Path,
                                                                    case: str) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(CASES[case])
    assert outcome(lambda p: JsonLinesFile(p).one_by_one(), path) == \
        outcome(iter_json_lines, path)


def test_flat_batches_hand_out_each_batch_or_none(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "x"}\n{"c": null}\n{"d": [1]}\n{"e": 2}\n{oops\n'
                     b'{"g": true}')
    batches = list(JsonLinesFile(path).flat_batches(2))
    # A nested value or a line that is not JSON: its batch is None, the others as parsed.
    assert batches == [[{"a": 1}, {"b": "x"}], None, None, [{"g": True}]]
    assert list(JsonLinesFile(tmp_path / "lines.jsonl").flat_batches(10)) == [None]
    path.write_bytes(b"")
    assert list(JsonLinesFile(path).flat_batches(2)) == []


def test_values_keep_their_types(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(CASES["big int"])
    ((_, value),) = iter_json_lines_fast(path)
    assert value["t"] == 123456789012345678901234567890 and isinstance(value["t"], int)


def test_missing_file_is_the_same_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    assert outcome(iter_json_lines_fast, path) == outcome(iter_json_lines, path)


def test_plain_json_flags_what_orjson_reads_differently() -> None:
    assert plain_json({"a": [1, "x", None, True, {"b": 2.5}]})
    assert not plain_json({"a": [float(2**63)]})
    assert not plain_json([[float("-inf")]])
    nested: list[Any] = []
    for _ in range(MAX_DEPTH):
        nested = [nested]
    assert not plain_json(nested) and plain_json(nested[0])


def test_gc_paused_restores_the_collector() -> None:
    import gc

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize("bad", [
    b'[{"meta": {"bid": "d", "num_chunks": 1, "x": NaN}}]',
    b'[{"meta": {"bid": "d", "num_chunks": 1, "x": 1e999}}]',
    b'[{"meta": {"bid": "d", "num_chunks": 1, "x": ' + DEEP.encode() + b"}}]",
    b'[{"meta": {"bid": "d", "num_chunks": 1}, "meta": {}}]',
    b"1e999",
    b"  ",
])
def test_loader_fast_parse_keeps_the_strict_errors(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(bad)
    with pytest.raises(DataError) as caught:
        load_oaks(path)
    message = str(caught.value)
    if b"NaN" in bad:
        assert "NaN is not a number JSON allows" in message
    elif bad == b"1e999" or b"1e999" in bad:
        assert "out of range" in message
    elif b"[[[" in bad:
        assert "nested more than" in message
    elif b'"meta": {}' in bad:
        assert "duplicate key 'meta'" in message
    else:
        assert "empty" in message
