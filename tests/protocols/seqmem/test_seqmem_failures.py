"""A failed SeqMem run can never pass for a finished one, and nothing stored holds a secret.

What is checked: a dead endpoint fails before anything is written; an online answer that fails
stops the stream, the command exits 3 with one line and the command that resumes it, and that
command finishes the run; ``summary`` scores a partial store (a gap in the online records, a
failed hold-out answer, a failed re-evaluation) exactly as scoring the completed records by hand
does, and shows the coverage; the feedback that goes back into the model's prompt carries no
secret; a lone surrogate in an answer is stored, exported, summarized and reported.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli
from clstream.core.events import Event, Feedback
from clstream.core.secrets import REDACTED
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.driver.components import system_factory
from clstream.judges.evaluators import Verdict
from clstream.models.builtin import BuiltinReader
from clstream.protocols.seqmem.plan import SeqMemPlan
from clstream.protocols.seqmem.runner import SeqMemRunner
from clstream.protocols.seqmem.synthetic import generate_seqmem_synthetic, synthetic_stream
from clstream.store.db import Record, ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from planned import drive_runner  # noqa: E402

T, HOLDOUT = 12, 4
PLAN = ["--checkpoints", "0,4,8,12", "--horizons", "1,2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "syn.json"
    assert cli(["generate", "seqmem-synthetic", "--seed", "1", "--tasks", str(T), "--holdout",
                str(HOLDOUT), "--out", str(path)]) == 0
    return path


def summary_json(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(["summary", str(out), "--json"]) == 0
    run: dict[str, Any]
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    return run


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_endpoint_fails_before_anything_is_written(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port, out = closed_port(), tmp_path / "out"
    assert cli(["run", "seqmem", str(data), "--system", "exp-rag", "--model", "openai:m",
                "--base-url", f"http://127.0.0.1:{port}/v1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"clstream: error: flag --base-url: model openai:m at "
                   f"http://127.0.0.1:{port}/v1: cannot connect (Connection refused)"]
    assert not out.exists()


def test_a_failed_online_answer_stops_the_stream_exits_3_and_resumes(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = {"n": 0}

    def plan(body: dict[str, Any], attempt: int) -> str | None:
        calls["n"] += 1
        return "400" if calls["n"] > 20 else None  # the server breaks after 20 requests

    out = tmp_path / "out"
    with FakeOpenAIServer(model="m", plan=plan) as server:
        argv = ["run", "seqmem", str(data), "--system", "exp-recent", "--model", "openai:m",
                "--base-url", server.base_url, "--max-retries", "0", "--no-progress", *PLAN,
                "--out", str(out)]
        capsys.readouterr()
        assert cli(argv) == 3
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert line.startswith("clstream: error: run seqmem ended with ")
        assert 'first error: "model call failed on online task ' in line
        assert "HTTP 400: injected 400" in line
        resume = shlex.split(line.split("; resume with: ", 1)[1])
        assert resume[:3] == ["clstream", "run", "seqmem"]
        run = summary_json(out, capsys)
        cov = run["coverage"]
        assert 0 < cov["scored"] < T and cov["total"] == T and not run["status"]["complete"]
        assert run["metrics"] is not None and run["online_curve"] and \
            len(run["online_curve"]) == cov["scored"]

        server.plan = None
        assert cli(resume[1:]) == 0
        run = summary_json(out, capsys)
    assert run["status"]["complete"] and run["coverage"]["scored"] == T


def _delete(store: ResultsStore, run_id: str, kind: str, key: str) -> dict[str, Any]:
    (row,) = [r for r in store.read_records(run_id, kind) if r.key == key]
    store.conn.execute("DELETE FROM records WHERE run_id=? AND kind=? AND key=?",
                       (run_id, kind, key))
    return {"payload": row.payload, "stream": row.stream, "t": row.step}


def _fail(store: ResultsStore, run_id: str, kind: str, key: str) -> None:
    row = _delete(store, run_id, kind, key)
    store.put_records(run_id, [Record(kind, key, {**row["payload"], "output": ""},
                                      stream=row["stream"], t=row["t"], error="boom")])


def test_a_partial_store_is_scored_over_completed_records_only(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli(["run", "seqmem", str(data), "--system", "exp-rag", "--no-progress", *PLAN,
                "--out", str(out)]) == 0
    with ResultsStore(out, writer=True) as store:
        (run,) = store.runs()
        holdout = {r.key: r.payload for r in store.read_records(run.run_id, "holdout")}
        right = next(k for k, p in sorted(holdout.items()) if k.startswith("8/") and p["correct"])
        _fail(store, run.run_id, "holdout", right)  # a failed hold-out answer that was right
        _fail(store, run.run_id, "retro", "2@1")
        _delete(store, run.run_id, "online", "9")  # a gap: tasks 10..12 are not scored

    summary = summary_json(out, capsys)
    cov = summary["coverage"]
    assert (cov["scored"], cov["total"], cov["holdout_checkpoints"]) == (8, T, [0, 4])
    assert (cov["holdout_checkpoints_total"], cov["retro_total"]) == (4, 21)
    assert not cov["complete"] and not summary["status"]["complete"]

    # By hand: the exported (successful) records, cut to the stream of the first 8 tasks,
    # without checkpoint 8 (an item failed there) and re-evaluations needing a later state.
    exported = tmp_path / "records.jsonl"
    assert cli(["export", str(out), "--system", "exp-rag", "--out", str(exported)]) == 0
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {"kind": "retro", "tau": 2, "horizon": 1, "correct": 1} not in rows
    kept = [r for r in rows if (r["kind"] == "online" and r["tau"] <= 8)
            or (r["kind"] == "holdout" and r["checkpoint"] in (0, 4))
            or (r["kind"] == "retro" and r["tau"] + r["horizon"] <= 8)]
    assert cov["retro_scored"] == sum(1 for r in kept if r["kind"] == "retro")
    by_hand_file = tmp_path / "kept.jsonl"
    by_hand_file.write_text("".join(json.dumps(r) + "\n" for r in kept))
    capsys.readouterr()
    assert cli(["score", "seqmem", str(by_hand_file), "--json"]) == 0
    by_hand = json.loads(capsys.readouterr().out)
    assert summary["metrics"] == by_hand
    assert [p["checkpoint"] for p in summary["holdout_curve"]] == [0, 4]

    capsys.readouterr()
    assert cli(["summary", str(out)]) == 0
    assert "  exp-rag: incomplete: metrics over 8 of 12 tasks (66%)" in capsys.readouterr().out
    report = tmp_path / "r.html"
    assert cli(["report", str(out), "--out", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert "exp-rag (incomplete: 66% of tasks)" in page
    assert "first tasks answered without a failure" in page


def test_a_lone_surrogate_answer_survives_every_verb(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli(["run", "seqmem", str(data), "--system", "exp-recent", "--no-progress", *PLAN,
                "--out", str(out)]) == 0
    with ResultsStore(out, writer=True) as store:
        (run,) = store.runs()
        for kind, key in (("online", "3"), ("holdout", "4/" + _first_item(store, run.run_id))):
            row = _delete(store, run.run_id, kind, key)
            store.put_records(run.run_id, [Record(
                kind, key, {**row["payload"], "output": "x \ud800 y", "feedback": "\udfff"},
                stream=row["stream"], t=row["t"])])
        (online,) = [r for r in store.read_records(run.run_id, "online") if r.key == "3"]
    assert online.payload["output"] == "x \\ud800 y" and online.payload["feedback"] == "\\udfff"
    assert cli(["export", str(out), "--system", "exp-recent",
                "--out", str(tmp_path / "r.jsonl")]) == 0
    assert summary_json(out, capsys)["status"]["complete"]
    assert cli(["summary", str(out)]) == 0
    assert cli(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0


def _first_item(store: ResultsStore, run_id: str) -> str:
    items: list[str] = sorted(r.payload["item"] for r in store.read_records(run_id, "holdout")
                              if r.payload["checkpoint"] == 4)
    return items[0]


def test_feedback_into_the_prompt_carries_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "tok-evaluator-leak-0123456789"
    monkeypatch.setenv("CLSTREAM_TEST_EVAL_TOKEN", secret)
    stream = synthetic_stream(generate_seqmem_synthetic(seed=3, tasks=8, holdout=2))
    evaluator = stream.evaluator()

    def evaluate(task: Any, output: str) -> Verdict:
        verdict = evaluator.evaluate(task, output)
        return Verdict(verdict.score, f"{verdict.feedback} (env said {secret})", verdict.detail)

    spec = RunSpec(protocol="seqmem", dataset_hash=stream.sha256,
                   system=ComponentSpec.parse("exp-recent"), model=ComponentSpec(name="builtin"))
    factory = system_factory(spec, BuiltinReader())
    seen: list[Event] = []

    def make() -> Any:
        system = factory()
        observe = system.observe

        async def recording(event: Event) -> Any:
            seen.append(event)
            return await observe(event)

        system.observe = recording  # type: ignore[method-assign]
        return system

    with ResultsStore(tmp_path / "out", writer=True) as store:
        runner = SeqMemRunner(stream.tasks, stream.holdout, spec, store, make, evaluate,
                              SeqMemPlan.build(8))
        drive_runner(runner, store, spec, {"online": "online", "holdout": "hold-out", "retro": "retro"}, BuiltinReader(), make)
    feedback = [e for e in seen if isinstance(e, Feedback)]
    assert len(feedback) >= 8
    assert all(secret not in f.message and f"(env said {REDACTED})" in f.message
               for f in feedback)
    raw = b"".join(p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file())
    assert secret.encode() not in raw


def test_every_task_scored_but_a_failed_probe_is_still_incomplete(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli(["run", "seqmem", str(data), "--system", "exp-rag", "--no-progress", *PLAN,
                "--out", str(out)]) == 0
    with ResultsStore(out, writer=True) as store:
        (run,) = store.runs()
        _fail(store, run.run_id, "retro", "3@2")
    summary = summary_json(out, capsys)
    cov = summary["coverage"]
    assert (cov["scored"], cov["retro_scored"], cov["retro_total"]) == (T, 20, 21)
    assert not summary["status"]["complete"] and summary["status"]["errors"] == 1
    capsys.readouterr()
    assert cli(["summary", str(out)]) == 0
    assert ("  exp-rag: incomplete: metrics over all 12 tasks; some of their records failed or "
            "are missing and are left out") in capsys.readouterr().out
    assert cli(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    assert "exp-rag (incomplete: records missing)" in (tmp_path / "r.html").read_text()
