"""Stored transcripts as an OAKS stream grows: bytes of stored model calls per chunk at 16 and
at 128 chunks, and per call by method.

``icl`` resends every passage read so far with every question, so the text it sends grows with
the square of the stream. The results store keeps each message as a chain of content-addressed
pieces (:mod:`clstream.store.transcripts`), so each passage is stored once and each call adds
only what is new in it: the target is at most 1.25x per chunk at 128 chunks what is stored at
16. Each run is ``clstream run oaks`` as a process with the builtin model (one document, 4
questions, chunks of 120 tokens); the bytes are the transcript tables' cells, read from the
results database afterwards, with the prompt text sent for comparison. The CPU a run spends on
its transcripts (noting each call, linking it and writing it) is timed in this process, in a
second run of each system at 128 chunks, per call.

    .venv/bin/python benchmarks/bench_transcripts.py [--readme]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from cli_timing import machine, markdown_table, run_cli, write_section

import clstream.models.middleware as middleware
from clstream.cli import main as cli
from clstream.core.transcripts import note_calls
from clstream.store.transcripts import TranscriptWriter, stored_bytes

SYSTEMS = ("icl", "rag:k=4", "window:w=4")
SIZES = (16, 128)
TARGET = 1.25


def measure(work: Path, system: str, chunks: int) -> tuple[float, float, float]:
    """(transcript bytes per chunk, per call, prompt bytes sent per call) of one run."""
    data = work / f"babi{chunks}.json"
    if not data.exists():
        run_cli(["generate", "oaks-babi", "--seed", "5", "--docs", "1", "--chunks", str(chunks),
                 "--chunk-tokens", "120", "--max-questions", "4", "--out", str(data)])
    out = work / f"{system.replace(':', '-')}-{chunks}"
    run_cli(["run", "oaks", str(data), "--system", system, "--model", "builtin",
             "--out", str(out), "--no-progress"])
    with sqlite3.connect(out / "results.sqlite") as conn:
        stored = stored_bytes(conn)
        (calls,) = conn.execute("SELECT COUNT(*) FROM calls").fetchone()
    from clstream.store.db import ResultsStore

    with ResultsStore(out) as store:
        sent = sum(len(m["content"].encode()) for r in store.runs()
                   for c in store.calls(r.run_id) for m in c["messages"])
    return stored / chunks, stored / max(1, calls), sent / max(1, calls)


def transcript_cpu(work: Path, system: str, chunks: int) -> float:
    """CPU microseconds per call spent on transcripts by a run in this process."""
    spent = [0.0]
    calls = [0]
    write = TranscriptWriter.write

    def timed_write(self: TranscriptWriter, *args: Any) -> int:
        start = time.process_time()
        n = write(self, *args)
        spent[0] += time.process_time() - start
        calls[0] += n
        return n

    def timed_note(*args: Any) -> None:
        start = time.process_time()
        note_calls(*args)
        spent[0] += time.process_time() - start

    setattr(TranscriptWriter, "write", timed_write)  # noqa: B010 - timing wrappers
    setattr(middleware, "note_calls", timed_note)  # noqa: B010
    try:
        out = work / f"cpu-{system.replace(':', '-')}-{chunks}"
        cli(["run", "oaks", str(work / f"babi{chunks}.json"), "--system", system, "--model",
             "builtin", "--out", str(out), "--no-progress"])
    finally:
        setattr(TranscriptWriter, "write", write)  # noqa: B010
        setattr(middleware, "note_calls", note_calls)  # noqa: B010
    return spent[0] / max(1, calls[0]) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for system in SYSTEMS:
            (small, _, _), (large, per_call, sent) = (measure(Path(tmp), system, n)
                                                      for n in SIZES)
            ratio = large / small
            cpu = transcript_cpu(Path(tmp), system, SIZES[1])
            rows.append([system, f"{small:.0f}", f"{large:.0f}", f"{ratio:.2f}",
                         "met" if ratio <= TARGET else "NOT met", f"{per_call:.0f}",
                         f"{sent:.0f}", f"{cpu:.0f}"])
            print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(
        ["system", f"bytes/chunk @{SIZES[0]}", f"bytes/chunk @{SIZES[1]}", "ratio",
         f"<= {TARGET:g}", f"stored bytes/call @{SIZES[1]}", f"prompt bytes/call @{SIZES[1]}",
         f"CPU us/call @{SIZES[1]}"],
        rows, "lrrrlrrr")
    print(table)
    if args.readme:
        write_section("transcript-storage", f"Machine: {machine()}.\n\n{table}")


if __name__ == "__main__":
    main()
