"""Codebase adaptation: sandboxed test runs per second, and CLI steps per second.

Times ``python -m unittest`` over a generated repository inside the bubblewrap sandbox
(docs/clbench.md §4.6), and ``clstream run clbench --task codebase_adaptation --model builtin
--system icl --schedule short --rollouts 1`` as a process, reporting commands (steps) per second.
With ``--repos real`` (after ``make clbench-repos``) the same for tablib and tenacity: one
issue evaluation (the repository's own pytest suite over a candidate, in the sandbox) per
repository, timed, and the CLI run with ``--env-option repos=real``.

    .venv/bin/python benchmarks/bench_clbench_codebase.py [--runs 20] [--repos real]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def sandboxed_runs(count: int) -> float:
    from clstream.protocols.clbench.envs.codebase.environment import CodebaseEnv
    from clstream.protocols.clbench.envs.codebase.sandbox import run_program

    env = CodebaseEnv(0, "short")
    issue = next(iter(env.issues.values()))
    argv = ["-m", "unittest", "discover", "-s", "tests", "-t", "."]
    start = time.perf_counter()
    for _ in range(count):
        assert run_program(issue.buggy, argv, env.iso).returncode == 0
    return count / (time.perf_counter() - start)


def real_evaluations(count: int) -> dict[str, float]:
    """Seconds per issue evaluation (the reference fix of the first issue of each repository)."""
    from clstream.protocols.clbench.envs.codebase.environment import CodebaseEnv

    env = CodebaseEnv(0, "short", options={"repos": "real"})
    out = {}
    for issue in env.issues.values():
        if issue.repo.name in out:
            continue
        start = time.perf_counter()
        for _ in range(count):
            assert env.evaluate(issue, issue.clean) == (True, "completed")
        out[issue.repo.name] = (time.perf_counter() - start) / count
    return out


def cli_steps(repos: str = "generated") -> tuple[float, float]:
    from clstream.protocols.clbench.envs.codebase.environment import CodebaseEnv
    from clstream.protocols.clbench.policies import ScriptedDebugger, play_stateful, play_stateless

    env = CodebaseEnv(0, "short", options={"repos": repos})
    steps = sum(r.steps for r in play_stateless(env, ScriptedDebugger()))
    steps += sum(r.steps for r in play_stateful(env, ScriptedDebugger(), 0))
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "clstream", "run", "clbench", "--task",
                        "codebase_adaptation", "--model", "builtin", "--system", "icl",
                        "--schedule", "short", "--rollouts", "1", "--out", out,
                        "--env-option", f"repos={repos}"],
                       check=True, capture_output=True, env=dict(os.environ))
        wall = time.perf_counter() - start
    return wall, steps / wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--repos", choices=("generated", "real"), default="generated")
    args = p.parse_args()
    if args.repos == "real":
        for name, seconds in real_evaluations(max(1, args.runs // 10)).items():
            print(f"{name}: one issue evaluation (own test suite, sandboxed): {seconds:.2f} s")
        wall, rate = cli_steps("real")
        print(f"clstream run clbench --env-option repos=real (short, icl, builtin): {wall:.1f} s, "
              f"{rate:.2f} steps/s")
        return 0
    print(f"sandboxed unittest runs per second: {sandboxed_runs(args.runs):.2f}")
    wall, rate = cli_steps()
    print(f"clstream run clbench (short, icl, builtin): {wall:.1f} s, {rate:.1f} steps/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
