"""`clstream run oaks` end to end against a loopback OpenAI-compatible server with faults.

What is checked: sampling flags reach every request, the in-flight bound holds, stored answers
are exactly what the server sent (matched by request), token totals match the server's usage,
the response cache replays a run without a single request, injected faults never become
answers, and a probe that keeps failing is an error that a rerun retries.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli
from clstream.core.specs import derive_seed
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import probe_key
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import (  # noqa: E402
    FakeOpenAIServer,
    always,
    expected_text,
    fraction,
)

MODEL = "tiny-served-model"
SAMPLING = ["--temperature", "0.7", "--top-p", "0.8", "--top-k", "20", "--max-tokens", "256"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "5", "--docs", "2", "--chunks", "6",
                "--chunk-tokens", "250", "--max-questions", "5", "--out", str(path)]) == 0
    return path


def probes_by_seed(data: Path) -> dict[int, tuple[str, int]]:
    """(question_id, t) of every probe, keyed by the wire seed its request carries (run seed 0)."""
    out = {}
    for doc in load_oaks(data).documents:
        for q in doc.questions:
            for t in range(1, doc.num_chunks + 1):
                out[derive_seed(0, probe_key(q.question_id, t))] = (q.question_id, t)
    return out


def run_cmd(data: Path, server: FakeOpenAIServer, out: Path, *extra: str) -> int:
    return cli(["run", "oaks", str(data), "--system", "full", "--model", f"openai:{MODEL}",
                "--base-url", server.base_url, *SAMPLING, "--max-concurrency", "8",
                "--no-progress", "--out", str(out), *extra])


def exported(out: Path, tmp_path: Path) -> dict[tuple[str, int], str]:
    dest = tmp_path / f"{out.name}.jsonl"
    assert cli(["export", str(out), "--system", "full", "--out", str(dest)]) == 0
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    preds = {(r["question_id"], r["t"]): r["output"] for r in rows}
    assert len(preds) == len(rows)
    return preds


def summary(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(["summary", str(out), "--json"]) == 0
    run: dict[str, Any]
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    return run


def sent_texts(server: FakeOpenAIServer,
               seeds: dict[int, tuple[str, int]]) -> dict[tuple[str, int], str]:
    """What the server answered for each probe (the fake's answers are a function of the body)."""
    return {seeds[b["seed"]]: expected_text(b, 0) for b in server.requests}


def test_flags_concurrency_answers_and_usage(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds = probes_by_seed(data)
    cache = tmp_path / "responses.sqlite"
    with FakeOpenAIServer(latency=0.05, model=MODEL) as server:
        assert run_cmd(data, server, tmp_path / "a", "--cache", str(cache)) == 0
        bodies = server.requests
        assert len(bodies) == len(seeds)  # every probe asked once, nothing else
        assert {b["seed"] for b in bodies} == set(seeds)
        for body in bodies:
            assert body["model"] == MODEL
            assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) == (
                0.7, 0.8, 20, 256,
            )
            assert body["n"] == 1
        assert 2 <= server.max_in_flight <= 8
        preds = exported(tmp_path / "a", tmp_path)
        assert preds == sent_texts(server, seeds)
        reported = server.reported
        run = summary(tmp_path / "a", capsys)
        assert run["status"]["complete"] and run["status"]["errors"] == 0
        totals = {
            "prompt": sum(u["prompt_tokens"] for u in reported),
            "cached": sum(u["cached_tokens"] for u in reported),
            "completion": sum(u["completion_tokens"] for u in reported),
            "reasoning": sum(u["reasoning_tokens"] for u in reported),
        }
        assert run["tokens"] == totals and totals["prompt"] > 0
        assert run["status"]["hit_token_cap"] == 0
        # Every answer keeps its time to first token and output tokens per second.
        with ResultsStore(tmp_path / "a") as store:
            probes = [r.payload for rid in store.runs()
                      for r in store.read_records(rid.run_id, "probe")]
        assert probes and all(p["first_token_s"] >= 0 and p["finish_reasons"]
                              and p.get("output_tokens_per_s", 1) > 0 for p in probes)

        # The same command into a new directory with the same cache sends nothing.
        assert run_cmd(data, server, tmp_path / "b", "--cache", str(cache)) == 0
        assert len(server.requests) == len(bodies)
        assert exported(tmp_path / "b", tmp_path) == preds


def test_a_quarter_of_attempts_failing_still_gives_only_real_answers(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds = probes_by_seed(data)
    plan = fraction(0.25, ("429", "500", "malformed", "stall"), max_attempt=2)
    with FakeOpenAIServer(plan=plan, stall_s=1.5, model=MODEL) as server:
        assert run_cmd(data, server, tmp_path / "c", "--request-timeout", "1") == 0
        faults = Counter(server.faults)
        assert len(server.requests) > len(seeds)
        assert set(faults) == {"429", "500", "malformed", "stall"}
        preds = exported(tmp_path / "c", tmp_path)
    assert set(preds) == set(seeds.values())
    assert preds == sent_texts(server, seeds)
    run = summary(tmp_path / "c", capsys)
    assert run["status"]["complete"] and run["status"]["errors"] == 0


def test_a_probe_that_keeps_failing_is_an_error_and_a_rerun_retries_it(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds = probes_by_seed(data)
    doomed_seed, doomed = sorted(seeds.items(), key=lambda kv: kv[1])[7]
    plan = always("500", when=lambda body: body["seed"] == doomed_seed)
    out = tmp_path / "d"
    with FakeOpenAIServer(plan=plan, model=MODEL) as server:
        # A run that ends with a failed probe exits 3 (the rerun below finishes it: 0).
        assert run_cmd(data, server, out, "--max-retries", "1") == 3
        attempts = sum(1 for b in server.requests if b["seed"] == doomed_seed)
        assert attempts == 2  # the first try and one retry
        run = summary(out, capsys)
        assert run["status"]["errors"] == 1 and not run["status"]["complete"]
        assert run["status"]["probes_done"] == len(seeds) - 1
        preds = exported(out, tmp_path)
        assert doomed not in preds and len(preds) == len(seeds) - 1

        server.plan = None  # the server is healthy again
        before = len(server.requests)
        assert run_cmd(data, server, out, "--max-retries", "1") == 0
        again = server.requests[before:]
        assert [b["seed"] for b in again] == [doomed_seed]  # only the failed probe is asked
        run = summary(out, capsys)
        assert run["status"]["errors"] == 0 and run["status"]["complete"]
        retried = exported(out, tmp_path)
    assert retried[doomed] == expected_text(again[0], 0)
    assert retried == sent_texts(server, seeds)
