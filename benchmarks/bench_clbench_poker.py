"""Exploitable poker: decisions per second, as users run it and in the environment alone.

- command line: ``clstream run clbench --task exploitable_poker --model builtin --system icl
  --schedule short`` (``--rollouts`` as given) as a process in a fresh results directory;
  the decisions (step records, both arms) it stored per second of the process's wall and CPU
  time (start-up, the builtin model reading each prompt and store writes included);
- environment alone: the stateless arm and stateful rollout 0 of the default schedule with
  the builtin policies in this process (pokerkit's rules, the opponents, the policy reading
  the observation text), decisions per second of wall time.

    .venv/bin/python benchmarks/bench_clbench_poker.py [--rollouts 2] [--readme]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from cli_timing import machine, markdown_table, run_cli, write_section

from clstream.core.environment import Policy
from clstream.protocols.clbench.envs.poker.environment import PokerEnv
from clstream.protocols.clbench.envs.poker.policy import OpponentModeler, TAGHeuristic
from clstream.protocols.clbench.policies import InstanceRun, play_stateful, play_stateless
from clstream.store.db import ResultsStore

TASK = "exploitable_poker"


def stored_steps(out: Path) -> int:
    with ResultsStore(out) as store:
        return sum(1 for run in store.runs("clbench")
                   for _ in store.read_records(run.run_id, "step", errors=False))


def env_alone(label: str, play: object, policy: Policy) -> list[object]:
    start = time.perf_counter()
    runs: list[InstanceRun] = play(PokerEnv(0), policy)  # type: ignore[operator]
    wall = time.perf_counter() - start
    steps = sum(r.steps for r in runs)
    return [label, steps, f"{wall:.2f}", f"{steps / wall:.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=2)
    parser.add_argument("--readme", action="store_true", help="rewrite the README section")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "runs"
        run = run_cli(["run", "clbench", "--task", TASK, "--system", "icl", "--model", "builtin",
                       "--schedule", "short", "--rollouts", str(args.rollouts),
                       "--out", str(out)])
        steps = stored_steps(out)
    cli = markdown_table(
        ["command", "decisions", "wall s", "CPU s", "decisions/s (wall)", "peak MiB"],
        [[f"run clbench --task {TASK} --system icl --schedule short --rollouts {args.rollouts}",
          steps, f"{run.wall_s:.2f}", f"{run.cpu_s:.2f}", f"{steps / run.wall_s:.0f}",
          f"{run.peak_mib:.0f}"]], "lrrrrr")
    alone = markdown_table(
        ["default schedule, seed 0", "decisions", "wall s", "decisions/s"],
        [env_alone("stateless arm, TAGHeuristic", play_stateless, TAGHeuristic()),
         env_alone("stateful rollout 0, OpponentModeler",
                   lambda env, p: play_stateful(env, p, 0), OpponentModeler())], "lrrr")
    print(cli, alone, sep="\n\n")
    if args.readme:
        write_section("output-bench_clbench_poker", f"Machine: {machine()}.\n\n{cli}\n\n{alone}")


if __name__ == "__main__":
    main()
