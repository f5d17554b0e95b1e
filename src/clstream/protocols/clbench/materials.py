"""What ``clstream generate clbench`` writes: an environment's materials, for inspection.

Every environment is procedural (rebuilt from its seed at run time), so nothing here is read
back by a run; the files show what a seed produces. Per task, under ``OUT/<task>/``:

* ``schedule.json`` -- the stages and instance ids, order policy, r_max, step limits, the
  environment's parameters, and the instance order of stateful rollouts 0-4;
* ``instructions.txt`` -- the rules (system message), the action format and its JSON schema;
* ``observations.jsonl`` -- the first observation of every instance, as the stateless arm
  shows it (no drift notice), in canonical order;
* per environment: the spectrum's true channels (``channels.json``); the sales world's full
  panel of units sold (``panel.csv``) and the files each year shows under ``data/``
  (``files/<instance>/...``); the database before and after its migration
  (``database_pre_migration.sqlite``, ``database_post_migration.sqlite``) and its question
  bank with gold answers, gold SQL and, for post-migration questions, the SQL as written
  against the pre-migration database (``questions.jsonl``).
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

from clstream.core.environment import rollout_order
from clstream.core.files import write_atomic
from clstream.protocols.clbench.envs import DatabaseEnv, SalesEnv, SpectrumEnv
from clstream.protocols.clbench.envs.base import EnvironmentBase

ROLLOUTS_SHOWN = 5


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def _copy_database(conn: sqlite3.Connection, path: Path) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.unlink(missing_ok=True)
    dest = sqlite3.connect(tmp)
    try:
        conn.backup(dest)
    finally:
        dest.close()
    tmp.replace(path)


def write_materials(env: EnvironmentBase, out: Path) -> list[Path]:
    """Write ``env``'s materials into the directory ``out`` (created); returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, data: str) -> None:
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        written.append(path)

    info = env.describe()
    info["n_instances"] = len(env.schedule)
    info["rollout_orders"] = {str(r): rollout_order(env.schedule, env.order_policy, env.seed, r)
                              for r in range(ROLLOUTS_SHOWN)}
    put("schedule.json", _json(info))
    put("instructions.txt", f"{env.instructions}\n\n{env.action_format}\n\nAction schema:\n"
                            f"{_json(dict(env.action_schema))}")
    lines = []
    for instance_id in env.schedule.instance_ids:
        env.reset_to(instance_id)
        query = env.begin(instance_id)
        lines.append(json.dumps({"instance_id": instance_id, "stage": query.stage,
                                 "variant": query.variant, "observation": query.observation},
                                ensure_ascii=False))
        if isinstance(env, SalesEnv):
            for path, text in sorted(env.files.items()):
                put(f"files/{instance_id}/{path}", text.decode())
    env.reset()
    put("observations.jsonl", "".join(line + "\n" for line in lines))
    if isinstance(env, SpectrumEnv):
        put("channels.json", _json([{"center_freq": c.center, "bandwidth": c.width}
                                    for c in env.channels]))
    if isinstance(env, SalesEnv):
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["locality", "furniture_name", "year", "items_sold"])
        for (city, name, year), units in sorted(env.world.sales.items()):
            writer.writerow([city, name, year, units])
        put("panel.csv", buf.getvalue())
    if isinstance(env, DatabaseEnv):
        for migrated, name in ((False, "database_pre_migration.sqlite"),
                               (True, "database_post_migration.sqlite")):
            _copy_database(env.database(migrated), out / name)
            written.append(out / name)
        put("questions.jsonl", "".join(
            json.dumps({"qid": q.qid, "post_migration": q.post, "text": q.text,
                        "kind": q.kind, "tolerance": q.tolerance, "answer": q.answer,
                        "sql": q.sql, "pre_migration_sql": q.pre_sql},
                       ensure_ascii=False) + "\n"
            for q in sorted(env.questions.values(), key=lambda q: q.qid)))
    return written
