"""Hostile JSON and JSON Lines files are one-line DataErrors naming the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from clstream.core.errors import DataError
from clstream.core.jsonio import MAX_DEPTH, iter_json_lines, load_json_file

HOSTILE = [
    ("deep", b"[" * 100_000 + b"]" * 100_000, "nested more than"),
    ("just-too-deep", b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested more than"),
    ("long-int", b'{"n": ' + b"9" * 5000 + b"}", "an integer with more than"),
    ("nan", b'{"x": NaN}', "NaN is not a number JSON allows"),
    ("infinity", b'[-Infinity]', "-Infinity is not a number JSON allows"),
    ("huge-float", b"[1e999]", "number 1e999 is out of range"),
    ("not-utf8", b'["\xff"]', "not UTF-8 text"),
    ("empty", b"", "the file is empty"),
    ("blank", b"  \n", "the file is empty"),
    ("syntax", b"[1,,2]", "invalid JSON at line 1 column 4"),
]


@pytest.mark.parametrize(("name", "raw", "problem"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_whole_file(tmp_path: Path, name: str, raw: bytes, problem: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_bytes(raw)
    with pytest.raises(DataError) as info:
        load_json_file(path)
    message = str(info.value)
    assert problem in message and str(path) in message and "\n" not in message


def test_positions_skip_strings(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"s": "NaN [[[ 1e999",\n "v": [1,\n  NaN]}')
    with pytest.raises(DataError, match="at line 3 column 3: NaN"):
        load_json_file(path)


def test_nesting_within_the_limit_and_a_bom_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_bytes(b"\xef\xbb\xbf" + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    assert load_json_file(path) is not None


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read: file not found"):
        load_json_file(tmp_path / "absent.json")
    with pytest.raises(DataError, match="cannot read: is a directory"):
        load_json_file(tmp_path)
    with pytest.raises(DataError, match="cannot read: is a directory"):
        list(iter_json_lines(tmp_path))


@pytest.mark.parametrize(("name", "raw", "problem"),
                         [h for h in HOSTILE if h[0] not in ("empty", "blank", "syntax")],
                         ids=[h[0] for h in HOSTILE if h[0] not in ("empty", "blank", "syntax")])
def test_hostile_line(tmp_path: Path, name: str, raw: bytes, problem: str) -> None:
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(b'{"ok": 1}\n\n' + raw + b"\n")
    with pytest.raises(DataError) as info:
        list(iter_json_lines(path))
    assert info.value.record == "line 3"
    assert problem in str(info.value) and "\n" not in str(info.value)


def test_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n\n{"b": "\xe2\x80\xa8"}\n')
    assert list(iter_json_lines(path)) == [(1, {"a": 1}), (3, {"b": "\u2028"})]
    path.write_bytes(b"")
    assert list(iter_json_lines(path)) == []
    path.write_bytes(b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')  # a BOM is only allowed first
    with pytest.raises(DataError, match="line 2"):
        list(iter_json_lines(path))


def test_json_written_for_others_holds_no_nan_or_infinity() -> None:
    import json

    from clstream.core.jsonio import dumps_finite

    value = {"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5, (2, float("nan"))],
             "c": {"d": "NaN"}}
    text = dumps_finite(value, sort_keys=True)
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5, [2, None]], "c": {"d": "NaN"}}
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" not in text


def test_jsonl_files_hold_no_nan(tmp_path: Path) -> None:
    from clstream.core.jsonio import write_jsonl

    assert write_jsonl(tmp_path / "r.jsonl", [{"x": float("nan")}, {"x": 1}]) == 2
    assert (tmp_path / "r.jsonl").read_text() == '{"x": null}\n{"x": 1}\n'


def test_a_device_is_refused_rather_than_read_without_end() -> None:
    from clstream.core.jsonio import read_file_bytes

    for device in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(DataError, match="a device, not a file"):
            read_file_bytes(device)
        with pytest.raises(DataError, match="a device, not a file"):
            list(iter_json_lines(device))


def test_a_pipe_is_read_up_to_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import threading

    from clstream.core import jsonio

    monkeypatch.setattr(jsonio, "MAX_STREAM_BYTES", 1000)
    for size, refused in ((1000, False), (1001, True)):
        read_end, write_end = os.pipe()

        def write(fd: int = write_end, n: int = size) -> None:
            os.write(fd, b"x" * n)
            os.close(fd)

        writer = threading.Thread(target=write)
        writer.start()
        path = f"/proc/self/fd/{read_end}"
        try:
            if refused:
                with pytest.raises(DataError, match="from a pipe"):
                    jsonio.read_file_bytes(path)
            else:
                assert jsonio.read_file_bytes(path) == b"x" * size
        finally:
            writer.join()
            os.close(read_end)
