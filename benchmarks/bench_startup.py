"""Start-up of the command line: what a command costs before it does any work.

``clstream --version``, ``clstream run oaks --help`` and ``clstream score oaks --help`` run as
processes (``python -m clstream``), against a bare interpreter (``python -c pass``, the same
Python). They run in ``--repeats`` rounds; each round times every command and the bare
interpreter one after another, so a change in the machine's speed between rounds moves both
sides of a difference alike. Each figure is the median over rounds; "over bare interpreter" is
the median of each round's difference of CPU seconds (user + system of the child).

Building the parser imports no protocol's code (the verbs are ``"module:name"`` targets and a
verb's flags are added only when it is parsed), so these figures are the interpreter, argparse,
the registry and, for a ``--help``, the protocol's flags. Target: ``--version`` and
``run oaks --help`` at most 0.15 s of CPU over the bare interpreter.

    .venv/bin/python benchmarks/bench_startup.py [--repeats 10] [--readme]
"""

from __future__ import annotations

import argparse
import sys
from statistics import median

from cli_timing import (
    ProcessTime,
    machine,
    markdown_table,
    median_time,
    run_cli,
    run_process,
    write_section,
)

TARGET_S = 0.15
COMMANDS: tuple[tuple[list[str], bool], ...] = (  # argv after ``clstream``; has a target
    (["--version"], True),
    (["run", "oaks", "--help"], True),
    (["score", "oaks", "--help"], False),
)


def bare() -> ProcessTime:
    return run_process([sys.executable, "-c", "pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rounds = [([run_cli(argv) for argv, _ in COMMANDS], bare()) for _ in range(args.repeats)]
    python = median_time([b for _, b in rounds])
    rows: list[list[object]] = []
    for i, (argv, has_target) in enumerate(COMMANDS):
        run = median_time([times[i] for times, _ in rounds])
        extra = median(times[i].cpu_s - b.cpu_s for times, b in rounds)
        verdict = ("met" if extra <= TARGET_S else "NOT met") if has_target else "-"
        rows.append([f"clstream {' '.join(argv)}", f"{run.cpu_s:.3f}", f"{python.cpu_s:.3f}",
                     f"{extra:.3f}", verdict, f"{run.wall_s:.3f}", f"{run.peak_mib:.0f}"])
        print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(
        ["command", "CPU s", "bare interpreter CPU s", "over bare interpreter s",
         f"<= {TARGET_S:g} s", "wall s", "peak MiB"], rows, "lrrrlrr")
    print(table)
    if args.readme:
        write_section("startup", f"Machine: {machine()}. {args.repeats} rounds, medians.\n\n"
                      f"{table}")


if __name__ == "__main__":
    main()
