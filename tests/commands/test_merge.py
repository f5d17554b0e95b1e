"""``clstream merge OUT DIR...`` and ``summary``/``report`` over several directories: runs
are keyed by run id, the same run merges once, a run whose records disagree is refused with
nothing written, and reading several directories is reading their merge."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A: memory-free; B: rag:k=2 and, run again on its own, the same memory-free run."""
    root = tmp_path_factory.mktemp("merge")
    data = root / "babi.json"
    assert main(["generate", "oaks-babi", "--seed", "3", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "200", "--out", str(data)]) == 0
    a, b = root / "A", root / "B"
    for out, systems in ((a, ["memory-free"]), (b, ["rag:k=2", "memory-free"])):
        argv = ["run", "oaks", str(data), "--out", str(out), "--no-progress"]
        for system in systems:
            argv += ["--system", system]
        assert main(argv) == 0
    (a / "artifacts" / "weights-1").mkdir(parents=True)
    (a / "artifacts" / "weights-1" / "clstream-artifact.json").write_text("{}")
    return a, b


def _records(directory: Path) -> dict[str, int]:
    with ResultsStore(directory) as store:
        return {run.run_id: store.count(run.run_id, "probe") for run in store.runs()}


def test_two_directories_merge_and_the_shared_run_merges_once(
        dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = dirs
    out = tmp_path / "merged"
    assert main(["merge", str(out), str(a), str(b)]) == 0
    assert "2 runs (1 found in more than one)" in capsys.readouterr().err
    merged, in_a, in_b = _records(out), _records(a), _records(b)
    assert set(merged) == set(in_a) | set(in_b) and len(merged) == 2
    assert merged == {**in_a, **in_b}
    with ResultsStore(out) as m, ResultsStore(b) as src:
        for run in src.runs():
            for stream in {r[0] for r in src.conn.execute(
                    "SELECT stream FROM states WHERE run_id=?", (run.run_id,))}:
                steps = src.state_steps(run.run_id, stream)
                assert m.state_steps(run.run_id, stream) == steps
                assert m.load_state(run.run_id, stream, steps[-1]) == \
                    src.load_state(run.run_id, stream, steps[-1])
    assert (out / "artifacts" / "weights-1" / "clstream-artifact.json").exists()


def test_a_conflicting_run_is_refused_and_nothing_is_written(
        dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = dirs
    changed = tmp_path / "changed"
    shutil.copytree(b, changed)
    with sqlite3.connect(changed / "results.sqlite") as db:
        (run_id,) = db.execute("SELECT run_id FROM runs WHERE system='memory-free'").fetchone()
        db.execute("UPDATE records SET payload='{\"answer\": \"elsewhere\"}' WHERE rowid ="
                   " (SELECT MIN(rowid) FROM records WHERE run_id=? AND error IS NULL)",
                   (run_id,))
    out = tmp_path / "out" / "merged"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["merge", str(out), str(a), str(changed)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"run {run_id}" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not out.exists()
    assert main(["report", str(a), str(changed), "--out", str(tmp_path / "r.html")]) == 2
    assert f"run {run_id}" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


def test_merge_refuses_a_destination_that_holds_files(
        dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    assert main(["merge", str(tmp_path / "taken"), str(dirs[0])]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


def _without_time_and_place(html: str) -> str:
    html = re.sub(r"<title>.*?</title>", "", html, flags=re.S)
    return re.sub(r"<dt>(Results|Generated)</dt><dd[^>]*>.*?</dd>", "", html, flags=re.S)


def test_reading_two_directories_equals_reading_their_merge(
        dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = dirs
    merged = tmp_path / "merged"
    assert main(["merge", str(merged), str(a), str(b)]) == 0
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "two.html")]) == 0
    assert main(["report", str(merged), "--out", str(tmp_path / "one.html")]) == 0
    two = (tmp_path / "two.html").read_text(encoding="utf-8")
    one = (tmp_path / "one.html").read_text(encoding="utf-8")
    assert f"{a}, {b}" in two
    assert _without_time_and_place(two) == _without_time_and_place(one)
    capsys.readouterr()
    assert main(["summary", str(a), str(b), "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert main(["summary", str(merged), "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    for result in (both, single):
        del result["dir"], result["generated_at"]
    assert both == single and len(both["runs"]) == 2


def test_report_over_several_directories_needs_an_output_file(
        dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(dirs[0]), str(dirs[1])]) == 2
    assert "--out" in capsys.readouterr().err


def test_the_same_run_made_twice_merges_whatever_its_measured_times(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SeqMem records hold wall-clock seconds (per stage, per memory update) that no rerun
    reproduces: two directories that each made the run merge into one run; an answer that
    differs is still a conflict."""
    data = tmp_path / "syn.json"
    assert main(["generate", "seqmem-synthetic", "--tasks", "8", "--holdout", "2", "--out",
                 str(data)]) == 0
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        assert main(["run", "seqmem", str(data), "--system", "exp-rag", "--no-progress",
                     "--out", str(out)]) == 0
    with sqlite3.connect(second / "results.sqlite") as db:  # other times, as a rerun has
        for rowid, payload in db.execute("SELECT rowid, payload FROM records").fetchall():
            body = json.loads(payload)
            for field in ("timings", "time_s"):
                if isinstance(body.get(field), dict):
                    body[field] = {k: v + 1.5 for k, v in body[field].items()}
                elif isinstance(body.get(field), float):
                    body[field] += 1.5
            db.execute("UPDATE records SET payload=? WHERE rowid=?", (json.dumps(body), rowid))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "merged"), str(first), str(second)]) == 0
    counts = []
    for directory in (first, tmp_path / "merged"):
        with sqlite3.connect(directory / "results.sqlite") as db:
            counts.append(db.execute("SELECT run_id, COUNT(*) FROM records GROUP BY run_id"
                                     ).fetchall())
    assert counts[0] == counts[1] and len(counts[0]) == 1  # one run, every record once
    with sqlite3.connect(second / "results.sqlite") as db:
        db.execute("UPDATE records SET payload=json_set(payload, '$.output', 'other') WHERE"
                   " rowid = (SELECT MIN(rowid) FROM records WHERE kind='online')")
    assert main(["merge", str(tmp_path / "again"), str(first), str(second)]) == 2
    assert "record online" in capsys.readouterr().err
