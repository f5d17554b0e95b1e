"""A cell carried out in a shard (as the Ray executor's workers do) brings its model calls back:
the run's transcripts are those a local run stores."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from clstream.arguments.requests import command_request
from clstream.cli import build_parser, main
from clstream.core.registry import resolve
from clstream.driver.cells import LocalExecutor
from clstream.driver.execute import drive
from clstream.driver.plan import Cell, PlannedRun, Progress, RunJob
from clstream.driver.shard_worker import run_cell_in_shard
from clstream.store.db import ResultsStore
from clstream.store.shard import read_run_rows


class InProcessShards:
    """The Ray executor's way with cells (a shard each, rows committed by the driver),
    without Ray: each cell in this process, one after another."""

    async def run_cells(self, cells: Sequence[Cell],
                        run_cell: Callable[[Cell], Awaitable[None]], limit: int) -> list[str]:
        return await LocalExecutor().run_cells(cells, run_cell, limit)

    async def run_shards(self, plan: PlannedRun, store: ResultsStore, cells: Sequence[Cell],
                         progress: Progress) -> list[str]:
        assert plan.recipe is not None
        for cell in cells:
            seed = read_run_rows(store, plan.spec.run_id)
            outcome = await asyncio.to_thread(run_cell_in_shard, plan.recipe, plan.spec.run_id,
                                              cell, seed)
            store.put_rows(plan.spec.run_id, outcome.changes.records, outcome.changes.states,
                           outcome.changes.transcripts)
            assert outcome.error is None
        return []


def calls(results: Path) -> dict[str, list[dict[str, Any]]]:
    """Every run's calls, less what no rerun reproduces (when each ended, how long it took)."""
    with ResultsStore(results) as store:
        return {r.run_id: [{k: v for k, v in c.items() if k not in ("ended_at", "latency_s")}
                           for c in store.calls(r.run_id)] for r in store.runs()}


def test_shards_keep_the_transcripts_of_a_local_run(tmp_path: Path) -> None:
    data = tmp_path / "babi.json"
    assert main(["generate", "oaks-babi", "--seed", "2", "--docs", "2", "--chunks", "3",
                 "--chunk-tokens", "64", "--max-questions", "2", "--out", str(data)]) == 0
    argv = ["run", "oaks", str(data), "--system", "icl", "--system", "rag:k=2",
            "--model", "builtin", "--no-progress", "--out"]
    assert main([*argv, str(tmp_path / "local")]) == 0
    args = build_parser([*argv, str(tmp_path / "shards")]).parse_args(
        [*argv, str(tmp_path / "shards")])
    oaks = resolve("protocol", "oaks")
    job = oaks.run_command.planned(command_request(args, "oaks", oaks.run_command))
    assert isinstance(job, RunJob)
    assert drive(job, executor=InProcessShards()) == 0
    local, sharded = calls(tmp_path / "local"), calls(tmp_path / "shards")
    assert sharded == local
    assert all(len(c) == 12 for c in local.values())
