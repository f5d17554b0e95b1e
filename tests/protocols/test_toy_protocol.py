"""A protocol added from outside the package, with one registry line: a counter stream (the
text says what a counter reads; after each step the system is asked for the reading) and one
metric (accuracy). ``generate``, ``run``, ``score``, ``summary``, ``report`` and ``export`` all
work on it through the real command line, which proves the shell holds no per-protocol code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core.events import Chunk
from clstream.core.protocol import Command
from clstream.core.records import Record, RunRow
from clstream.core.registry import register, unregister
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec, sha256_file
from clstream.core.types import Query
from clstream.driver.components import build_model, run_info, system_factory
from clstream.render.base import Cell, Column, Section, Table
from clstream.store.db import ResultsStore

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


def _run(args: argparse.Namespace) -> int:
    readings = _load(args.data)
    model_spec = parse_model_spec(args.model)
    model = build_model(model_spec)
    spec = RunSpec(protocol="toy", dataset_hash=sha256_file(args.data),
                   system=ComponentSpec.parse(args.system), model=model_spec)
    make = system_factory(spec, model)

    async def go(store: ResultsStore) -> None:
        system = make()
        await system.reset()
        for t, value in enumerate(readings, 1):
            await system.observe(Chunk("counter", t - 1, f"The counter now reads {value}."))
            query = Query(id=f"q@{t}", text=QUESTION, prompt=f"Question: {QUESTION}\n"
                          "End with '## Answer: <number>'.", instructions="Read the counter.")
            response = await system.respond(query)
            store.put_records(spec.run_id, [Record(kind="probe", key=query.id, t=t,
                                                   payload={"t": t, "output": response.text},
                                                   error=response.error, usage=response.usage)])

    with ResultsStore(args.out, writer=True) as store:
        store.put_dataset(spec.dataset_hash, args.data, {"readings": readings})
        store.ensure_run(spec.run_id, "toy", spec.system.label, spec.model.label,
                         spec.dataset_hash, spec.model_dump(mode="json"),
                         run_info(model, make(), {}))
        asyncio.run(go(store))
    return 0


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
    run_command = Command("toy", "counter stream", lambda p: (
        p.add_argument("data"), p.add_argument("--system", required=True),
        p.add_argument("--model", default="builtin"), p.add_argument("--out", required=True)),
        _run)
    score_command = Command("toy", "score counter predictions", lambda p: (
        p.add_argument("data"), p.add_argument("predictions")), _score)
    generators = (Command("toy-counter", "a counter stream", lambda p: (
        p.add_argument("--steps", type=int, default=6), p.add_argument("--seed", type=int,
                                                                        default=0),
        p.add_argument("--out", required=True)), _generate),)

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
                      [(Cell(label), Cell(f"{run['metrics']['accuracy']:.3f}"))
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
    assert f"[toy]\nwindow:w=1 accuracy={acc:.3f}" in capsys.readouterr().out
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
