"""``clstream score oaks`` and ``score seqmem`` against the floor of parsing their input.

Scoring reads two files (OAKS: the data file and the predictions) or one (SeqMem: the records)
and does little else, so its floor is parsing them: a Python process that reads the same files
with the standard ``json`` module and nothing more (``json.loads`` of the data file, one
``json.loads`` per line). Both run as processes, in ``--repeats`` rounds; each round times the
command, its start-up, the floor and the bare interpreter one after another, so a change in
the machine's speed between rounds moves both sides of a ratio alike. Each ratio is the median
of the rounds' ratios; each time, the median of the rounds' times:

- "whole process": CPU of ``clstream score ... --json`` over CPU of the floor process
  (target: 1.5x);
- "after start-up": the same with each side's start-up taken off (the command line's
  ``clstream --version``, the floor's bare interpreter), the work itself.

Inputs are generated: an OAKS-BABI stream with short chunks (the predictions dominate), and
one prediction per (question, interval) whose output ends in an answer marker, the gold 60%
of the time and another accepted value of the question otherwise; a SeqMem records file of T
online records, 40 hold-out items at 11 checkpoints and retro records at every power-of-two
horizon below T. The output of each command is checked against the previous release's
format by the tests, not here.

    .venv/bin/python benchmarks/bench_score.py [--predictions 200000] [--tasks 20000]
        [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import TypeVar

from cli_timing import (
    ProcessTime,
    machine,
    markdown_table,
    median_time,
    python_startup,
    run_cli,
    run_process,
    startup,
    write_section,
)

from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.loader import load_oaks

TARGET = 1.5
T = TypeVar("T")
QUESTIONS_PER_DOC = 40
CHUNKS = 250

FLOOR = """
import json, sys
if sys.argv[1] != "-":
    json.loads(open(sys.argv[1], "rb").read())
with open(sys.argv[2], "rb") as fh:
    for line in fh:
        if line.strip():
            json.loads(line)
"""


def oaks_inputs(root: Path, predictions: int) -> tuple[Path, Path, int]:
    docs = max(1, round(predictions / (QUESTIONS_PER_DOC * CHUNKS)))
    data, preds = root / "oaks.json", root / "oaks.jsonl"
    write_oaks_babi(data, seed=0, docs=docs, chunks=CHUNKS, chunk_tokens=100,
                    max_questions=QUESTIONS_PER_DOC)
    rng = random.Random(0)
    lines = 0
    with preds.open("w", encoding="utf-8") as fh:
        for doc in load_oaks(data).documents:
            for q in doc.questions:
                for t in range(1, doc.num_chunks + 1):
                    if q.is_mc:
                        answer = rng.choice("ABCD")
                    elif rng.random() < 0.6:
                        answer = q.golds[t - 1][0]
                    else:
                        answer = rng.choice(q.golds[rng.randrange(len(q.golds))])
                    output = f"The passages say so.\n## Answer: {answer}"
                    fh.write(json.dumps({"question_id": q.question_id, "t": t,
                                         "output": output}) + "\n")
                    lines += 1
    return data, preds, lines


def seqmem_inputs(root: Path, tasks: int) -> tuple[Path, int]:
    path = root / "records.jsonl"
    rng = random.Random(0)
    lines = 0
    with path.open("w", encoding="utf-8") as fh:
        def put(row: dict[str, object]) -> None:
            nonlocal lines
            fh.write(json.dumps(row) + "\n")
            lines += 1

        for tau in range(1, tasks + 1):
            put({"kind": "online", "tau": tau, "correct": rng.randint(0, 1)})
        for k in range(0, tasks + 1, max(1, tasks // 10)):
            for i in range(40):
                put({"kind": "holdout", "checkpoint": k, "item": f"h{i}",
                     "correct": rng.randint(0, 1)})
        horizon = 1
        while horizon < tasks:
            for tau in range(1, tasks - horizon + 1):
                put({"kind": "retro", "tau": tau, "horizon": horizon,
                     "correct": rng.randint(0, 1)})
            horizon *= 2
    return path, lines


def in_fresh_process(function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` in a fresh interpreter. Generating the inputs grows a process to
    some hundred MiB, and a command started from it reports that as its own peak memory (the
    parent's pages count for the child until it replaces itself with the command)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)


def floor(files: tuple[str, str]) -> ProcessTime:
    return run_process([sys.executable, "-c", FLOOR, *files])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predictions", type=int, default=200_000)
    parser.add_argument("--tasks", type=int, default=20_000, help="SeqMem stream length T")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data, preds, n_preds = in_fresh_process(oaks_inputs, root, args.predictions)
        records, n_records = in_fresh_process(seqmem_inputs, root, args.tasks)
        cases = [
            ("score oaks", f"{n_preds:,} predictions",
             ["score", "oaks", str(data), str(preds), "--json"], (str(data), str(preds))),
            ("score seqmem", f"{n_records:,} records",
             ["score", "seqmem", str(records), "--json"], ("-", str(records))),
        ]
        for name, size, argv, files in cases:
            rounds = [(run_cli(argv), startup(1), floor(files), python_startup(1))
                      for _ in range(args.repeats)]
            run = median_time([r for r, _, _, _ in rounds])
            base = median(b.cpu_s for _, _, b, _ in rounds)
            cli_start = median(c.cpu_s for _, c, _, _ in rounds)
            py_start = median(p.cpu_s for _, _, _, p in rounds)
            whole = median(r.cpu_s / b.cpu_s for r, _, b, _ in rounds)
            work = median((r.cpu_s - c.cpu_s) / max(1e-9, b.cpu_s - p.cpu_s)
                          for r, c, b, p in rounds)
            rows.append([name, size, f"{run.cpu_s:.2f}", f"{base:.2f}", f"{whole:.2f}",
                         f"{cli_start:.2f}", f"{work:.2f}",
                         "met" if whole <= TARGET else "NOT met", f"{run.wall_s:.2f}",
                         f"{run.peak_mib:.0f}"])
            print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(
        ["command", "input", "CPU s", "json floor CPU s", "x floor (whole process)",
         "start-up CPU s", "x floor (after start-up)", f"whole <= {TARGET:g}", "wall s",
         "peak MiB"],
        rows, "llrrrrrlrr")
    print(table)
    if args.readme:
        write_section("score", f"Machine: {machine()}. {args.repeats} rounds, medians; the "
                      f"floor's bare interpreter starts in {py_start:.3f} s of CPU.\n\n"
                      f"{table}")


if __name__ == "__main__":
    main()
