"""The core install runs: every system ``clstream list systems`` shows, on every protocol's
small default data, with the builtin model (``make smoke-core``; docs/design.md §11.5).

Run with the interpreter of a venv holding ``pip install -e .`` and no extra, so an import of an
optional dependency anywhere on a run's path (scipy, torch, sentence-transformers) ends the
check instead of a user's first run. Systems that train weights (``answers_with_weights``) need
the ``train`` extra and a model that serves weights, which the builtin model does not; each of
them must be refused up front with one line naming the extra, and is otherwise left out. Any
other failure, a listing entry the core install cannot import (its note), a failed cell or a
traceback, fails the check (exit 1).

    .venv-core/bin/python scripts/smoke_core.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from clstream.core.registry import resolve

CLI = [sys.executable, "-m", "clstream"]


def listed_systems() -> list[dict[str, object]]:
    done = subprocess.run([*CLI, "list", "systems", "--json"], capture_output=True, text=True,
                          check=True)
    systems: list[dict[str, object]] = json.loads(done.stdout)["systems"]
    return systems


def trains_weights(name: str) -> bool:
    return bool(getattr(resolve("system", name), "answers_with_weights", False))


def smoke(out: Path) -> list[str]:
    """The problems found (none when the core install runs everything it lists)."""
    problems = [f"system {s['name']} is listed but cannot be imported: {s['note']}"
                for s in listed_systems() if s["note"] is not None]
    names = [str(s["name"]) for s in listed_systems() if s["note"] is None]
    runnable = [n for n in names if not trains_weights(n)]
    matrix = [*CLI, "run", "matrix", "--model", "builtin", "--no-progress", "--out", str(out)]
    print(f"smoke-core: {len(runnable)} systems on every protocol: {', '.join(runnable)}",
          flush=True)
    done = subprocess.run([*matrix, "--systems", ",".join(runnable)], capture_output=True,
                          text=True)
    if done.returncode != 0 or "Traceback" in done.stderr:
        problems.append(f"run matrix exited {done.returncode}:\n{done.stderr[-4000:]}")
    for name in (n for n in names if n not in runnable):
        refused = subprocess.run([*matrix, "--systems", name], capture_output=True, text=True)
        lines = refused.stderr.strip().splitlines()
        if refused.returncode != 2 or len(lines) != 1 or "clstream[train]" not in lines[0]:
            problems.append(f"system {name} (trains weights) was not refused with one line "
                            f"naming the train extra: exit {refused.returncode}, "
                            f"{refused.stderr[-2000:]}")
        else:
            print(f"smoke-core: {name} left out: {lines[0]}", flush=True)
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="results directory (default: a temporary one, removed after)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        problems = smoke(args.out or Path(tmp) / "out")
    for problem in problems:
        print(f"smoke-core: {problem}", file=sys.stderr)
    if problems:
        raise SystemExit(1)
    print("smoke-core: every listed system ran on every protocol", flush=True)


if __name__ == "__main__":
    main()
