"""``clstream runs DIR`` and ``clstream runs rm DIR RUN_ID`` through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.core.records import Record
from clstream.store.db import ResultsStore


def _results(tmp_path: Path) -> Path:
    res = tmp_path / "res"
    with ResultsStore(res, writer=True) as store:
        for run_id, system, spec in (("run-one", "full", {}),
                                     ("run-two", "rag:k=2", {"seed": 3})):
            store.ensure_run(run_id, "oaks", system, "builtin", "sha", spec, {})
            store.add_wall_time(run_id, 1.5)
            store.put_records(run_id, [Record("probe", "q@1", {}, t=1),
                                       Record("probe", "q@2", {}, t=2, error="timeout")])
    return res


def test_runs_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _results(tmp_path)
    assert main(["runs", str(res)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["run", "id", "protocol", "system", "model", "seed"]
    assert lines[1].split()[:8] == ["run-one", "oaks", "full", "builtin", "-", "1", "1", "1.5"]
    assert lines[2].split()[:5] == ["run-two", "oaks", "rag:k=2", "builtin", "3"]
    assert main(["runs", str(res), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listing["runs"]] == ["run-one", "run-two"]
    first = listing["runs"][0]
    assert (first["ok"], first["errors"], first["wall_s"]) == (1, 1, 1.5)
    assert [r["seed"] for r in listing["runs"]] == [None, 3]
    assert first["records"] == {"probe": {"ok": 1, "errors": 1}}
    assert first["created"].endswith("Z")


def test_runs_rm_deletes_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _results(tmp_path)
    assert main(["runs", "rm", str(res), "run-one"]) == 0
    assert "deleted run run-one" in capsys.readouterr().err
    assert main(["runs", str(res), "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["run-two"]


def test_runs_rm_unknown_id_is_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    res = _results(tmp_path)
    assert main(["runs", "rm", str(res), "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clstream: error: ")
    assert "'nope'" in err and "run-one, run-two" in err
    with ResultsStore(res) as store:
        assert len(store.runs()) == 2


def test_runs_rm_needs_the_writer_lock(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    res = _results(tmp_path)
    with ResultsStore(res, writer=True):
        assert main(["runs", "rm", str(res), "run-one"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "another clstream process" in err
    assert main(["runs", str(res)]) == 0  # listing needs no lock


def test_runs_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["runs", str(tmp_path / "none")], ["runs", "rm", str(tmp_path / "none"), "x"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no results database" in err
    assert not (tmp_path / "none").exists()  # rm did not create a database


@pytest.mark.parametrize("argv", [
    ["runs"], ["runs", "rm", "DIR"], ["runs", "a", "b"], ["runs", "rm", "a", "b", "c"],
])
def test_runs_usage_errors_are_one_line(argv: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clstream: error: clstream runs")
