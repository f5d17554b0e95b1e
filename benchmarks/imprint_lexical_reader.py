"""What a lexical reader answers: the share of ImprintBench items per family that the builtin
model (a word-overlap reader, not a language model) gets right when shown each item's source
documents (the ``oracle`` method), and with no memory at all (``memory-free``).

A family that such a reader answers from its sources is a lookup: it tests finding one
sentence, not the capability the family names. docs/imprint.md §5 says what each family should
need; this script measures how far the generated items are from it. Each setting's default
procedural dataset (seed 0) is generated and run through the CLI as processes, one sample per
item, deterministic judges, bare prompts.

    .venv/bin/python benchmarks/imprint_lexical_reader.py [--seed 0] [--size default]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CLSTREAM = [sys.executable, "-m", "clstream"]
SETTINGS = ("news", "code", "persona")
SYSTEMS = ("oracle", "memory-free")


def clstream(*args: str) -> str:
    done = subprocess.run([*CLSTREAM, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"clstream {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def shares(setting: str, seed: int, size: str, work: Path) -> dict[str, dict[str, float]]:
    """Pass@1 per family for each system: {system: {family: share}}, plus item counts."""
    data, results = work / f"data-{setting}", work / f"results-{setting}"
    clstream("generate", "imprint", "--setting", setting, "--seed", str(seed), "--size", size,
             "--out", str(data))
    systems = [a for s in SYSTEMS for a in ("--system", s)]
    clstream("run", "imprint", str(data), "--model", "builtin", "--samples", "1",
             "--no-progress", "--out", str(results), *systems)
    summary = json.loads(clstream("summary", str(results), "--json"))
    out: dict[str, dict[str, float]] = {}
    for run in summary["runs"]:
        families = run["metrics"]["by_family"]
        out[run["system"]] = {f: v["pass_at_1"] for f, v in families.items()}
        out["items"] = {f: v["n_items"] for f, v in families.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", choices=("small", "default"), default="default")
    args = parser.parse_args()
    print("| setting | family | items | oracle (lexical reader) | memory-free |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="clstream-lexical-") as tmp:
        for setting in SETTINGS:
            table = shares(setting, args.seed, args.size, Path(tmp))
            for family, n in table["items"].items():
                print(f"| {setting} | {family} | {n:.0f} | {table['oracle'][family]:.1%} | "
                      f"{table['memory-free'][family]:.1%} |", flush=True)


if __name__ == "__main__":
    main()
