"""A failed OAKS run can never pass for a finished one, and nothing stored holds a secret.

What is checked, end to end through the command line:

* a dead endpoint, a model the server does not serve and a rejected sampling parameter fail
  in seconds with exit status 2, one stderr line quoting the server's reason, and no results
  directory;
* a run that ends with failed probes exits 3 with one line (count, first error, the command
  that resumes it), and that command finishes the run;
* ``summary`` and ``report`` score a partial store (deleted probes, error records) over the
  complete questions only, equal to scoring those questions by hand, and show the coverage;
  with no complete question the metrics are null;
* a server echoing the Authorization header never gets the key into the results directory or
  onto the terminal; a lone surrogate in an answer is stored, exported, summarized, reported;
* wall time adds up over resumed sessions, including one ended by SIGTERM.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli
from clstream.core.specs import derive_seed
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.metrics import judge_dataset, score_oaks
from clstream.protocols.oaks.run_summary import complete_questions
from clstream.protocols.oaks.runner import probe_key
from clstream.store.db import Record, ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import FakeOpenAIServer, StaticWebServer, always  # noqa: E402

KEY = "sk-oaks-failures-0123456789abcdef"
SYSTEM = "window:w=1"  # the builtin reader gets some answers wrong with it (accuracy ~0.78)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "5", "--docs", "2", "--chunks", "6",
                "--chunk-tokens", "250", "--max-questions", "5", "--out", str(path)]) == 0
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("clstream: error: ")
    return lines[0]


def summary_json(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(["summary", str(out), "--json"]) == 0
    run: dict[str, Any]
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    return run


# -- the endpoint check -------------------------------------------------------------------


def test_a_dead_endpoint_fails_at_the_check_and_writes_nothing(data: Path, tmp_path: Path
                                                               ) -> None:
    port = closed_port()
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "clstream", "run", "oaks", str(data), "--system", "window",
         "--model", "openai:x", "--base-url", f"http://127.0.0.1:{port}/v1", "--out", str(out)],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert line == (f"clstream: error: flag --base-url: model openai:x at "
                    f"http://127.0.0.1:{port}/v1: "
                    "cannot connect (Connection refused)")
    assert proc.stdout == "" and not out.exists()


@pytest.mark.parametrize("replica", [False, True])
def test_a_static_web_server_is_refused_before_anything_is_registered(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], replica: bool
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(model="m") as good, StaticWebServer(tmp_path / "site") as static:
        urls = [good.base_url, static.base_url] if replica else [static.base_url]
        flags = [word for url in urls for word in ("--base-url", url)]
        assert cli(["run", "oaks", str(data), "--system", "window", "--model", "openai:m",
                    *flags, "--out", str(out)]) == 2
        assert good.requests == []
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"clstream: error: flag --base-url: model openai:m at "
                           f"{static.base_url}: the server does not answer POST "
                           "/chat/completions (HTTP 501: HTML page: Error response; ")
    assert "going on" not in line and "<" not in line
    assert not out.exists()  # no results directory, so no run row


def test_a_wrong_model_name_quotes_the_server(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(model="served") as server:
        assert cli(["run", "oaks", str(data), "--system", "window", "--model", "openai:wrong",
                    "--base-url", server.base_url, "--out", str(out)]) == 2
        assert server.requests == []
    line = one_error_line(capsys.readouterr().err)
    assert "does not list model 'wrong' (it serves 'served')" in line
    assert "HTTP 404: The model `wrong` does not exist." in line
    assert not out.exists()


def test_a_rejected_parameter_quotes_the_server(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def reject(body: dict[str, Any]) -> str | None:
        return None if body["min_p"] == 0 else "min_p is not supported by this server"

    out = tmp_path / "out"
    with FakeOpenAIServer(model="m", reject=reject) as server:
        assert cli(["run", "oaks", str(data), "--system", "window", "--model", "openai:m",
                    "--base-url", server.base_url, "--min-p", "0.1", "--out", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.endswith("(HTTP 400: min_p is not supported by this server)")
    assert not out.exists()


# -- a run that ends with failed probes ---------------------------------------------------


def test_failed_probes_exit_3_with_the_command_that_resumes(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dataset = load_oaks(data)
    doc = dataset.documents[0]
    doomed = {derive_seed(0, probe_key(q.question_id, 2)) for q in doc.questions}
    out = tmp_path / "out"
    argv = ["run", "oaks", str(data), "--system", "full", "--model", "openai:m",
            "--max-retries", "0", "--no-progress", "--out", str(out)]
    with FakeOpenAIServer(model="m", plan=always("500", when=lambda b: b["seed"] in doomed)
                          ) as server:
        argv += ["--base-url", server.base_url]
        capsys.readouterr()
        assert cli(argv) == 3
        err = capsys.readouterr().err.splitlines()
        line = err[-1]
        assert line.startswith(f"clstream: error: run oaks ended with {len(doomed)} failed "
                               f"probes (full (")
        assert (f"): {len(doomed)} failed of 60); first error: \"openai:m: failed after 1 "
                "attempts; last error: HTTP 500: injected 500\"; resume with: ") in line
        resume = line.split("; resume with: ", 1)[1]
        words = shlex.split(resume)
        assert words[:3] == ["clstream", "run", "oaks"]
        run = summary_json(out, capsys)
        assert run["status"]["errors"] == len(doomed) and not run["status"]["complete"]

        # The typed command line is quoted back exactly when there is one.
        monkeypatch.setattr(sys, "argv", ["clstream", *argv])
        assert cli(argv) == 3
        assert capsys.readouterr().err.splitlines()[-1].endswith(
            "; resume with: " + shlex.join(["clstream", *argv]))

        server.plan = None  # healthy again: the resume command finishes the run
        monkeypatch.setattr(sys, "argv", ["pytest"])
        assert cli(words[1:]) == 0
        run = summary_json(out, capsys)
    assert run["status"]["complete"] and run["status"]["errors"] == 0


# -- partial stores are scored over complete questions only -------------------------------


def _run_builtin(data: Path, out: Path) -> str:
    assert cli(["run", "oaks", str(data), "--system", SYSTEM, "--no-progress",
                "--out", str(out)]) == 0
    with ResultsStore(out) as store:
        (run,) = store.runs()
    return run.run_id


def _break(out: Path, run_id: str, missing: list[str], failed: list[str],
           replace: dict[str, str] | None = None) -> None:
    """Delete the probes ``missing``, turn ``failed`` into error records, and give the probes
    of ``replace`` new outputs."""
    with ResultsStore(out, writer=True) as store:
        rows = {r.key: r for r in store.read_records(run_id, "probe")}
        for key in [*missing, *failed, *(replace or {})]:
            store.conn.execute("DELETE FROM records WHERE run_id=? AND kind='probe' AND key=?",
                               (run_id, key))
        store.put_records(run_id, [
            Record("probe", key, {**rows[key].payload, "output": ""}, stream=rows[key].stream,
                   t=rows[key].step, error="boom")
            for key in failed])
        store.put_records(run_id, [
            Record("probe", key, {**rows[key].payload, "output": text}, stream=rows[key].stream,
                   t=rows[key].step)
            for key, text in (replace or {}).items()])


def _exported(out: Path, tmp_path: Path) -> dict[tuple[str, int], str]:
    dest = tmp_path / "preds.jsonl"
    assert cli(["export", str(out), "--system", SYSTEM, "--out", str(dest)]) == 0
    rows = [json.loads(line) for line in dest.read_text(encoding="utf-8").splitlines()]
    return {(r["question_id"], r["t"]): r["output"] for r in rows}


def test_errors_and_missing_probes_are_never_wrong_answers(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    run_id = _run_builtin(data, out)
    dataset = load_oaks(data)
    full, _ = score_oaks(dataset, _exported(out, tmp_path))
    assert 0.5 < full["accuracy"] < 1.0
    # Break two questions the system answered right at those intervals: one probe missing (a
    # killed run), one failed (an error record).
    judged = _correct(dataset, _exported(out, tmp_path))
    right = [key for key, c in judged.items() if c and key[1] > 1]
    (q1, t1), (q2, t2) = right[0], next(k for k in right if k[0] != right[0][0])
    _break(out, run_id, missing=[probe_key(q1, t1)], failed=[probe_key(q2, t2)])

    run = summary_json(out, capsys)
    preds = _exported(out, tmp_path)
    by_hand, _ = score_oaks(complete_questions(dataset, preds),
                            {k: v for k, v in preds.items() if k[0] not in (q1, q2)})
    assert run["metrics"] == json.loads(json.dumps(by_hand))
    assert run["metrics"]["n_questions"] == 8
    old, _ = score_oaks(dataset, preds, allow_missing=True)  # the old way: missing = wrong
    assert old["accuracy"] < full["accuracy"]
    assert run["metrics"]["accuracy"] != pytest.approx(old["accuracy"])
    cov = run["coverage"]
    assert (cov["unit"], cov["scored"], cov["total"], cov["probes_done"], cov["probes_total"],
            cov["probes_scored"]) == ("questions", 8, 10, 58, 60, 48)
    assert cov["share"] == pytest.approx(0.8)
    assert run["status"] == {"probes_done": 58, "probes_total": 60, "errors": 1,
                             "complete": False, "hit_token_cap": 0}

    capsys.readouterr()
    assert cli(["summary", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"  {SYSTEM}: incomplete: metrics over 8 of 10 questions (80%)" in text
    report = tmp_path / "report.html"
    assert cli(["report", str(out), "--out", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert f"{SYSTEM} (incomplete: 80% of questions)" in page
    assert "scored only over the questions answered at every interval" in page
    assert "charted from the probes done so far" not in page


def _correct(dataset: Any, preds: dict[tuple[str, int], str]) -> dict[tuple[str, int], int]:
    """Correctness of every (question, t)."""
    judged, _ = judge_dataset(dataset, preds)
    return {(j.question.question_id, t): int(c) for j in judged
            for t, c in enumerate(j.correct, 1)}


def test_no_complete_question_withholds_the_metrics(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    run_id = _run_builtin(data, out)
    questions = [q.question_id for d in load_oaks(data).documents for q in d.questions]
    _break(out, run_id, missing=[probe_key(q, 6) for q in questions[::2]],
           failed=[probe_key(q, 3) for q in questions[1::2]])
    run = summary_json(out, capsys)
    assert run["metrics"] is None and run["ci"] == {}
    assert run["coverage"]["scored"] == 0 and run["coverage"]["probes_done"] == 50
    capsys.readouterr()
    assert cli(["summary", str(out)]) == 0
    assert f"  {SYSTEM}: incomplete: no complete questions yet, metrics withheld" in \
        capsys.readouterr().out
    assert cli(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    assert "Not scored yet (no question answered at every interval)" in \
        (tmp_path / "r.html").read_text(encoding="utf-8")


# -- secrets and odd text -----------------------------------------------------------------


def test_a_server_echoing_the_key_never_gets_it_stored_or_shown(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLSTREAM_TEST_SERVER_KEY", KEY)
    dataset = load_oaks(data)
    q = dataset.documents[1].questions[0]
    doomed = {derive_seed(0, probe_key(q.question_id, t)) for t in (1, 4)}
    out = tmp_path / "out"
    capsys.readouterr()
    with FakeOpenAIServer(model="m", api_key=KEY, echo_headers=True,
                          plan=always("400", when=lambda b: b["seed"] in doomed)) as server:
        assert cli(["run", "oaks", str(data), "--system", "full", "--model", "openai:m",
                    "--base-url", server.base_url, "--api-key-env", "CLSTREAM_TEST_SERVER_KEY",
                    "--no-progress", "--out", str(out)]) == 3
        assert all(h["authorization"] == f"Bearer {KEY}" for h in server.headers)
    shown = capsys.readouterr()
    assert 'first error: "openai:m: HTTP 400: injected 400 (request headers: ' in shown.err
    exported = tmp_path / "preds.jsonl"
    assert cli(["export", str(out), "--system", "full", "--out", str(exported)]) == 0
    assert cli(["summary", str(out), "--json"]) == 0
    assert cli(["summary", str(out)]) == 0
    assert cli(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    shown_after = capsys.readouterr()
    with ResultsStore(out) as store:
        (run,) = store.runs()
        errors = [r.error for r in store.read_records(run.run_id, errors=True)]
    assert len(errors) == 2 and all("[redacted]" in (e or "") for e in errors)
    for where in (out, tmp_path):
        for path in where.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path
    for text in (shown.out, shown.err, shown_after.out, shown_after.err):
        assert KEY not in text


def test_a_lone_surrogate_answer_is_stored_exported_summarized_reported(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    run_id = _run_builtin(data, out)
    qid = load_oaks(data).documents[0].questions[0].question_id
    _break(out, run_id, missing=[], failed=[], replace={probe_key(qid, 2): "odd \ud800 answer"})
    preds = _exported(out, tmp_path)
    assert preds[(qid, 2)] == "odd \\ud800 answer"
    run = summary_json(out, capsys)
    assert run["status"]["complete"] and run["metrics"] is not None
    assert cli(["summary", str(out)]) == 0
    assert cli(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0


# -- wall time ----------------------------------------------------------------------------


def _wall(out: Path) -> float:
    with ResultsStore(out) as store:
        (run,) = store.runs()
    return run.wall_s


def test_wall_time_adds_up_over_resumed_sessions_even_after_sigterm(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(model="m", latency=0.05) as server:
        argv = ["run", "oaks", str(data), "--system", "full", "--model", "openai:m",
                "--base-url", server.base_url, "--max-concurrency", "1", "--no-progress",
                "--out", str(out)]
        proc = subprocess.Popen([sys.executable, "-m", "clstream", *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 120  # a bound for a hang only
        while time.monotonic() < deadline:  # until some answers are stored
            db = out / "results.sqlite"
            if db.exists():
                try:
                    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                    n = con.execute("SELECT COUNT(*) FROM records").fetchone()[0]
                    con.close()
                except sqlite3.Error:
                    n = 0
                if n >= 10:
                    break
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 143, err  # 128 + SIGTERM, as a shell reports it
        assert "interrupted; resume with: clstream run oaks " in err
        first = _wall(out)
        assert first >= 0.3
        server.latency = 0.0
        assert cli(argv) == 0  # the resumed session finishes the run
    second = _wall(out)
    assert second > first
