"""Run every benchmark script and rewrite ``benchmarks/README.md`` from their figures
(``make bench``).

A script that takes ``--readme`` writes its own tables between its ``<!-- bench:NAME -->``
markers (:func:`cli_timing.write_section`). Any other script's printed output is kept
verbatim in a section of its own, ``<!-- bench:output-<script> -->``, added at the end of the
README the first time, so every figure in the README comes from the last ``make bench``.
Scripts run one after another (their timings must not compete for the cores), each in a fresh
interpreter; a failing script stops the run.

    .venv/bin/python benchmarks/run_all.py [--only bench_score.py ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from cli_timing import README, machine, write_section

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="script names to run")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.name in args.only]
    for script in scripts:
        own_tables = "--readme" in script.read_text(encoding="utf-8")
        argv = [sys.executable, str(script), *(["--readme"] if own_tables else [])]
        print(f"== {script.name}", flush=True)
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=HERE.parent, capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            raise SystemExit(f"{script.name} failed with status {done.returncode}")
        if not own_tables:
            name = f"output-{script.stem}"
            if f"<!-- bench:{name} -->" not in README.read_text(encoding="utf-8"):
                with README.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n## Output of `{script.name}`\n\n<!-- bench:{name} -->\n"
                             f"<!-- /bench:{name} -->\n")
            write_section(name, f"Machine: {machine()}.\n\n```\n{done.stdout.rstrip()}\n```")
        print(f"   {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
