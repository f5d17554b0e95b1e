"""A protocol added from outside the package, with one registry line: a counter stream (the
text says what a counter reads; after each step the system is asked for the reading) and one
metric (accuracy). ``generate``, ``run``, ``score``, ``summary``, ``report`` and ``export`` all
work on it through the real command line, which proves the shell holds no per-protocol code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from clstream.arguments.groups import add_driver_arguments, add_run_arguments
from clstream.arguments.requests import run_request
from clstream.cli import main
from clstream.core.contracts import System
from clstream.core.events import Chunk
from clstream.core.protocol import Command
from clstream.core.records import Record, RunRow
from clstream.core.registry import register, unregister
from clstream.core.specs import RunSpec, sha256_file
from clstream.core.types import GenerationRequest, GenerationResult, Query
from clstream.driver.assemble import plan_job, run_basics
from clstream.driver.execute import drive
from clstream.driver.plan import Cell, Progress, RunJob, StoredDataset
from clstream.driver.request import RunRequest
from clstream.models.builtin import BuiltinReader
from clstream.render.base import Cell as TableCell
from clstream.render.base import Column, Section, Table
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

QUESTION = "What does the counter read?"


def _load(path: str) -> list[int]:
    return [int(v) for v in json.loads(Path(path).read_text())["readings"]]


def _correct(output: str, gold: int) -> int:
    found = re.findall(r"-?\d+", output.rpartition("Answer:")[2])
    return int(bool(found) and int(found[0]) == gold)


def accuracy(outputs: dict[int, str], readings: list[int]) -> float:
    """Mean over steps t of [the reading in the answer at t equals the counter at t]."""
    return sum(_correct(outputs[t], g) for t, g in enumerate(readings, 1)) / len(readings)


def _generate(args: argparse.Namespace) -> int:
    readings = [(args.seed * 7 + 3 * t) % 50 for t in range(args.steps)]
    Path(args.out).write_text(json.dumps({"readings": readings}))
    return 0


class CounterRunner:
    """The toy's only run code: one cell (the counter), and how it runs. Registering, resume,
    progress, sampling and backend flags, the failure line and exit 3 are the driver's."""

    def __init__(self, readings: list[int], spec: RunSpec, store: ResultsStore,
                 make_system: Callable[[], System]) -> None:
        self.readings, self.spec, self.store, self.make = readings, spec, store, make_system

    def cells(self) -> list[Cell]:
        return [Cell("counter", len(self.readings))]

    def totals(self) -> dict[str, int]:
        return {"probe": len(self.readings)}

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        done = self.store.done_keys(self.spec.run_id, "probe")
        system = self.make()
        await system.reset()
        for t, value in enumerate(self.readings, 1):
            await system.observe(Chunk("counter", t - 1, f"The counter now reads {value}."))
            query = Query(id=f"q@{t}", text=QUESTION, prompt=f"Question: {QUESTION}\n"
                          "End with '## Answer: <number>'.", instructions="Read the counter.")
            if query.id in done:
                continue
            response = await system.respond(query)
            self.store.put_records(self.spec.run_id, [Record(
                kind="probe", key=query.id, t=t, payload={"t": t, "output": response.text},
                error=response.error, usage=response.usage)])
            progress.update(response.error is None)


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data")
    add_run_arguments(p, "memory method")
    add_driver_arguments(p)


def _add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data")
    p.add_argument("predictions")


def _add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)


@dataclass(frozen=True)
class ToyOptions:
    data: str


def _run(args: argparse.Namespace) -> int:
    return drive(_plan(run_request(args, "toy", _add_run_arguments, ToyOptions)))


def _plan(request: RunRequest[ToyOptions]) -> RunJob:
    data = request.options.data
    readings = _load(data)
    return (plan_job(
        request, run_basics(request), protocol="toy", unit="probe",
        dataset=StoredDataset(sha256_file(data), data, {"readings": readings}),
        info={}, units={"probe": "probes"}, error_kinds=("probe",),
        open_runner=lambda spec, make: partial(CounterRunner, readings, spec,
                                               make_system=make)))


def _score(args: argparse.Namespace) -> int:
    lines = Path(args.predictions).read_text().splitlines()
    outputs = {int(row["t"]): row["output"] for row in map(json.loads, lines)}
    print(json.dumps({"accuracy": accuracy(outputs, _load(args.data))}))
    return 0


def _outputs(store: Any, run: RunRow) -> dict[int, str]:
    return {int(r["t"]): json.loads(r["payload"])["output"]
            for r in store.iter_records(run.run_id, "probe") if r["error"] is None}


class ToyProtocol:
    name = "toy"
    title = "Counter stream"
    summary = "a counter changes; the system is asked its reading after every step"
    run_command = Command("toy", "counter stream", _add_run_arguments, _run, plan=_plan,
                          options=ToyOptions)
    score_command = Command("toy", "score counter predictions", _add_score_arguments, _score)
    generators = (Command("toy-counter", "a counter stream", _add_generate_arguments,
                          _generate),)

    def summarize_run(self, store: Any, run: RunRow) -> dict[str, Any]:
        readings = store.get_dataset(run.dataset_sha256)[1]["readings"]
        outputs = _outputs(store, run)
        done = len(outputs) == len(readings)
        return {"status": {"complete": done, "errors": 0},
                "metrics": {"accuracy": accuracy(outputs, readings)} if done else None}

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        return [f"{r['system']} accuracy={r['metrics']['accuracy']:.3f}" for r in runs]

    def export_run(self, store: Any, run: RunRow, out: Path) -> int:
        rows = [{"t": t, "output": o} for t, o in sorted(_outputs(store, run).items())]
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return len(rows)

    def report_section(self, runs: list[dict[str, Any]], labels: list[str],
                       source: object) -> Section:
        table = Table("Accuracy", (Column("system"), Column("accuracy", numeric=True)),
                      [(TableCell(label), TableCell(f"{run['metrics']['accuracy']:.3f}"))
                       for label, run in zip(labels, runs, strict=True)])
        return Section("toy", self.title, tables=[table])

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "counter.json"
        return [["generate", "toy-counter", "--out", str(data)],
                ["run", "toy", str(data), "--system", "full", "--out", str(results)]]


PROTOCOL = ToyProtocol()


@pytest.fixture
def toy_registered() -> Iterator[None]:
    register("protocol", "toy", f"{__name__}:PROTOCOL")
    try:
        yield
    finally:
        unregister("protocol", "toy")


def test_a_protocol_added_by_one_registry_line_runs_through_every_verb(
    toy_registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out, preds = tmp_path / "counter.json", tmp_path / "runs", tmp_path / "preds.jsonl"
    assert main(["generate", "toy-counter", "--steps", "5", "--out", str(data)]) == 0
    assert main(["run", "toy", str(data), "--system", "window:w=1", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    (run,) = summary["runs"]
    assert run["protocol"] == "toy" and run["status"]["complete"] is True
    acc = run["metrics"]["accuracy"]
    assert main(["summary", str(out)]) == 0
    assert re.search(rf"^\[toy\] dataset [0-9a-f]{{8}}\nwindow:w=1 accuracy={acc:.3f}$",
                     capsys.readouterr().out, re.M)  # each dataset's rows under its own name
    assert main(["export", str(out), "--system", "window:w=1", "--out", str(preds)]) == 0
    assert len(preds.read_text().splitlines()) == 5
    capsys.readouterr()
    assert main(["score", "toy", str(data), str(preds)]) == 0
    assert json.loads(capsys.readouterr().out) == {"accuracy": acc}
    report = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(report)]) == 0
    html = report.read_text()
    assert "Counter stream" in html and f"{acc:.3f}" in html


def test_the_toy_metric_on_a_hand_computed_case() -> None:
    outputs = {1: "## Answer: 3", 2: "## Answer: 5", 3: "no idea", 4: "## Answer: 9"}
    assert accuracy(outputs, [3, 6, 0, 9]) == 0.5


def test_without_the_registry_line_the_verbs_are_absent() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "toy", "x", "--system", "full", "--out", "y"])
    assert exc.value.code == 2


# -- what the toy gets from the driver, with no code of its own -----------------------------


class KillingReader(BuiltinReader):
    """The builtin reader, logging each answered request's key to ``$TOY_LOG`` and killing its
    own process (SIGKILL) once ``$TOY_KILL_AFTER`` are answered; the environment is not part
    of the model spec, so a rerun without it resumes the same run."""

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        log = Path(os.environ["TOY_LOG"])
        answered = len(log.read_text().split()) if log.exists() else 0
        if answered >= int(os.environ.get("TOY_KILL_AFTER") or 1 << 30):
            os.kill(os.getpid(), signal.SIGKILL)
        results = await super().generate(requests)
        with log.open("a") as handle:
            handle.writelines(request.key + "\n" for request in requests)
        return results


RUN_TOY = """
import sys
from clstream.core.registry import register
register("protocol", "toy", "test_toy_protocol:PROTOCOL")
register("model", "killer", "test_toy_protocol:KillingReader")
from clstream.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _toy_process(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN_TOY, *argv], capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).parent,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
                               **env})


def test_the_toy_resumes_after_a_kill_without_asking_anything_twice(
    toy_registered: None, tmp_path: Path
) -> None:
    data, out, log = tmp_path / "counter.json", tmp_path / "runs", tmp_path / "requests.log"
    assert main(["generate", "toy-counter", "--steps", "8", "--out", str(data)]) == 0
    argv = ["run", "toy", str(data), "--system", "full", "--model", "killer", "--out", str(out)]
    killed = _toy_process(argv, {"TOY_LOG": str(log), "TOY_KILL_AFTER": "4"})
    assert killed.returncode == -signal.SIGKILL
    resumed = _toy_process(argv, {"TOY_LOG": str(log)})
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed full" in resumed.stderr
    keys = log.read_text().split()
    assert sorted(keys) == sorted(f"q@{t}" for t in range(1, 9))  # each probe asked once
    with ResultsStore(out) as store:
        (run,) = store.runs()
        assert store.count(run.run_id, "probe", errors=False) == 8


def test_the_toy_has_progress_lines_and_sampling_flags_from_the_driver(
    toy_registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "counter.json", tmp_path / "runs"
    assert main(["generate", "toy-counter", "--steps", "4", "--out", str(data)]) == 0
    assert main(["run", "toy", str(data), "--system", "full", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("clstream: no --model given: using the builtin reader")
    assert "clstream: progress full: 4/4, 0 errors" in err  # stderr is not a terminal here
    assert re.search(r"^ran full \([0-9a-f]{16}\): 4/4 probes, 0 errors", err, re.M)
    assert main(["run", "toy", str(data), "--system", "full", "--out", str(out),
                 "--temperature", "0.2", "--samples", "2", "--no-progress"]) == 0
    assert "progress" not in capsys.readouterr().err
    with ResultsStore(out) as store:
        runs = store.runs()
    assert len(runs) == 2  # sampling is part of the spec: another run
    sampling = [RunSpec.model_validate(r.spec).sampling for r in runs]
    assert [(s.temperature, s.n) for s in sampling] == [(0.7, 1), (0.2, 2)]
    with pytest.raises(SystemExit):
        main(["run", "toy", str(data), "--system", "full", "--out", str(out),
              "--samples", "zero"])


def test_failed_requests_end_the_toy_with_exit_3_and_the_resume_line(
    toy_registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "counter.json", tmp_path / "runs"
    assert main(["generate", "toy-counter", "--steps", "5", "--out", str(data)]) == 0
    fails = {"on": True}

    def plan(body: dict[str, Any], attempt: int) -> str | None:
        text = json.dumps(body["messages"])
        return "400" if fails["on"] and "reads 9" in text else None

    argv = ["run", "toy", str(data), "--system", "window:w=1", "--model", "openai:toy",
            "--out", str(out), "--max-retries", "0"]
    with FakeOpenAIServer(plan=plan) as server:
        argv += ["--base-url", server.base_url]
        assert main(argv) == 3
        err = capsys.readouterr().err
        line = err.strip().splitlines()[-1]
        assert "run toy ended with 1 failed probe" in line
        assert line.endswith("resume with: clstream " + " ".join(argv)) or \
            "resume with: clstream run toy" in line
        fails["on"] = False
        assert main(argv) == 0
        assert "resumed window:w=1" in capsys.readouterr().err
    with ResultsStore(out) as store:
        (run,) = store.runs()
        assert store.count(run.run_id, "probe", errors=False) == 5
        assert store.count(run.run_id, "probe", errors=True) == 0
