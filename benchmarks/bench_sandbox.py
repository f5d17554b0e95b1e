"""Sandboxed executions per second (the code evaluator of SeqMem-Eval, SPECS §2.3).

Runs three kinds of program: one that passes its tests, one whose assertion fails, and one
that never ends and is killed at its wall-clock deadline, through two paths:

- ``run_python``: one sandboxed interpreter runs the program with its tests appended;
- ``check_solution``: what the code evaluator does, the program in one sandbox and the tests
  in another (:mod:`clstream.judges.codecheck`), so two sandboxes per run.

Each kind runs sequentially and with several runs in flight at once (threads, as the SeqMem
runner evaluates); the table gives runs per second and the median time of one run. A passing
or failing run costs about one sandbox start-up per sandbox; a timed-out run costs its deadline.
``--unisolated`` measures the same paths without bubblewrap (plain subprocesses).

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 20] [--timeout-runs 4] [--timeout 0.5]
        [--concurrency 4] [--path both|run_python|check_solution] [--unisolated]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from clstream.judges.codecheck import check_solution
from clstream.judges.isolation import Isolation, resolve, unisolated

PROMPT = 'def add(a, b):\n    """Sum of a and b."""\n'
BODIES = {
    "passing": "    return a + b\n",
    "failing": "    return a - b\n",
    "timeout": "    while True:\n        pass\n",
}
TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
EXPECTED = {"passing": "ok", "failing": "fail", "timeout": "timeout"}


def run_program(kind: str, timeout_s: float, iso: Isolation) -> str:
    from clstream.judges.sandbox import run_python

    program = PROMPT + BODIES[kind] + "\n\n" + TEST + "\n\ncheck(add)\n"
    return run_python(program, timeout_s=timeout_s, isolation=iso).status


def run_checked(kind: str, timeout_s: float, iso: Isolation) -> str:
    return check_solution(PROMPT + BODIES[kind], "add", TEST, PROMPT, timeout_s=timeout_s,
                          isolation=iso).status


PATHS: dict[str, Callable[[str, float, Isolation], str]] = {
    "run_python": run_program, "check_solution": run_checked}


def bench(path: str, kind: str, runs: int, timeout_s: float, workers: int,
          iso: Isolation) -> tuple[float, float]:
    """(runs per second, median seconds per run) for ``runs`` programs, ``workers`` at once."""

    def one(_: int) -> tuple[str, float]:
        start = time.perf_counter()
        status = PATHS[path](kind, timeout_s, iso)
        return status, time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(one, range(runs)))
    wall = time.perf_counter() - start
    for status, _ in done:
        if status != EXPECTED[kind]:
            raise SystemExit(f"{path} {kind}: expected status {EXPECTED[kind]}, got {status}")
    return runs / wall, statistics.median(seconds for _, seconds in done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="passing and failing runs")
    parser.add_argument("--timeout-runs", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=0.5, help="deadline of each run (s)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--path", choices=("both", *PATHS), default="both")
    parser.add_argument("--unisolated", action="store_true",
                        help="plain subprocesses instead of bubblewrap sandboxes")
    args = parser.parse_args()
    iso = unisolated() if args.unisolated else resolve()
    paths = list(PATHS) if args.path == "both" else [args.path]
    for path in paths:
        PATHS[path]("passing", args.timeout, iso)  # warm the file cache before timing
    print(f"{'path':<16}{'program':<10}{'in flight':>10}{'runs':>7}{'runs/s':>9}"
          f"{'median ms':>11}")
    for path in paths:
        for kind in ("passing", "failing", "timeout"):
            runs = args.timeout_runs if kind == "timeout" else args.runs
            for workers in (1, args.concurrency):
                rate, median = bench(path, kind, runs, args.timeout, workers, iso)
                print(f"{path:<16}{kind:<10}{workers:>10}{runs:>7}{rate:>9.1f}"
                      f"{median * 1000:>11.0f}")
    print(f"(deadline {args.timeout:g} s; default memory limit; {iso.label()})")


if __name__ == "__main__":
    main()
