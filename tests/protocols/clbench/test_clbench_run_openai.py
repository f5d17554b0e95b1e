"""`clstream run clbench` against a loopback OpenAI-compatible server.

A server that acts like the builtin model (JSON actions from the builtin policies) gives the
same rewards as the builtin run; a server that answers prose is asked once more per step
(the repair request) and its malformed actions are capped by the environment, so the run
completes (exit 0: an invalid action is not an error); a request that keeps failing is an
error, never an action: the rollout stops, the run exits 3, and a rerun finishes it with the
records an uninterrupted run has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import FakeOpenAIServer, PolicyServer, always  # noqa: E402

MODEL = "tiny-served-model"


def run_cmd(server: FakeOpenAIServer, out: Path, *extra: str) -> int:
    return cli(["run", "clbench", "--schedule", "short", "--rollouts", "1", "--seed", "1",
                "--system", "full", "--model", f"openai:{MODEL}", "--base-url",
                server.base_url, "--max-concurrency", "4", "--no-progress", "--out", str(out),
                *extra])


def rewards(out: Path) -> dict[str, float]:
    with ResultsStore(out) as store:
        (run,) = store.runs()
        return {r.key: float(r.score or 0.0)
                for r in store.read_records(run.run_id, "instance", errors=False)}


def exported(out: Path, tmp_path: Path) -> list[str]:
    dest = tmp_path / f"{out.name}.jsonl"
    assert cli(["export", str(out), "--system", "full", "--out", str(dest)]) == 0
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    for row in rows:
        row.pop("tokens", None)  # the two backends count tokens differently
    return [json.dumps(r, sort_keys=True) for r in rows]


def test_a_server_answering_json_actions_matches_the_builtin_run(tmp_path: Path) -> None:
    builtin = tmp_path / "builtin"
    assert cli(["run", "clbench", "--schedule", "short", "--rollouts", "1", "--seed", "1",
                "--task", "database_exploration", "--task", "sales_prediction",
                "--system", "full", "--no-progress", "--out", str(builtin)]) == 0
    with PolicyServer(model=MODEL) as server:
        assert run_cmd(server, tmp_path / "served", "--task", "database_exploration",
                       "--task", "sales_prediction") == 0
        assert server.requests and all(b["model"] == MODEL for b in server.requests)
    served = rewards(tmp_path / "served")
    assert served and all(served[k] == pytest.approx(v) for k, v in rewards(builtin).items()
                          if k in served)
    assert len(served) == 2 * (6 + 3)


def test_prose_replies_are_repaired_once_then_capped_as_invalid_actions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "prose"
    with FakeOpenAIServer(model=MODEL) as server:
        assert run_cmd(server, out, "--task", "blind_spectrum_monitoring") == 0
        repairs = [b for b in server.requests
                   if "could not be read as an action" in b["messages"][-1]["content"]]
        assert repairs and 2 * len(repairs) == len(server.requests)
    with ResultsStore(out) as store:
        (run,) = store.runs()
        steps = list(store.read_records(run.run_id, "step"))
        assert steps and all(s.payload["repaired"] and not s.payload["valid"] for s in steps)
        assert all("Invalid action" in s.payload["feedback"] for s in steps)
        instances = list(store.read_records(run.run_id, "instance"))
        assert len(instances) == 2 * 15 and all(i.error is None for i in instances)
        assert all(i.score == 0.0 and i.payload["info"]["ended"] == "invalid_actions"
                   and i.payload["steps"] == 3 for i in instances)
    capsys.readouterr()
    assert cli(["summary", str(out), "--json"]) == 0
    (summary,) = json.loads(capsys.readouterr().out)["runs"]
    assert summary["status"]["complete"] and summary["status"]["errors"] == 0


def test_a_failing_request_stops_its_rollout_and_a_rerun_finishes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = tmp_path / "whole"
    with PolicyServer(model=MODEL) as server:
        assert run_cmd(server, whole, "--task", "database_exploration") == 0
    # Fail every request for step 2 of question q02 (the prompt's last block names it).

    def hit(body: dict[str, Any]) -> bool:
        block: str = body["messages"][-1]["content"].rsplit("Question: ", 1)[-1]
        return block.startswith("Instance q02, step 2\n")

    out = tmp_path / "stopped"
    with PolicyServer(model=MODEL, plan=always("500", when=hit)) as server:
        capsys.readouterr()
        assert run_cmd(server, out, "--task", "database_exploration", "--max-retries",
                       "0") == 3
        err = capsys.readouterr().err
        assert "run clbench ended with" in err and "resume with: clstream run clbench" in err
        assert "q02" in err
        with ResultsStore(out) as store:
            (run,) = store.runs()
            failed = list(store.read_records(run.run_id, "instance", errors=True))
            assert failed and all("q02" in (f.error or "") for f in failed)
            assert not list(store.read_records(run.run_id, "step", arm="stateless",
                                               stream="database_exploration/q02"))
        capsys.readouterr()
        assert cli(["summary", str(out), "--json"]) == 0
        (summary,) = json.loads(capsys.readouterr().out)["runs"]
        assert not summary["status"]["complete"] and summary["status"]["errors"] >= 1
        assert summary["coverage"]["scored"] < summary["coverage"]["total"]
        # The stateless arm stopped at q02, so the task is withheld, never scored partly.
        assert summary["metrics"] is None
        assert summary["coverage"]["tasks_withheld"] == ["database_exploration"]
        assert cli(["summary", str(out)]) == 0
        assert "incomplete: no complete instances yet" in capsys.readouterr().out
        html = tmp_path / "report.html"
        assert cli(["report", str(out), "--out", str(html)]) == 0
        assert "Not scored yet" in html.read_text()
        server.plan = None  # healthy again
        assert run_cmd(server, out, "--task", "database_exploration", "--max-retries",
                       "0") == 0
    with ResultsStore(out) as store:
        (run,) = store.runs()
        assert not list(store.read_records(run.run_id, "instance", errors=True))
    assert exported(out, tmp_path) == exported(whole, tmp_path)
