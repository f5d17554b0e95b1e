"""Cost of SeqMem-Eval's retrospective evaluation (BWT / forgetting, SPECS §2.1-2.2).

Measuring BWT(t) and F(t) re-answers every past task x_tau under the later state M_{tau+t},
for every horizon t: sum over t of (T - t) extra probes, against T online answers. This runs
the synthetic stream with ``exp-rag`` and the builtin model for several stream lengths T and
horizon sets, exactly and with ``--retro-sample 0.25`` (a seeded quarter of the tasks), and
prints the number of retro probes, all model calls, wall time, and the wall time added over
the same run without re-evaluation (hold-out checkpoints are the default in every row).
Probe counts are exact for any model; the times are those of the offline reader, so they show
the harness's own overhead per probe, not a model's.

    .venv/bin/python benchmarks/bench_seqmem_retro.py [--lengths 50,100,200,400] [--holdout 10]
        [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from clstream.core.specs import ComponentSpec, RunSpec
from clstream.models.builtin import BuiltinReader
from clstream.protocols.common import system_factory
from clstream.protocols.seqmem.plan import SeqMemPlan, default_horizons
from clstream.protocols.seqmem.runner import SeqMemRunner
from clstream.protocols.seqmem.synthetic import generate_seqmem_synthetic, synthetic_stream
from clstream.store.db import ResultsStore

SYSTEM = "exp-rag"


def run_once(data: Any, horizons: list[int], sample: float, root: Path) -> dict[str, float]:
    """One complete run in a fresh store: probe and call counts, and wall seconds."""
    plan = SeqMemPlan.build(len(data.tasks), horizons=horizons, retro_sample=sample, seed=0)
    spec = RunSpec(protocol="seqmem", dataset_hash=data.sha256,
                   system=ComponentSpec.parse(SYSTEM), model=ComponentSpec(name="builtin"),
                   params=plan.as_params())
    with ResultsStore(tempfile.mkdtemp(dir=root), writer=True) as store:
        runner = SeqMemRunner(data.tasks, data.holdout, spec, store,
                              system_factory(spec, BuiltinReader()), data.evaluator().evaluate,
                              plan, {"path": "synthetic", "n_tasks": len(data.tasks)},
                              show_progress=False)
        runner.register({})
        start = time.perf_counter()
        result = asyncio.run(runner.run())
        wall = time.perf_counter() - start
        answers = result.online_done + result.holdout_done + result.retro_done
        calls = answers + store.count(result.run_id, "call")
    return {"retro": result.retro_done, "holdout": result.holdout_done, "calls": calls,
            "wall": wall}


def timed(data: Any, horizons: list[int], sample: float, root: Path, repeats: int
          ) -> dict[str, float]:
    """:func:`run_once` repeated; counts are identical, the wall time is the median."""
    runs = [run_once(data, horizons, sample, root) for _ in range(repeats)]
    return {**runs[0], "wall": statistics.median(r["wall"] for r in runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="50,100,200,400")
    parser.add_argument("--holdout", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="runs per row (median wall)")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"{'T':>5}  {'horizons':<20}{'sample':>7}{'retro':>8}{'calls':>8}{'wall s':>9}"
          f"{'added s':>9}{'ms/probe':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in lengths:
            data = synthetic_stream(generate_seqmem_synthetic(seed=1, tasks=n,
                                                              holdout=args.holdout))
            base = timed(data, [], 1.0, root, args.repeats)
            print(f"{n:>5}  {'none':<20}{'-':>7}{0:>8}{base['calls']:>8.0f}"
                  f"{base['wall']:>9.2f}{'-':>9}{'-':>10}")
            sets = {"1,2,4": [1, 2, 4], "powers of 2 < T": default_horizons(n)}
            for name, horizons in sets.items():
                for sample in (1.0, 0.25):
                    r = timed(data, horizons, sample, root, args.repeats)
                    added = r["wall"] - base["wall"]
                    per = 1000 * added / r["retro"] if r["retro"] else 0.0
                    print(f"{n:>5}  {name:<20}{sample:>7g}{r['retro']:>8.0f}{r['calls']:>8.0f}"
                          f"{r['wall']:>9.2f}{added:>9.2f}{per:>10.2f}")
    print(f"(system {SYSTEM}, builtin model, {args.holdout} hold-out tasks at the default "
          f"checkpoints in every row; median wall of {args.repeats} runs)")


if __name__ == "__main__":
    main()
