"""A file given to the wrong command is named as what it is: each protocol's data and score
inputs are recognized, and a run or score of another protocol says which kind it got."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.core.data_kinds import sniff, wrong_kind


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    out = {"oaks-data": root / "o.json", "seqmem-stream": root / "s.json",
           "imprint-dataset": root / "imp"}
    assert main(["generate", "oaks-babi", "--docs", "1", "--chunks", "3", "--chunk-tokens",
                 "120", "--out", str(out["oaks-data"])]) == 0
    assert main(["generate", "seqmem-synthetic", "--tasks", "8", "--holdout", "2",
                 "--out", str(out["seqmem-stream"])]) == 0
    assert main(["generate", "imprint", "--setting", "persona", "--size", "small",
                 "--out", str(out["imprint-dataset"])]) == 0
    out["imprint-items"] = out["imprint-dataset"] / "items.jsonl"
    lines = {"oaks-predictions": {"question_id": "q1", "t": 1, "output": "x"},
             "seqmem-records": {"kind": "online", "tau": 1, "correct": 1},
             "clbench-records": {"kind": "instance", "task": "t", "arm": "stateful"},
             "imprint-predictions": {"item_id": "i1", "samples": ["Yes"]}}
    for kind, record in lines.items():
        out[kind] = root / f"{kind}.jsonl"
        out[kind].write_text(json.dumps(record) + "\n")
    return out


def test_every_kind_is_recognized(files: dict[str, Path], tmp_path: Path) -> None:
    for kind, path in files.items():
        assert sniff(path) == kind, path
    (tmp_path / "other.json").write_text('{"hello": 1}')
    (tmp_path / "deep.json").write_text("[" * 100000)
    assert sniff(tmp_path / "other.json") is None
    assert sniff(tmp_path / "deep.json") is None  # hostile input: no new error
    assert sniff(tmp_path / "missing.json") is None
    assert wrong_kind(files["oaks-data"], "oaks-data") is None


@pytest.mark.parametrize(("argv", "given", "says"), [
    (["run", "seqmem", "{oaks-data}", "--system", "full"], "oaks-data",
     "this is an OAKS data file (for clstream run oaks), not a SeqMem-Eval task stream"),
    (["run", "oaks", "{seqmem-stream}", "--system", "full"], "seqmem-stream",
     "this is a SeqMem-Eval task stream (for clstream run seqmem), not an OAKS data file"),
    (["run", "oaks", "{imprint-dataset}", "--system", "full"], "imprint-dataset",
     "this is an ImprintBench dataset directory"),
    (["run", "imprint", "{oaks-data}", "--system", "rag"], "oaks-data",
     "this is an OAKS data file"),
    (["score", "seqmem", "{clbench-records}"], "clbench-records",
     "this is a CL-Bench records file (for clstream score clbench)"),
    (["score", "imprint", "{imprint-items}", "{oaks-predictions}"], "oaks-predictions",
     "this is an OAKS predictions file"),
])
def test_a_file_of_another_protocol_is_named_as_such(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    argv: list[str], given: str, says: str
) -> None:
    words = [w.format(**{k: str(v) for k, v in files.items()}) for w in argv]
    if words[0] == "run":
        words += ["--out", str(tmp_path / "r")]
    assert main(words) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"clstream: error: {files[given]}: {says}")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_sampling_flag_error_names_the_flag_typed(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "oaks", str(files["oaks-data"]), "--system", "full", "--out",
                 str(tmp_path / "r"), "--samples", "0"]) == 2
    assert capsys.readouterr().err.startswith("clstream: error: flag --samples: ")
