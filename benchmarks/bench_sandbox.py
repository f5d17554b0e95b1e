"""Sandboxed executions per second (the code evaluator of SeqMem-Eval, SPECS §2.3).

Runs three kinds of program through :func:`clstream.judges.sandbox.run_python`: one that
passes its tests, one whose assertion fails, and one that never ends and is killed at its
wall-clock deadline. Each kind runs sequentially and with several runs in flight at once
(threads, as the SeqMem runner evaluates), and the table gives runs per second and the median
time of one run. A passing or failing run costs about one interpreter start-up; a timed-out run
costs its deadline.

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 20] [--timeout-runs 4] [--timeout 0.5]
        [--concurrency 4]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from clstream.judges.sandbox import SandboxResult, run_python

SOLUTION = '''
def add(a, b):
    return a + b
'''
PROGRAMS = {
    "passing": SOLUTION + "\nassert add(2, 3) == 5\nassert add(-1, 1) == 0\n",
    "failing": SOLUTION + "\nassert add(2, 3) == 6, 'add(2, 3) should be 6'\n",
    "timeout": SOLUTION + "\nwhile True:\n    pass\n",
}
EXPECTED = {"passing": "ok", "failing": "fail", "timeout": "timeout"}


def one(kind: str, timeout_s: float) -> tuple[SandboxResult, float]:
    start = time.perf_counter()
    result = run_python(PROGRAMS[kind], timeout_s=timeout_s)
    return result, time.perf_counter() - start


def bench(kind: str, runs: int, timeout_s: float, workers: int) -> tuple[float, float]:
    """(runs per second, median seconds per run) for ``runs`` programs, ``workers`` at once."""
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda _: one(kind, timeout_s), range(runs)))
    wall = time.perf_counter() - start
    for result, _ in done:
        if result.status != EXPECTED[kind]:
            raise SystemExit(f"{kind}: expected status {EXPECTED[kind]}, got {result.status} "
                             f"({result.reason or result.stderr[-200:]})")
    return runs / wall, statistics.median(seconds for _, seconds in done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="passing and failing runs")
    parser.add_argument("--timeout-runs", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=0.5, help="deadline of each run (s)")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    one("passing", args.timeout)  # warm the file cache before timing
    print(f"{'program':<10}{'in flight':>10}{'runs':>7}{'runs/s':>9}{'median ms':>11}")
    for kind in ("passing", "failing", "timeout"):
        runs = args.timeout_runs if kind == "timeout" else args.runs
        for workers in (1, args.concurrency):
            rate, median = bench(kind, runs, args.timeout, workers)
            print(f"{kind:<10}{workers:>10}{runs:>7}{rate:>9.1f}{median * 1000:>11.0f}")
    print(f"(deadline {args.timeout:g} s; default memory limit; one interpreter per run)")


if __name__ == "__main__":
    main()
