"""SeqMem-Eval through the real ``clstream`` entry point with the plain builtin model: every
method runs end to end on the synthetic stream, the export holds the records SPECS §5 asks
for, memory helps (exp-rag above memory-free), and ``summary`` reports stage costs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main

METHODS = ["memory-free", "exp-recent", "exp-rag", "dc-rs", "awm", "expel-st", "expel-mt",
           "g-memory"]
T, HOLDOUT = 40, 10


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seqmem-cli")
    data = root / "syn.json"
    assert main(["generate", "seqmem-synthetic", "--seed", "1", "--tasks", str(T), "--holdout",
                 str(HOLDOUT), "--out", str(data)]) == 0
    argv = ["run", "seqmem", str(data), "--out", str(root / "runs"), "--no-progress"]
    for method in METHODS:
        argv += ["--system", method]
    assert main(argv) == 0
    return root


def summary_json(results: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["summary", str(results / "runs"), "--json"]) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    return summary


@pytest.mark.parametrize("method", METHODS)
def test_every_method_exports_the_records_of_the_protocol(results: Path, method: str) -> None:
    out = results / f"{method}.jsonl"
    assert main(["export", str(results / "runs"), "--system", method, "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    online = [r for r in rows if r["kind"] == "online"]
    assert sorted(r["tau"] for r in online) == list(range(1, T + 1))
    holdout: dict[int, int] = {}
    for r in rows:
        if r["kind"] == "holdout":
            holdout[r["checkpoint"]] = holdout.get(r["checkpoint"], 0) + 1
    assert 0 in holdout and len([k for k in holdout if k > 0]) >= 2
    assert set(holdout.values()) == {HOLDOUT}
    horizons: dict[int, set[int]] = {}
    for r in rows:
        if r["kind"] == "retro":
            horizons.setdefault(r["horizon"], set()).add(r["tau"])
    for h in (1, 2, 4):
        assert horizons[h] == set(range(1, T - h + 1))


def test_memory_helps_the_builtin_reader_and_summary_reports_stage_costs(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {r["system"]: r for r in summary_json(results, capsys)["runs"]}
    assert sorted(runs) == sorted(METHODS)
    acc = {name: r["metrics"]["online_acc"] for name, r in runs.items()}
    assert acc["exp-rag"] >= acc["memory-free"] + 0.10
    assert acc["memory-free"] <= 0.05
    for run in runs.values():
        assert run["status"]["complete"] and run["status"]["errors"] == 0
        eff = run["efficiency"]
        assert {"retrieve", "update"} <= set(eff["tokens_by_stage"])
        assert {"retrieve", "update"} <= set(eff["time_s_by_stage"])
    assert runs["dc-rs"]["efficiency"]["tokens_by_stage"]["update"]["prompt"] > 0  # curator


def test_summary_text_table_is_grouped_by_protocol(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["summary", str(results / "runs")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[seqmem] ") and "(dataset " in lines[0]  # rows under their dataset
    header = lines[1].split()
    for column in ("online", "holdout", "IV", "BWT(1)", "F(1)", "ret", "upd", "tokens"):
        assert column in header
    assert "acc" not in header and "AL" not in header
    table = lines[2:lines.index("")] if "" in lines else lines[2:]  # paired tests come after
    body = {line.split()[0]: line.split() for line in table}
    assert sorted(body) == sorted(METHODS)
    runs = {r["system"]: r for r in summary_json(results, capsys)["runs"]}
    rag = body["exp-rag"]
    assert rag[2] == str(runs["exp-rag"]["meta"]["seed"])  # the seed column
    assert rag[3] == f"{runs['exp-rag']['metrics']['online_acc']:.3f}"
    assert rag[8] == f"{T}/{T}"
    update = runs["dc-rs"]["efficiency"]["tokens_by_stage"]["update"]
    assert body["dc-rs"][11] == str(update["prompt"] + update["completion"] + update["reasoning"])
