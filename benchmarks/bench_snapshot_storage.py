"""Stored memory of snapshotted systems as an OAKS stream grows: bytes of stored state and CPU
seconds per chunk at 16 and at 128 chunks.

``icl`` and ``notepad`` keep the whole document read so far and are snapshotted after every
chunk (they are not replayable). The results store keeps each snapshot as a delta against the
previous step of its stream, so the bytes stored per chunk should not grow with the stream:
the target is at most 1.25x per chunk at 128 chunks what is stored at 16. Each run is
``clstream run oaks`` as a process with the builtin model (one document, 4 questions, chunks
of 120 tokens); the state bytes are read from the results database afterwards.

    .venv/bin/python benchmarks/bench_snapshot_storage.py [--readme]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from cli_timing import machine, markdown_table, run_cli, write_section

SYSTEMS = ("icl", "notepad")
SIZES = (16, 128)
TARGET = 1.25


def measure(work: Path, system: str, chunks: int) -> tuple[float, float]:
    """(state bytes per chunk, CPU seconds per chunk) of one run."""
    data = work / f"babi{chunks}.json"
    if not data.exists():
        run_cli(["generate", "oaks-babi", "--seed", "5", "--docs", "1", "--chunks", str(chunks),
                 "--chunk-tokens", "120", "--max-questions", "4", "--out", str(data)])
    out = work / f"{system}-{chunks}"
    timed = run_cli(["run", "oaks", str(data), "--system", system, "--model", "builtin",
                     "--out", str(out), "--no-progress"])
    with sqlite3.connect(out / "results.sqlite") as conn:
        (stored,) = conn.execute("SELECT SUM(LENGTH(CAST(state AS BLOB))) FROM states "
                                 "WHERE stream NOT LIKE '~%'").fetchone()
    return float(stored) / chunks, timed.cpu_s / chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for system in SYSTEMS:
            (small, small_cpu), (large, large_cpu) = (measure(Path(tmp), system, n)
                                                      for n in SIZES)
            ratio = large / small
            rows.append([system, f"{small:.0f}", f"{large:.0f}", f"{ratio:.2f}",
                         "met" if ratio <= TARGET else "NOT met", f"{small_cpu * 1e3:.1f}",
                         f"{large_cpu * 1e3:.1f}"])
            print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(
        ["system", f"bytes/chunk @{SIZES[0]}", f"bytes/chunk @{SIZES[1]}", "ratio",
         f"<= {TARGET:g}", f"CPU ms/chunk @{SIZES[0]}", f"CPU ms/chunk @{SIZES[1]}"],
        rows, "lrrrlrr")
    print(table)
    if args.readme:
        write_section("snapshot-storage", f"Machine: {machine()}.\n\n{table}")


if __name__ == "__main__":
    main()
