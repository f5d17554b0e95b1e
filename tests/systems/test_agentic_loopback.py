"""The agentic memories (memagent, amem, hipporag) on all four protocols through an
OpenAI-compatible server: the loopback server answers every request as the builtin model does,
so each run must store exactly the answers of the same run with the builtin model in process,
with every memory-building call sent over HTTP and none failed (docs/agentic.md)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import PolicyServer
from tiny_streams import tiny_streams

from clstream.cli import main

SYSTEMS = ("memagent:budget=256", "amem", "hipporag")
UNITS = {"oaks": "probe", "seqmem": "online", "clbench": "instance", "imprint": "item"}


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tiny_streams(tmp_path_factory.mktemp("streams"), 4, pairs=False)


def argv(protocol: str, streams: dict[str, Path], out: Path) -> list[str]:
    data = (["--task", "sales_prediction", "--schedule", "short", "--rollouts", "1"]
            if protocol == "clbench" else [str(streams[protocol])])
    extra = ["--samples", "1"] if protocol == "imprint" else []
    systems = [a for s in SYSTEMS for a in ("--system", s)]
    return ["run", protocol, *data, *extra, *systems, "--seed", "4", "--out", str(out),
            "--no-progress"]


def answers(out: Path, unit: str) -> dict[str, list[Any]]:
    """Per system, its stored answers (wall time and token counts left out: the server
    counts tokens its own way)."""
    with sqlite3.connect(out / "results.sqlite") as conn:
        rows = conn.execute(
            "SELECT runs.system, records.stream, records.key, records.payload, records.error "
            "FROM records JOIN runs ON runs.run_id = records.run_id WHERE records.kind=? "
            "ORDER BY runs.system, records.stream, records.key", (unit,)).fetchall()
    out_: dict[str, list[Any]] = {}
    for system, stream, key, payload, error in rows:
        body = {k: v for k, v in json.loads(payload).items()
                if k != "timings" and not k.endswith("_s") and "tokens" not in k}
        out_.setdefault(system, []).append((stream, key, body, error))
    return out_


@pytest.mark.parametrize("protocol", ["oaks", "seqmem", "clbench", "imprint"])
def test_a_server_run_stores_the_builtin_runs_answers(protocol: str, streams: dict[str, Path],
                                                      tmp_path: Path) -> None:
    local, served = tmp_path / "local", tmp_path / "served"
    assert main([*argv(protocol, streams, local), "--model", "builtin"]) == 0
    with PolicyServer(model="served") as server:
        assert main([*argv(protocol, streams, served), "--model", "openai:served",
                     "--base-url", server.base_url]) == 0
        sent = len(server.requests)
    expected = answers(local, UNITS[protocol])
    assert sorted(expected) == sorted(SYSTEMS)
    for system, rows in answers(served, UNITS[protocol]).items():
        assert rows and all(error is None for *_, error in rows), system
        assert [r[:3] for r in rows] == [r[:3] for r in expected[system]], system
    with sqlite3.connect(served / "results.sqlite") as conn:
        updates = conn.execute("SELECT COUNT(*) FROM records WHERE stage='update' "
                               "AND error IS NULL").fetchone()[0]
    assert updates > 0 and sent > updates
