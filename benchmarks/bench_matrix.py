"""One matrix run: ``clstream run matrix`` over the four protocols' small default data with a
few systems and the builtin model, as a process (docs/design.md §11.5).

Three timings: the first run into an empty directory (data generated, every cell run), a rerun
of the finished matrix (nothing to do but check: the floor a resume pays), and
``clstream summary DIR`` (the per-protocol tables and the cross-protocol view). Each is the
median of ``--repeats`` rounds, each round in a fresh directory.

    .venv/bin/python benchmarks/bench_matrix.py [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from cli_timing import ProcessTime, machine, markdown_table, median_time, run_cli, write_section

SYSTEMS = "memory-free,rag:k=4,full"
PROTOCOLS = "clbench,imprint,oaks,seqmem"


def one_round() -> tuple[ProcessTime, ProcessTime, ProcessTime]:
    root = Path(tempfile.mkdtemp(prefix="bench-matrix-"))
    try:
        argv = ["run", "matrix", "--protocols", PROTOCOLS, "--systems", SYSTEMS, "--model",
                "builtin", "--out", str(root / "m"), "--no-progress"]
        first = run_cli(argv)
        rerun = run_cli(argv)
        summary = run_cli(["summary", str(root / "m")])
        return first, rerun, summary
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    where = machine()
    print(f"machine: {where}")
    rounds = [one_round() for _ in range(args.repeats)]
    names = ("run matrix (empty directory)", "run matrix (rerun, finished)",
             "summary (with the cross-protocol view)")
    rows = []
    for i, name in enumerate(names):
        t = median_time([r[i] for r in rounds])
        rows.append([name, f"{t.wall_s:.2f}", f"{t.cpu_s:.2f}", f"{t.peak_mib:.0f}"])
        print(f"{name}: wall {t.wall_s:.2f} s, CPU {t.cpu_s:.2f} s, peak {t.peak_mib:.0f} MiB")
    table = markdown_table(["command", "wall s", "CPU s", "peak MiB"], rows)
    text = (f"Machine: {where}. Protocols {PROTOCOLS}, systems {SYSTEMS}, builtin model; "
            f"{args.repeats} rounds, medians.\n\n{table}")
    if args.readme:
        write_section("matrix", text)


if __name__ == "__main__":
    main()
