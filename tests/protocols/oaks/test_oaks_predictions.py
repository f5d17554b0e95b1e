"""Reading OAKS predictions JSONL (SPECS §5): valid files and every kind of defect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.protocols.oaks import metrics
from clstream.protocols.oaks.data import OaksDataset, OaksDocument, OaksQuestion
from clstream.protocols.oaks.metrics import (
    PredictionCells,
    judge_dataset,
    load_prediction_cells,
    load_predictions,
    score_oaks_with_rows,
)


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
@pytest.mark.parametrize("read", [load_predictions, load_prediction_cells])
def test_bad_line_names_file_line_and_field(
    tmp_path: Path, line: str, field: str | None, problem: str, read: Any
) -> None:
    # ``score oaks`` reads into cells (load_prediction_cells): the same errors, word for word.
    path = write(tmp_path, [rec(), line])
    with pytest.raises(DataError) as info:
        read(path, dataset())
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
    with pytest.raises(DataError, match=r"line 3.*duplicate.*b1_q0 t 1.*first on line 1"):
        load_prediction_cells(path, dataset())


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
@pytest.mark.parametrize("read", [load_predictions, load_prediction_cells])
def test_a_bad_line_among_flat_ones_is_named(tmp_path: Path, line: str, field: str,
                                             read: Any) -> None:
    path = write(tmp_path, [rec(t=2), line])
    with pytest.raises(DataError, match=rf"line 2.*{field}"):
        read(path, dataset())


def two_documents() -> OaksDataset:
    counting = OaksQuestion("b1_q1", "How many?", (("0",), ("2",), ("2",)), "counting")
    choice = OaksQuestion("b2_q0", "Which?", (("hall",), ("yard",)), None, ("hall", "yard"))
    return OaksDataset("data.json", "0" * 64, (
        OaksDocument("b1", ("x", "y", "z"), (
            OaksQuestion("b1_q0", "Where?", (("a",), ("b",), ("b", "c")), "tracking"),
            counting)),
        OaksDocument("b2", ("x", "y"), (choice,))))


@pytest.mark.parametrize("blank_line", [False, True])
def test_cells_judge_as_the_mapping_does(tmp_path: Path, blank_line: bool) -> None:
    # In cells or keyed by (question, t), in bulk or line by line (a blank line), with a
    # prediction missing: the same judged questions, metrics and rows.
    data = two_documents()
    lines = [rec("b2_q0", 2, "## Answer: B"), rec("b1_q1", 3, "Answer: two"),
             rec("b1_q0", 1, "## Answer: the a"), rec("b1_q1", 1, "Answer: unknown"),
             rec("b1_q0", 3, "Answer: c"), rec("b2_q0", 1, "Answer: (a)"), rec("b1_q1", 2, "2 times")]
    path = write(tmp_path, [*lines, ""] if blank_line else lines)
    cells = load_prediction_cells(path, data)
    mapping = load_predictions(path, data)
    assert isinstance(cells, PredictionCells)
    assert judge_dataset(data, cells, True) == judge_dataset(data, mapping, True)
    judged, missing = judge_dataset(data, cells, True)
    assert missing == 1 and [j.correct for j in judged] == [b"\x01\x00\x01", b"\x01\x01\x01",
                                                            b"\x01\x01"]
    assert score_oaks_with_rows(data, cells, True) == score_oaks_with_rows(data, mapping, True)
    with pytest.raises(DataError, match="question b1_q0 t 2.*missing prediction"):
        judge_dataset(data, cells)
    with pytest.raises(ValueError, match="another dataset"):
        judge_dataset(two_documents(), cells, True)


def test_cells_read_in_batches_name_a_line_of_any_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Parsed two lines at a time: a duplicate of a line in an earlier batch, or a bad line
    # in a later one, is named as when the file is read whole.
    monkeypatch.setattr(metrics, "PREDICTION_BATCH", 2)
    data = two_documents()
    lines = [rec("b1_q0", 1), rec("b1_q0", 2), rec("b1_q0", 3), rec("b1_q1", 1),
             rec("b1_q1", 2)]
    path = write(tmp_path, lines)
    assert judge_dataset(data, load_prediction_cells(path, data), True) == \
        judge_dataset(data, load_predictions(path, data), True)
    with pytest.raises(DataError, match=r"line 6.*duplicate.*b1_q0 t 2.*first on line 2"):
        load_prediction_cells(write(tmp_path, [*lines, rec("b1_q0", 2)]), data)
    with pytest.raises(DataError, match=r"line 6.*t.*beyond the document's 2 chunks"):
        load_prediction_cells(write(tmp_path, [*lines, rec("b2_q0", 3)]), data)
