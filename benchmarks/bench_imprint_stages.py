"""ImprintBench generation per stage: ``clstream generate imprint`` with the builtin model as
writer, as a process, and each of its stages from the ``stage_timings.json`` it writes.

For each setting (news, persona, code: the fictional library read from its two wheels) and
size, ``generate imprint --setting S --seed 0 --model builtin --filter`` runs in a fresh
directory, ``--repeats`` times. The first table is the whole process (start-up, template
build, every stage, the dataset write): its CPU and wall seconds and the items it wrote per
CPU second, beside the same command without ``--model`` (templates only). The second table
is each stage of the timings file (docs/imprint.md §4.8): items it was given and kept, its own
CPU seconds (stages timed inside it left out), and items per CPU second. Medians over the
repeats; nothing here judges a figure.

    .venv/bin/python benchmarks/bench_imprint_stages.py [--repeats 3] [--sizes small,default]
        [--readme]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from cli_timing import CLI, ProcessTime, machine, markdown_table, run_process, write_section

SETTINGS = ("news", "persona", "code")


def _generate(out: Path, setting: str, size: str, model: bool) -> ProcessTime:
    argv = [*CLI, "generate", "imprint", "--setting", setting, "--size", size, "--seed", "0",
            "--out", str(out), *(["--model", "builtin", "--filter"] if model else [])]
    timing = run_process(argv)
    if timing.status != 0:
        raise SystemExit(f"{' '.join(argv[2:])} exited with status {timing.status}")
    return timing


def _rate(items: float, seconds: float) -> str:
    return f"{items / seconds:,.0f}" if seconds > 0 and items > 0 else "-"


def measure(root: Path, setting: str, size: str, repeats: int
            ) -> tuple[list[object], list[list[object]]]:
    """(the process row, the stage rows) of one setting and size, medians over ``repeats``."""
    staged: list[ProcessTime] = []
    bare: list[ProcessTime] = []
    stages: dict[str, list[dict[str, Any]]] = {}
    items = 0
    for round_ in range(repeats):
        out = root / f"{setting}-{size}-{round_}"
        staged.append(_generate(out, setting, size, model=True))
        bare.append(_generate(root / f"{setting}-{size}-{round_}-bare", setting, size,
                              model=False))
        items = json.loads((out / "manifest.json").read_text())["counts"]["items"]
        for row in json.loads((out / "stage_timings.json").read_text())["stages"]:
            stages.setdefault(row["stage"], []).append(row)
    cpu = statistics.median(t.cpu_s for t in staged)
    wall = statistics.median(t.wall_s for t in staged)
    bare_cpu = statistics.median(t.cpu_s for t in bare)
    stage_cpu = sum(statistics.median(r["cpu_s"] for r in rows) for rows in stages.values())
    process = [setting, size, items, f"{cpu:.2f}", f"{wall:.2f}", _rate(items, cpu),
               f"{stage_cpu:.2f}", f"{bare_cpu:.2f}"]
    table: list[list[object]] = []
    for name, rows in stages.items():
        given = rows[0]["items"]
        kept = rows[0]["kept"]
        seconds = statistics.median(r["cpu_s"] for r in rows)
        table.append([setting, size, name, given, "-" if kept is None else kept,
                      f"{seconds:.3f}", _rate(given, seconds)])
    return process, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="small,default")
    parser.add_argument("--readme", action="store_true", help="rewrite the README tables")
    args = parser.parse_args()
    print(f"machine: {machine()}", flush=True)
    processes: list[list[object]] = []
    stages: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="bench-imprint-stages-") as tmp:
        for size in args.sizes.split(","):
            for setting in SETTINGS:
                process, table = measure(Path(tmp), setting, size, args.repeats)
                processes.append(process)
                stages.extend(table)
                print("  ".join(str(c) for c in process), flush=True)
    whole = markdown_table(
        ["setting", "size", "items written", "CPU s", "wall s", "items / CPU s",
         "stages' CPU s", "without --model CPU s"], processes, "llrrrrrr")
    per_stage = markdown_table(
        ["setting", "size", "stage", "items in", "kept", "CPU s", "items in / CPU s"],
        stages, "lllrrrr")
    print(whole)
    print(per_stage)
    if args.readme:
        write_section("imprint-stages",
                      f"Machine: {machine()}. `--seed 0 --model builtin --filter`, "
                      f"{args.repeats} rounds, medians.\n\n{whole}\n\n{per_stage}")


if __name__ == "__main__":
    main()
