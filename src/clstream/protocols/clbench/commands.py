"""CL-Bench verbs: ``score clbench`` over a SPECS §5 records file (SPECS §3, §5)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from clstream.protocols.clbench.metrics import ci_multiplier, score_clbench
from clstream.protocols.clbench.records import ClbenchRecords, load_clbench_records

__all__ = ["add_score_arguments", "score"]


def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", help="JSONL of task and instance records (SPECS 5)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--allow-missing", action="store_true",
                   help="leave out (of both arms) an instance missing from an arm or rollout, "
                        "instead of failing; the count is printed on stderr")
    p.add_argument("--t-multiplier", action="store_true",
                   help="95%% intervals with the t quantile for R - 1 degrees of freedom "
                        "(R: the fewest rollouts of any task) instead of the paper's 1.96")


def _missing_note(records: ClbenchRecords) -> str | None:
    parts = []
    for name, task in records.tasks.items():
        if task.n_missing:
            parts.append(f"{name}: {task.n_missing} of {task.n_declared}")
    if not parts:
        return None
    count = records.n_missing
    noun = "instance" if count == 1 else "instances"
    return (f"clstream: left out {count} {noun} missing from an arm "
            f"({', '.join(parts)} declared)")


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _stat(value: Any) -> str:
    if isinstance(value, dict):
        spread = value.get("se", value.get("ci95"))
        text = _num(value["mean"])
        return text if spread is None else f"{text} ± {_num(spread)}"
    return _num(value)


_ROWS = (("reward", "reward"), ("stateless_reward", "stateless reward"), ("gain", "gain"),
         ("normalized_gain", "normalized gain"), ("normalized_reward", "normalized reward"),
         ("stability", "stability"), ("plasticity", "plasticity"), ("cost", "cost"))


def score(args: argparse.Namespace) -> int:
    records = load_clbench_records(args.records, allow_missing=args.allow_missing)
    note = _missing_note(records)
    if note:
        print(note, file=sys.stderr)
    result = score_clbench(records, t_multiplier=args.t_multiplier)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name, task in result["tasks"].items():
        unit = records.tasks[name].cost_unit
        print(f"task {name}  (N {task['n_instances']}, R {task['rollouts']}; ± SE)")
        for key, label in _ROWS:
            if key in task:
                suffix = f"  ({unit})" if key == "cost" else ""
                print(f"  {label:<19}{_stat(task[key])}{suffix}")
    agg = result["aggregate"]
    multiplier = ci_multiplier(records, args.t_multiplier)
    print(f"aggregate over {len(result['tasks'])} tasks  (± 95% CI, multiplier "
          f"{multiplier:.3f})")
    for key, label in _ROWS:
        if key in agg:
            print(f"  {label:<19}{_stat(agg[key])}")
    return 0
