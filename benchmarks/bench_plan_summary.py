"""CPU of ``clstream plan`` against the run it plans, and of ``summary`` and ``report`` on a
small results directory.

The README's two-system OAKS plan (``--system full --system rag:k=4``, an ``openai:`` model so
prompts are counted with the per-message template tokens) on a generated bAbI stream (the
README's own, 4 documents x 65 chunks, by default), against ``clstream run`` of the same
systems with the builtin model; then ``clstream summary`` and ``clstream report`` of the
directory such a run leaves on a small stream (3 documents x 40 chunks: two runs, a paired
comparison). Every command runs as a process, ``--repeats`` times; the figures are medians of
CPU seconds (user + system of the child), and "start-up" is ``clstream --version``, a floor no
command goes below.

OAKS answers feed nothing back, so a plan of these systems does not run them: it walks the
stream, counts each request from its prompt parts, replays them through the prefix cache and
reads a bounded sample of them as the builtin reader reads them (docs/plan.md §2).
Target: a plan at most a tenth of the run's CPU (plan / run <= 0.1), and ``summary`` and
``report`` of a small directory under one second of CPU each, start-up included.

    .venv/bin/python benchmarks/bench_plan_summary.py [--docs 4] [--chunks 65] [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from cli_timing import machine, markdown_table, run_cli, startup, write_section

SYSTEMS = ["--system", "full", "--system", "rag:k=4"]
PLAN_TARGET = 0.1
SMALL = (3, 40)
"""Documents and chunks of the stream whose results directory ``summary`` and ``report`` read."""
READ_TARGET_S = 1.0


def generate(path: Path, docs: int, chunks: int, chunk_tokens: int) -> None:
    run_cli(["generate", "oaks-babi", "--seed", "7", "--docs", str(docs), "--chunks",
             str(chunks), "--chunk-tokens", str(chunk_tokens), "--out", str(path)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=65)
    parser.add_argument("--chunk-tokens", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as scratch:
        data = Path(scratch) / "oaks.json"
        generate(data, args.docs, args.chunks, args.chunk_tokens)
        results = Path(scratch) / "results"
        runs = []
        for _ in range(args.repeats):  # a fresh directory each time: a rerun would resume
            shutil.rmtree(results, ignore_errors=True)
            runs.append(run_cli(["run", "oaks", str(data), *SYSTEMS, "--model", "builtin",
                                 "--out", str(results), "--no-progress"]))
        run = sorted(runs, key=lambda t: t.cpu_s)[len(runs) // 2]
        plan = run_cli(["plan", "oaks", str(data), *SYSTEMS, "--model", "openai:qwen"],
                       repeats=args.repeats)
        small = Path(scratch) / "small.json"
        generate(small, *SMALL, args.chunk_tokens)
        shutil.rmtree(results)
        run_cli(["run", "oaks", str(small), *SYSTEMS, "--model", "builtin", "--out",
                 str(results), "--no-progress"])
        summary = run_cli(["summary", str(results)], repeats=args.repeats)
        report = run_cli(["report", str(results), "--out", str(Path(scratch) / "r.html")],
                         repeats=args.repeats)
    base = startup(args.repeats)
    ratio = plan.cpu_s / run.cpu_s
    rows = [
        ["run (builtin model)", f"{run.cpu_s:.2f}", f"{run.wall_s:.2f}", f"{run.peak_mib:.0f}",
         "-"],
        ["plan (openai:qwen)", f"{plan.cpu_s:.2f}", f"{plan.wall_s:.2f}",
         f"{plan.peak_mib:.0f}",
         f"{ratio:.2f} x run ({'met' if ratio <= PLAN_TARGET else 'NOT met'})"],
        [f"summary DIR ({SMALL[0]} x {SMALL[1]})", f"{summary.cpu_s:.2f}",
         f"{summary.wall_s:.2f}",
         f"{summary.peak_mib:.0f}", "met" if summary.cpu_s < READ_TARGET_S else "NOT met"],
        [f"report DIR ({SMALL[0]} x {SMALL[1]})", f"{report.cpu_s:.2f}",
         f"{report.wall_s:.2f}", f"{report.peak_mib:.0f}",
         "met" if report.cpu_s < READ_TARGET_S else "NOT met"],
        ["start-up (--version)", f"{base.cpu_s:.2f}", f"{base.wall_s:.2f}",
         f"{base.peak_mib:.0f}", "-"],
    ]
    for row in rows:
        print("  ".join(row), flush=True)
    table = markdown_table(["command", "CPU s", "wall s", "peak MiB", "target"], rows, "lrrrl")
    print(table)
    if args.readme:
        write_section("plan-summary", f"Machine: {machine()}. OAKS bAbI stream of {args.docs} "
                      f"documents x {args.chunks} chunks x {args.chunk_tokens} tokens, "
                      f"`{' '.join(SYSTEMS)}`; `summary` and `report` of the directory "
                      f"those systems' run leaves on {SMALL[0]} x {SMALL[1]} chunks; medians "
                      f"of {args.repeats}.\n\n{table}")


if __name__ == "__main__":
    main()
