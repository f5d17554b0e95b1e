"""Reading OAKS predictions JSONL (SPECS §5): valid files and every kind of defect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.core.errors import DataError
from clstream.protocols.oaks.data import OaksDataset, OaksDocument, OaksQuestion
from clstream.protocols.oaks.metrics import load_predictions


def dataset() -> OaksDataset:
    q = OaksQuestion("b1_q0", "Where?", (("a",), ("b",)), "tracking")
    return OaksDataset("data.json", "0" * 64, (OaksDocument("b1", ("x", "y"), (q,)),))


def write(tmp_path: Path, lines: list[str], name: str = "preds.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rec(qid: object = "b1_q0", t: object = 1, output: object = "## Answer: a") -> str:
    return json.dumps({"question_id": qid, "t": t, "output": output})


def test_reads_valid_file(tmp_path: Path) -> None:
    line2 = json.dumps({"output": "x\u2028y", "t": 2, "question_id": "b1_q0"},
                       ensure_ascii=False)  # a raw line separator inside a string is fine
    path = write(tmp_path, [rec(), "", "   ", line2])
    assert load_predictions(path, dataset()) == {("b1_q0", 1): "## Answer: a",
                                                 ("b1_q0", 2): "x\u2028y"}
    assert load_predictions(str(path)) == load_predictions(path, dataset())


def test_reads_file_with_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + rec().encode() + b"\r\n" + rec(t=2).encode() + b"\r\n")
    assert set(load_predictions(path)) == {("b1_q0", 1), ("b1_q0", 2)}


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ("{not json", None, "invalid JSON"),
        ("[1, 2]", None, "JSON object"),
        (json.dumps({"t": 1, "output": "x"}), "question_id", "missing key"),
        (json.dumps({"question_id": "b1_q0", "output": "x"}), "t", "missing key"),
        (json.dumps({"question_id": "b1_q0", "t": 1}), "output", "missing key"),
        (json.dumps({"question_id": "b1_q0", "t": 1, "output": "x", "score": 1}), "score",
         "unexpected key"),
        (rec(qid=3), "question_id", "non-empty string"),
        (rec(qid=""), "question_id", "non-empty string"),
        (rec(t="1"), "t", "integer"),
        (rec(t=1.0), "t", "integer"),
        (rec(t=True), "t", "integer"),
        (rec(t=0), "t", "integer"),
        (rec(output=None), "output", "string"),
        (rec(qid="zz_q9"), "question_id", "unknown question"),
        (rec(t=3), "t", "beyond the document"),
    ],
)
def test_bad_line_names_file_line_and_field(
    tmp_path: Path, line: str, field: str | None, problem: str
) -> None:
    path = write(tmp_path, [rec(), line])
    with pytest.raises(DataError) as info:
        load_predictions(path, dataset())
    err = info.value
    assert err.path == str(path) and err.record == "line 2" and err.field == field
    assert problem in err.problem
    assert "\n" not in str(err) and "preds.jsonl" in str(err) and "line 2" in str(err)


def test_unknown_ids_pass_without_a_dataset(tmp_path: Path) -> None:
    path = write(tmp_path, [rec(qid="zz_q9", t=7)])
    assert load_predictions(path) == {("zz_q9", 7): "## Answer: a"}


def test_duplicate_pair(tmp_path: Path) -> None:
    path = write(tmp_path, [rec(), rec(t=2), rec(output="other")])
    with pytest.raises(DataError, match=r"line 3.*duplicate.*b1_q0 t 1.*first on line 1"):
        load_predictions(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(rec().encode() + b"\n" + b'{"output": "\xff"}\n')
    with pytest.raises(DataError, match="line 2.*UTF-8"):
        load_predictions(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="nothere.jsonl.*cannot read"):
        load_predictions(tmp_path / "nothere.jsonl")


def test_checked_all_at_once_or_line_by_line_the_predictions_are_the_same(
        tmp_path: Path) -> None:
    # Flat objects on every line are checked in bulk; a blank line sends the same lines
    # through the line-by-line reading.
    lines = [rec(t=2, output="## Answer: b"), rec(), json.dumps(
        {"t": 1, "output": "", "question_id": "b1_q1"})]
    q1 = OaksQuestion("b1_q1", "When?", (("a",), ("b",)), "tracking")
    data = OaksDataset("data.json", "0" * 64, (OaksDocument(
        "b1", ("x", "y"), (dataset().documents[0].questions[0], q1)),))
    bulk = load_predictions(write(tmp_path, lines, "bulk.jsonl"), data)
    one_by_one = load_predictions(write(tmp_path, [*lines, ""], "lines.jsonl"), data)
    assert bulk == one_by_one == {("b1_q0", 2): "## Answer: b", ("b1_q0", 1): "## Answer: a",
                                  ("b1_q1", 1): ""}
    assert list(bulk) == list(one_by_one)  # in file order


@pytest.mark.parametrize("line, field", [
    (rec(t=3), "t"), (rec(qid="nope"), "question_id"), (rec(t=True), "t"),
    (rec(output=5), "output"), ('{"question_id": "b1_q0", "t": 1, "out": "x"}', "out"),
])
def test_a_bad_line_among_flat_ones_is_named(tmp_path: Path, line: str, field: str) -> None:
    path = write(tmp_path, [rec(t=2), line])
    with pytest.raises(DataError, match=rf"line 2.*{field}"):
        load_predictions(path, dataset())
