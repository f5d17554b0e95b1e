"""CL-Bench runs as users start them: ``clstream run clbench`` as a process, builtin model.

Two measurements, each a fresh results directory and a fresh ``clstream`` process:

- steps: each task alone (``--task T --system full --rollouts 1``, default schedule) and the
  environment steps it stored (step records, both arms), per second of the process's wall time
  (start-up, schedule building and store writes included) and per second of the run's own wall
  time as the store records it;
- schedule: the whole default schedule of every task for several systems (default ``full``,
  ``window``, ``icl``, ``memory-free``) and rollouts (default 5) in one process: wall time,
  instances, steps and peak memory (maximum resident set size of the process, from
  ``/usr/bin/time -v`` where present, else ``getrusage(RUSAGE_CHILDREN)``).

A third measures the requests per second the runner sustains against an OpenAI-compatible
server on 127.0.0.1 started in this process (``tests/models/fake_openai_server.py``, answering
every chat request with the builtin model's JSON action): ``run clbench --task
database_exploration --schedule short --system full --model openai:bench --rollouts 5`` as a
subprocess (bounded by a timeout), once with ``--max-concurrency 1`` and once with the
default; requests served over the process's wall seconds.

    .venv/bin/python benchmarks/bench_clbench.py [--rollouts 5] [--parallel 4]
        [--system full --system window ...] [--skip-steps] [--skip-schedule] [--skip-server]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from clstream.protocols.clbench.envs import ENVIRONMENTS
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
from fake_openai_server import PolicyServer  # noqa: E402

CLI = [sys.executable, "-m", "clstream"]
SYSTEMS = ("full", "window", "icl", "memory-free")
TIME = shutil.which("time")  # GNU time (/usr/bin/time), for -v


def run_cli(argv: list[str]) -> tuple[float, float]:
    """Run ``clstream ARGV``; (wall seconds, peak resident MiB of the process)."""
    cmd = [*CLI, *argv]
    if TIME:
        cmd = [TIME, "-v", *cmd]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"clstream {' '.join(argv)} failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    kib = int(found.group(1)) if found else resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, kib / 1024


def stored(out: Path) -> tuple[Counter[str], int, float]:
    """(steps per task, instances, summed run wall seconds) of every run in ``out``."""
    steps: Counter[str] = Counter()
    instances = 0
    wall = 0.0
    with ResultsStore(out) as store:
        for run in store.runs("clbench"):
            wall += run.wall_s
            for rec in store.read_records(run.run_id, "step", errors=False):
                steps[rec.stream.split("/")[0]] += 1
            instances += sum(1 for _ in store.read_records(run.run_id, "instance",
                                                           errors=False))
    return steps, instances, wall


def base(out: Path, parallel: int) -> list[str]:
    return ["run", "clbench", "--model", "builtin", "--out", str(out), "--no-progress",
            "--parallel", str(parallel)]


def bench_steps(work: Path, parallel: int) -> None:
    print(f"{'task':<28}{'steps':>7}{'process s':>11}{'steps/s':>9}{'run s':>8}{'steps/s':>9}")
    for task in sorted(ENVIRONMENTS):
        out = work / f"steps-{task}"
        wall, _ = run_cli([*base(out, parallel), "--task", task, "--system", "full",
                           "--rollouts", "1"])
        steps, _, run_wall = stored(out)
        n = steps[task]
        print(f"{task:<28}{n:>7}{wall:>11.2f}{n / wall:>9.0f}{run_wall:>8.2f}"
              f"{n / run_wall:>9.0f}")


def bench_schedule(work: Path, systems: list[str], rollouts: int, parallel: int) -> None:
    out = work / "schedule"
    argv = [*base(out, parallel), "--rollouts", str(rollouts)]
    for system in systems:
        argv += ["--system", system]
    wall, peak = run_cli(argv)
    steps, instances, run_wall = stored(out)
    total = sum(steps.values())
    print(f"\n{len(ENVIRONMENTS)} tasks x {len(systems)} systems ({', '.join(systems)}) x "
          f"{rollouts} rollouts (+ stateless arm), default schedule, builtin model")
    print(f"{'instances':>10}{'steps':>9}{'process s':>11}{'runs s':>9}{'steps/s':>9}"
          f"{'peak RSS MiB':>14}")
    print(f"{instances:>10}{total:>9}{wall:>11.1f}{run_wall:>9.1f}{total / wall:>9.0f}"
          f"{peak:>14.0f}")


SERVER_TIMEOUT_S = 600.0


def bench_server(work: Path, rollouts: int) -> None:
    print(f"\nloopback OpenAI-compatible server: database_exploration, short schedule, full, "
          f"{rollouts} rollouts (+ stateless arm)")
    print(f"{'max concurrency':<18}{'requests':>9}{'process s':>11}{'req/s':>8}")
    for label, extra in (("1", ["--max-concurrency", "1"]), ("default", [])):
        out = work / f"server-{label}"
        with PolicyServer(model="bench") as server:
            argv = [*CLI, "run", "clbench", "--task", "database_exploration", "--schedule",
                    "short", "--system", "full", "--model", "openai:bench", "--base-url",
                    server.base_url, "--rollouts", str(rollouts), "--out", str(out),
                    "--no-progress", *extra]
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=SERVER_TIMEOUT_S)
            wall = time.perf_counter() - start
            served = len(server.requests)
        if done.returncode != 0:
            raise SystemExit(f"run clbench against the server failed ({done.returncode}):\n"
                             f"{done.stderr[-2000:]}")
        print(f"{label:<18}{served:>9}{wall:>11.2f}{served / wall:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--system", action="append", default=None,
                        help=f"repeatable (default {', '.join(SYSTEMS)})")
    parser.add_argument("--skip-steps", action="store_true")
    parser.add_argument("--skip-schedule", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-clbench-") as tmp:
        work = Path(tmp)
        if not args.skip_steps:
            bench_steps(work, args.parallel)
        if not args.skip_schedule:
            bench_schedule(work, args.system or list(SYSTEMS), args.rollouts, args.parallel)
        if not args.skip_server:
            bench_server(work, args.rollouts)
    print(f"(python {sys.version.split()[0]}; {os.cpu_count()} CPUs; peak memory from "
          f"{'/usr/bin/time -v' if TIME else 'getrusage'})")


if __name__ == "__main__":
    main()
