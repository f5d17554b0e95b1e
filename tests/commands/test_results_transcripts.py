"""Transcripts from the command line: kept by default, ``--transcripts none`` on a run verb,
a resume that stores no call twice, and ``export --transcripts`` as JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "babi.json"
    assert main(["generate", "oaks-babi", "--seed", "3", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "64", "--max-questions", "3", "--out", str(path)]) == 0
    return path


def run(data: Path, out: Path, *extra: str) -> None:
    assert main(["run", "oaks", str(data), "--system", "icl", "--system", "rag:k=2",
                 "--model", "builtin", "--out", str(out), "--no-progress", *extra]) == 0


def test_transcripts_are_kept_by_default_and_none_keeps_the_run_ids(data: Path,
                                                                     tmp_path: Path) -> None:
    run(data, tmp_path / "on")
    run(data, tmp_path / "off", "--transcripts", "none")
    with ResultsStore(tmp_path / "on") as on, ResultsStore(tmp_path / "off") as off:
        assert [r.run_id for r in on.runs()] == [r.run_id for r in off.runs()]
        for r in on.runs():
            assert on.calls_count(r.run_id) == on.count(r.run_id, "probe") == 12
            assert r.info["transcripts"] == "all"
            calls = on.calls(r.run_id, "probe")
            assert {c["record_key"] for c in calls} == {
                rec.key for rec in on.read_records(r.run_id, "probe")}
        for r in off.runs():
            assert off.calls_count(r.run_id) == 0
            assert r.info["transcripts"] == "none"
            assert r.info["run_flags"]["transcripts"] == "none"


def test_a_resume_stores_no_call_twice(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    run(data, out)
    with ResultsStore(out, writer=True) as store:
        runs = store.runs()
        before = {r.run_id: store.calls(r.run_id) for r in runs}
        for r in runs:  # as a run killed before these answers were committed
            store.conn.execute("DELETE FROM records WHERE run_id=? AND key LIKE '%@4'",
                               (r.run_id,))
            store.conn.execute("DELETE FROM calls WHERE run_id=? AND record_key LIKE '%@4'",
                               (r.run_id,))
    run(data, out)
    with ResultsStore(out) as store:
        for r in runs:
            after = store.calls(r.run_id)
            assert len(after) == len(before[r.run_id]) == 12
            keys = [c["record_key"] for c in after]
            assert len(set(keys)) == len(keys)
            old = {c["record_key"]: c["messages"] for c in before[r.run_id]}
            assert all(old[c["record_key"]] == c["messages"] for c in after)
    run(data, out)  # nothing left to do: nothing stored
    with ResultsStore(out) as store:
        assert all(store.calls_count(r.run_id) == 12 for r in runs)


def test_export_transcripts_writes_one_call_a_line(data: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run(data, tmp_path / "res")
    target = tmp_path / "calls.jsonl"
    assert main(["export", str(tmp_path / "res"), "--system", "icl", "--transcripts",
                 "--out", str(target)]) == 0
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(lines) == 12
    first = lines[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "[chunk index 0]" in first["messages"][1]["content"]
    assert first["record_kind"] == "probe" and first["stage"] == "generate"
    assert first["reply"] == first["replies"][0] and "param_temperature" in first
    assert all(not isinstance(v, dict) for v in first.values())  # flat for pandas
    assert "wrote 12 calls" in capsys.readouterr().err


def test_export_transcripts_of_a_run_without_them_is_one_line(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(data, tmp_path / "res", "--transcripts", "none")
    capsys.readouterr()
    target = tmp_path / "calls.jsonl"
    assert main(["export", str(tmp_path / "res"), "--system", "icl", "--transcripts",
                 "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no stored transcripts" in err[0]
    assert not target.exists()


def test_a_spec_file_turns_transcripts_off_and_the_rerun_spec_keeps_it(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "runs.toml"
    spec.write_text(f'out = "{tmp_path / "res"}"\n[defaults]\nmodel = "builtin"\n'
                    f'transcripts = "none"\n[[run]]\nprotocol = "oaks"\ndata = "{data}"\n'
                    'systems = ["full"]\n')
    assert main(["run", "--spec", str(spec)]) == 0
    with ResultsStore(tmp_path / "res") as store:
        (stored,) = store.runs()
        assert store.calls_count(stored.run_id) == 0
    capsys.readouterr()
    assert main(["runs", str(tmp_path / "res"), "--spec"]) == 0
    assert 'transcripts = "none"' in capsys.readouterr().out
