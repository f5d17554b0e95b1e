"""Per-instance gains of a stored CL-Bench run, for paired comparisons between systems
(docs/statistics.md §2). The headline gain is built from each stateful instance's reward over
the same instance's stateless reward (docs/clbench.md §5.2-5.4); the item two systems are
compared on is therefore one instance of one stateful rollout, scored by that difference as a
share of the task's maximum reward, so tasks on different reward scales weigh alike. Two runs
of one seed play the same rollout orders, so their items line up."""

from __future__ import annotations

from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.protocols.clbench.run_summary import instance_rows, run_view


def item_scores(store: ResultsReader, run: RunRow) -> dict[str, dict[str, float]]:
    """``{"instance_gain": {"TASK/ROLLOUT/INSTANCE": (r_sf - r_sl) / r_max}}`` over the stateful
    instances whose stateless counterpart was also scored; empty before there is one."""
    tasks = run_view(store, run).get("tasks", {})
    gains: dict[str, float] = {}
    for task, arms in instance_rows(store, run).items():
        r_max = (tasks.get(task) or {}).get("r_max")
        if not isinstance(r_max, int | float) or isinstance(r_max, bool) or r_max <= 0:
            continue
        stateless = {row["instance_id"]: row["reward"]
                     for (arm, _), rows in arms.items() if arm == "stateless" for row in rows}
        for (arm, rollout), rows in arms.items():
            if arm != "stateful":
                continue
            for row in rows:
                base = stateless.get(row["instance_id"])
                if base is not None:
                    key = f"{task}/{rollout}/{row['instance_id']}"
                    gains[key] = (row["reward"] - base) / float(r_max)
    return {"instance_gain": gains} if gains else {}
