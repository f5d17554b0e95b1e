"""Cost of SeqMem-Eval's retrospective evaluation (BWT / forgetting, SPECS §2.1-2.2).

Measuring BWT(t) and F(t) re-answers every past task x_tau under the later state M_{tau+t},
for every horizon t: sum over t of (T - t) extra probes, against T online answers. This runs
``clstream run seqmem`` as a process (``python -m clstream``) on the synthetic stream with
``exp-rag`` and the builtin model for several stream lengths T and horizon sets, exactly and
with ``--retro-sample 0.25`` (a seeded quarter of the tasks), and prints the number of retro
probes, all model calls, the process's CPU and wall seconds, and the CPU added over the same
run without re-evaluation (``--retro-sample 0``; hold-out checkpoints are the default in every
row). Start-up (the same command on the finished results directory: nothing left to do) is
printed once per T. Probe counts are exact for any model; the times are those of the offline
reader, so they show the harness's own overhead per probe, not a model's.

    .venv/bin/python benchmarks/bench_seqmem_retro.py [--lengths 100,200,400] [--holdout 10]
        [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from cli_timing import ProcessTime, machine, markdown_table, run_cli, write_section

from clstream.protocols.seqmem.plan import default_horizons
from clstream.store.db import ResultsStore

SYSTEM = "exp-rag"


def run_once(data: Path, horizons: str, sample: float, out: Path, repeats: int
             ) -> tuple[ProcessTime, dict[str, int]]:
    """A complete run into fresh directories (median of ``repeats``): its process figures,
    and its retro probe and model call counts."""
    times = []
    for r in range(repeats):
        target = out.with_name(f"{out.name}_{r}")
        times.append(run_cli(["run", "seqmem", str(data), "--system", SYSTEM, "--model",
                              "builtin", "--horizons", horizons, "--retro-sample", str(sample),
                              "--no-progress", "--out", str(target)]))
    with ResultsStore(target) as store:
        (row,) = store.runs()
        kinds = ("online", "holdout", "retro")
        counts = {k: store.count(row.run_id, k, errors=False) for k in kinds}
        counts["calls"] = sum(counts.values()) + store.count(row.run_id, "call")
    times.sort(key=lambda t: t.cpu_s)
    return times[len(times) // 2], counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="100,200,400")
    parser.add_argument("--holdout", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="runs per row (median)")
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    rows: list[list[object]] = []
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in lengths:
            data = root / f"stream{n}.json"
            run_cli(["generate", "seqmem-synthetic", "--seed", "1", "--tasks", str(n),
                     "--holdout", str(args.holdout), "--out", str(data)])
            base, base_counts = run_once(data, "1", 0.0, root / f"base{n}", args.repeats)
            start = run_cli(["run", "seqmem", str(data), "--system", SYSTEM, "--model",
                             "builtin", "--horizons", "1", "--retro-sample", "0",
                             "--no-progress", "--out", str(root / f"base{n}_0")],
                            repeats=args.repeats)
            rows.append([n, "none", "-", 0, f"{base_counts['calls']:,}", f"{base.cpu_s:.2f}",
                         f"{base.wall_s:.2f}", "-", "-", f"{start.cpu_s:.2f}"])
            print("  ".join(str(c) for c in rows[-1]), flush=True)
            sets = {"1,2,4": "1,2,4",
                    "powers of 2 < T": ",".join(map(str, default_horizons(n)))}
            for name, horizons in sets.items():
                for sample in (1.0, 0.25):
                    label = f"{n}_{horizons.replace(',', '-')}_{sample}"
                    run, counts = run_once(data, horizons, sample, root / label, args.repeats)
                    added = run.cpu_s - base.cpu_s
                    per = 1000 * added / counts["retro"] if counts["retro"] else 0.0
                    rows.append([n, name, f"{sample:g}", f"{counts['retro']:,}",
                                 f"{counts['calls']:,}", f"{run.cpu_s:.2f}", f"{run.wall_s:.2f}",
                                 f"{added:.2f}", f"{per:.2f}", "-"])
                    print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(["T", "horizons", "sample", "retro", "calls", "CPU s", "wall s",
                            "added CPU s", "ms CPU/retro probe", "start-up CPU s"], rows,
                           "rlrrrrrrrr")
    print(table)
    if args.readme:
        write_section("seqmem-retro", f"Machine: {machine()}. `{SYSTEM}`, builtin model, "
                      f"{args.holdout} hold-out tasks at the default checkpoints in every row; "
                      f"median of {args.repeats} runs.\n\n{table}")


if __name__ == "__main__":
    main()
