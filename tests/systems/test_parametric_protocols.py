"""One parametric method, ``lora-ntp:every=2``, on all four protocols with a tiny HF model the
test builds (docs/parametric.md §2): it trains at its update points, answers with its adapter,
records its training as the run's training cost, trains nothing when the same spec comes
again (its artifacts are reused), and a run killed during training resumes to the same records
as an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer
from tiny_llama import build_tiny_model
from tiny_streams import tiny_streams

from clstream.cli import main

pytest.importorskip("peft", reason="needs the train extra: pip install 'clstream[train]'")
pytest.importorskip("trl", reason="needs the train extra: pip install 'clstream[train]'")

SYSTEM = "lora-ntp:every=2,block=64,batch=4,micro_batch=4,lr=0.01,save_every=1"
UNITS = {"oaks": "probe", "seqmem": "online", "clbench": "instance", "imprint": "item"}


@pytest.fixture(scope="module", autouse=True)
def offline_hub() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tiny_streams(tmp_path_factory.mktemp("streams"), 3, chunk_tokens=80)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, streams: dict[str, Path]) -> Path:
    texts = [streams["oaks"].read_text(), streams["seqmem"].read_text(),
             *(p.read_text() for p in sorted(streams["imprint"].glob("*.jsonl")))]
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), texts=texts)


def argv(protocol: str, streams: dict[str, Path], tiny: Path, out: Path) -> list[str]:
    data = (["--task", "sales_prediction", "--schedule", "short", "--rollouts", "1"]
            if protocol == "clbench" else [str(streams[protocol])])
    extra = ["--samples", "1", "--supervision", "C+Q"] if protocol == "imprint" else []
    return ["run", protocol, *data, *extra, "--system", SYSTEM, "--model", f"hf:{tiny}",
            "--model-args", "device=cpu", "--max-tokens", "4", "--seed", "3", "--out",
            str(out), "--no-progress"]


def calls(out: Path, stage: str) -> list[tuple[str, int]]:
    """(key, cache hit) of the stored model calls and trainings of ``stage``."""
    with sqlite3.connect(out / "results.sqlite") as conn:
        rows = conn.execute("SELECT key, cache_hit FROM records WHERE stage=? ORDER BY key",
                            (stage,)).fetchall()
    return [(str(k), int(h)) for k, h in rows]


def answers(out: Path, unit: str) -> list[tuple[str, dict[str, Any], str | None]]:
    """The stored answers of ``unit`` records, their wall-time fields left out."""
    with sqlite3.connect(out / "results.sqlite") as conn:
        rows = conn.execute("SELECT stream, key, payload, error FROM records WHERE kind=? "
                            "ORDER BY stream, key", (unit,)).fetchall()
    return [(f"{s}/{k}", untimed(json.loads(p)), e) for s, k, p, e in rows]


def untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items()
                if k not in ("timings", "wall_s") and not k.endswith("_s")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


@pytest.mark.parametrize("protocol", ["oaks", "seqmem", "clbench", "imprint"])
def test_lora_ntp_trains_and_answers_on_the_protocol(
        protocol: str, streams: dict[str, Path], tiny: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(argv(protocol, streams, tiny, out)) == 0
    trained = calls(out, "train")
    assert trained and not any(hit for _, hit in trained), trained
    adapters = sorted(p.name for p in (out / "artifacts").iterdir())
    assert adapters and all(not a.endswith(".partial") for a in adapters)
    assert len(adapters) == len(trained)  # one adapter per update, each its own
    stored = answers(out, UNITS[protocol])
    assert stored and all(error is None for *_, error in stored)

    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["training"]["updates"] == len(trained) and run["training"]["tokens"] > 0
    assert run["tokens"]["prompt"] > 0  # inference tokens, counted apart from training
    if protocol == "imprint":
        assert run["context"]["tokens_in_context"] == 0
    assert main(["summary", str(out)]) == 0
    assert f"training: {run['system']} {len(trained)} update" in capsys.readouterr().out
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    assert ("Training" if protocol == "imprint" else "Training tokens") in \
        (tmp_path / "r.html").read_text()

    # The same spec in a fresh results folder that holds the artifacts: nothing is trained
    # again, and every answer is the same.
    again = tmp_path / "again"
    again.mkdir()
    os.symlink(out / "artifacts", again / "artifacts")
    assert main(argv(protocol, streams, tiny, again)) == 0
    assert calls(again, "train") == [(key, 1) for key, _ in trained]
    assert answers(again, UNITS[protocol]) == stored


def test_a_run_killed_while_training_resumes_to_the_same_records(
        streams: dict[str, Path], tiny: Path, tmp_path: Path) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert main(argv("seqmem", streams, tiny, whole)) == 0
    command = [sys.executable, "-m", "clstream", *argv("seqmem", streams, tiny, killed)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    deadline = time.time() + 180
    partial: list[Path] = []
    while time.time() < deadline and proc.poll() is None and not partial:
        partial = list((killed / "artifacts").glob("*.partial/checkpoint-*")) \
            if (killed / "artifacts").is_dir() else []
        time.sleep(0.01)
    assert proc.poll() is None and partial, "the run ended before a checkpoint was written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert main(argv("seqmem", streams, tiny, killed)) == 0
    assert answers(killed, "online") == answers(whole, "online")
    assert [k for k, _ in calls(killed, "train")] == [k for k, _ in calls(whole, "train")]
    assert not list((killed / "artifacts").glob("*.partial"))


def test_a_server_answers_with_the_adapters_it_loads_by_name(
        streams: dict[str, Path], tiny: Path, tmp_path: Path) -> None:
    """Training on the local base, answers from an OpenAI-compatible server that loads each
    adapter at runtime (docs/parametric.md §3)."""
    out = tmp_path / "results"
    with FakeOpenAIServer(model="tiny") as server:
        command = ["run", "oaks", str(streams["oaks"]), "--system", f"{SYSTEM},base={tiny}",
                   "--model", "openai:tiny", "--base-url", server.base_url, "--model-args",
                   "lora=true", "--max-tokens", "4", "--seed", "3", "--out", str(out),
                   "--no-progress"]
        assert main(command) == 0
        adapters = sorted(p.name for p in (out / "artifacts").iterdir())
        assert sorted(b["lora_name"] for b in server.lora_loads) == adapters
        assert {b["lora_path"] for b in server.lora_loads} == \
            {str(out / "artifacts" / a) for a in adapters}
        served = {b["model"] for b in server.requests}  # the base before the first update
        assert served == {"tiny", *adapters}
    assert all(error is None for *_, error in answers(out, "probe"))


def test_a_failed_training_stops_its_stream_and_the_run_says_how_to_resume(
        streams: dict[str, Path], tiny: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")  # a folder no trainer can load
    out = tmp_path / "results"
    command = argv("seqmem", streams, tiny, out)
    command[command.index("--system") + 1] = f"{SYSTEM},base={broken}"
    capsys.readouterr()
    assert main(command) == 3
    err = capsys.readouterr().err
    assert "training clstream-" in err and "clstream run seqmem" in err
    assert not (out / "artifacts").is_dir() or not any((out / "artifacts").iterdir())
