"""The sales workspace (docs/clbench.md §4.3): what one program step costs, and the builtin
forecaster's steps per second.

One step is ``SalesEnv.step({"tool": "run_python", ...})`` at the first step of a year: the
workspace is packed into a fresh sandbox (bubblewrap start-up), the program runs and the
workspace comes back. Three programs: the builtin forecaster's ``forecast.py`` (standard
library only), one that imports numpy and fits a least-squares line, and one that imports
numpy and scikit-learn and fits a Poisson regression to the year's export. Each figure is the
median over ``--repeats`` steps. Then the builtin forecaster plays the default schedule
statelessly, statefully and from notes; steps/s counts every step of an arm over its wall time.

    .venv/bin/python benchmarks/bench_clbench_sales_workspace.py [--repeats 10] [--readme]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from cli_timing import machine, markdown_table, write_section

from clstream.judges.isolation import allowed_packages
from clstream.protocols.clbench.envs.sales.environment import WORKSPACE_PACKAGES, SalesEnv
from clstream.protocols.clbench.envs.sales.policy import SalesForecaster
from clstream.protocols.clbench.envs.sales.program import FORECAST_PROGRAM
from clstream.protocols.clbench.policies import (
    InstanceRun,
    play_stateful,
    play_stateless,
    play_with_notes,
)

NUMPY_FIT = """
import csv, glob
import numpy as np
rows = list(csv.reader(open(sorted(glob.glob('data/sales_*.csv'))[0])))[1:]
y = np.array([float(r[3]) for r in rows])
x = np.vstack([np.ones(len(y)), np.arange(len(y))]).T
print(np.linalg.lstsq(x, y, rcond=None)[0])
"""
SKLEARN_FIT = """
import csv, glob
import numpy as np
from sklearn.linear_model import PoissonRegressor
rows = list(csv.reader(open(sorted(glob.glob('data/sales_*.csv'))[0])))[1:]
y = np.array([float(r[3]) for r in rows])
x = np.arange(len(y), dtype=float).reshape(-1, 1)
print(PoissonRegressor(alpha=0.0, max_iter=300).fit(x, y).coef_)
"""
TASK_JSON = ('{"year": 2027, "cities": ["San Francisco", "New York", "Chicago"], '
             '"targets": [], "horizon": 5, "stores": {"LOC01": "San Francisco"}}')


def program_step(code: str, repeats: int) -> float:
    """Median seconds of one run_python step over ``repeats`` fresh years."""
    times = []
    for _ in range(repeats):
        env = SalesEnv(0, "short")
        env.reset()
        env.begin("year-2027")
        env.files["task.json"] = TASK_JSON.encode()
        start = time.perf_counter()
        result = env.step({"tool": "run_python", "code": code})
        times.append(time.perf_counter() - start)
        if not result.feedback.startswith("Ran the snippet: ok"):
            raise SystemExit(f"the program did not run: {result.feedback[:400]}")
    return statistics.median(times)


def arm(play: Callable[[], Sequence[InstanceRun]]) -> tuple[int, float, float]:
    """(steps, seconds, mean reward) of one arm."""
    start = time.perf_counter()
    runs = play()
    wall = time.perf_counter() - start
    return sum(r.steps for r in runs), wall, sum(r.reward for r in runs) / len(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    packages = allowed_packages(WORKSPACE_PACKAGES).names
    print(f"machine: {machine()}; importable in the sandbox: {', '.join(packages)}")
    programs = [("builtin forecast.py (stdlib)", FORECAST_PROGRAM),
                ("numpy import + least squares", NUMPY_FIT)]
    if "sklearn" in packages:
        programs.append(("numpy + sklearn import + PoissonRegressor fit", SKLEARN_FIT))
    step_rows = [[name, f"{program_step(code, args.repeats):.3f}"] for name, code in programs]
    env, policy = SalesEnv(0), SalesForecaster()
    arm_rows = []
    for name, play in (("stateless", lambda: play_stateless(env, policy)),
                       ("stateful", lambda: play_stateful(env, policy, 0)),
                       ("notes only", lambda: play_with_notes(env, policy, 0))):
        steps, wall, mean = arm(play)
        arm_rows.append([name, steps, f"{wall:.2f}", f"{steps / wall:.1f}", f"{mean:.3f}"])
    steps_table = markdown_table(["program step (run_python)", "median s"], step_rows)
    arms_table = markdown_table(["builtin forecaster, default schedule, seed 0", "steps",
                                 "wall s", "steps/s", "mean reward"], arm_rows)
    text = f"Machine: {machine()}.\n\n{steps_table}\n\n{arms_table}"
    print(text)
    if args.readme:
        write_section("clbench-sales-workspace", text)


if __name__ == "__main__":
    main()
