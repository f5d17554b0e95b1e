"""``--executor ray`` against the local executor: cells per second of one OAKS run.

An OAKS stream of ``--docs`` documents (one cell each) runs with the builtin model and the
snapshotted ``icl`` system three ways, each into a fresh results directory, as processes: the
local executor (one document at a time, the default), and a local Ray cluster started for the
run with 1 and with 2 workers (``--ray-workers``). "run s" is the run's stored wall time (the
driver's session: cells submitted, carried out and committed); cells per second are the
documents over it. "command s" is the whole process, the cluster's start and stop included.
Every run's export is compared with the local one's (they must be byte-identical).

    .venv/bin/python benchmarks/bench_ray.py [--docs 8] [--readme]
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from cli_timing import CLI, machine, markdown_table, run_cli, write_section

SYSTEM = "icl"


def stored_wall_s(out: Path) -> float:
    with sqlite3.connect(out / "results.sqlite") as conn:
        return float(conn.execute("SELECT SUM(wall_s) FROM runs").fetchone()[0])


def export(out: Path) -> bytes:
    dest = out / "export.jsonl"
    subprocess.run([*CLI, "export", str(out), "--system", SYSTEM, "--out", str(dest)],
                   check=True, capture_output=True)
    return dest.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=12)
    parser.add_argument("--readme", action="store_true", help="rewrite the README section")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = root / "stream.json"
        run_cli(["generate", "oaks-babi", "--seed", "5", "--docs", str(args.docs), "--chunks",
                 str(args.chunks), "--chunk-tokens", "300", "--out", str(data)])
        ways = {"local": [], "ray, 1 worker": ["--executor", "ray", "--ray-workers", "1"],
                "ray, 2 workers": ["--executor", "ray", "--ray-workers", "2"]}
        rows: list[list[object]] = []
        reference = None
        for name, flags in ways.items():
            out = root / name.replace(" ", "").replace(",", "-")
            command = run_cli(["run", "oaks", str(data), "--model", "builtin", "--system", SYSTEM,
                               "--out", str(out), "--no-progress", *flags])
            exported = export(out)
            reference = exported if reference is None else reference
            wall = stored_wall_s(out)
            rows.append([name, args.docs, f"{wall:.2f}", f"{args.docs / wall:.2f}",
                         f"{command.wall_s:.2f}", "yes" if exported == reference else "NO"])
    table = markdown_table(["executor", "cells", "run s", "cells/s", "command s",
                            "export = local"], rows)
    text = (f"{machine()}. OAKS, {args.docs} documents of {args.chunks} chunks, builtin model, "
            f"`{SYSTEM}`; one run each.\n\n{table}")
    print(text)
    if args.readme:
        write_section("ray", text)


if __name__ == "__main__":
    sys.exit(main())
