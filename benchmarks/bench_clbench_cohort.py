"""The cohort-studies environment (docs/clbench.md §4.5): as users run it, and on its own.

- process: ``clstream run clbench --task cohort_studies --model builtin --system icl
  --schedule short --rollouts 1`` as a process (``python -m clstream``) in a fresh results
  directory; the environment steps it stored (both arms) per second of the process's wall time
  (start-up, the lifelines import, schedule building and store writes included) and per
  second of the run's own wall time as the store records it;
- environment: the environment alone in this process, driven by its builtin policy
  (:class:`~clstream.protocols.clbench.envs.cohort.policy.PooledCohorts`): the stateless arm
  and one stateful rollout of each schedule, steps per second (lifelines already imported);
- generation: building the environment (the 50,000-patient population, the true curves of
  the 36 cohorts) and the population alone, median of ``--repeats``.

    .venv/bin/python benchmarks/bench_clbench_cohort.py [--repeats 5] [--readme]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from statistics import median

from cli_timing import machine, run_cli, write_section

from clstream.protocols.clbench.envs.cohort.environment import CohortEnv
from clstream.protocols.clbench.envs.cohort.population import make_population
from clstream.protocols.clbench.policies import PooledCohorts, play_stateful, play_stateless
from clstream.store.db import ResultsStore

TASK = "cohort_studies"


def stored(out: Path) -> tuple[int, float]:
    """(step records, summed run wall seconds) of the runs in ``out``."""
    steps, wall = 0, 0.0
    with ResultsStore(out) as store:
        for run in store.runs("clbench"):
            wall += run.wall_s
            steps += sum(1 for _ in store.read_records(run.run_id, "step", errors=False))
    return steps, wall


def bench_process(repeats: int) -> list[str]:
    rows = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="bench-cohort-") as work:
            out = Path(work) / "results"
            done = run_cli(["run", "clbench", "--task", TASK, "--model", "builtin", "--system",
                            "icl", "--schedule", "short", "--rollouts", "1", "--out", str(out),
                            "--no-progress"])
            steps, run_wall = stored(out)
            rows.append((done.wall_s, run_wall, steps))
    wall, run_wall = median(r[0] for r in rows), median(r[1] for r in rows)
    steps = rows[0][2]
    return ["process: run clbench --task cohort_studies --system icl --model builtin "
            "--schedule short --rollouts 1",
            f"{'steps':>7}{'process s':>11}{'steps/s':>9}{'run s':>8}{'steps/s':>9}",
            f"{steps:>7}{wall:>11.2f}{steps / wall:>9.0f}{run_wall:>8.2f}"
            f"{steps / run_wall:>9.0f}"]


def bench_environment() -> list[str]:
    lines = ["environment alone, builtin policy (stateless arm + stateful rollout 0)",
             f"{'schedule':<10}{'instances':>10}{'steps':>7}{'seconds':>9}{'steps/s':>9}"
             f"{'stateless':>11}{'stateful':>10}{'r_max':>8}"]
    CohortEnv(0, "short").reference("herald-suburban-1")  # lifelines imported before timing
    for schedule in ("short", "default"):
        env = CohortEnv(0, schedule)
        policy = PooledCohorts()
        start = time.perf_counter()
        stateless = play_stateless(env, policy)
        stateful = play_stateful(env, policy, 0)
        seconds = time.perf_counter() - start
        steps = sum(r.steps for r in stateless + stateful)
        n = len(stateless)
        r_max = sum(env.ceiling(i) for i in env.schedule.instance_ids) / n
        lines.append(f"{schedule:<10}{2 * n:>10}{steps:>7}{seconds:>9.2f}{steps / seconds:>9.0f}"
                     f"{sum(r.reward for r in stateless) / n:>11.4f}"
                     f"{sum(r.reward for r in stateful) / n:>10.4f}{r_max:>8.4f}")
    return lines


def bench_generation(repeats: int) -> list[str]:
    def timed(make: object) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            make()  # type: ignore[operator]
            times.append(time.perf_counter() - start)
        return median(times)

    env_s = timed(lambda: CohortEnv(0))
    pop_s = timed(lambda: make_population(0))
    return [f"generation (median of {repeats}): environment {env_s * 1000:.0f} ms, "
            f"population of 50,000 {pop_s * 1000:.0f} ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--readme", action="store_true", help="rewrite the README section")
    args = parser.parse_args()
    lines = [*bench_process(max(1, args.repeats // 2)), "", *bench_environment(), "",
             *bench_generation(args.repeats)]
    text = "\n".join(lines)
    print(f"machine: {machine()}\n{text}")
    if args.readme:
        write_section("output-bench_clbench_cohort", f"Machine: {machine()}.\n\n```\n{text}\n```")


if __name__ == "__main__":
    main()
