"""Cohort studies (epidemiology; docs/clbench.md §4.5; paper App. A.3).

Five studies of a fictional disease (:mod:`.population`) each enrol a biased sample of
one population and measure their own covariates in their own codings. An instance is one draw
of one study restricted to one region, as an SQLite table ``patients``; the agent estimates
survival at 12, 24 and 36 months for 36 cohorts of the *whole population*
(:mod:`.scoring`), some of which its study cannot even identify. Reward: bits of KL
saved per cohort against the instance's study-wide Kaplan-Meier curve, signed; per-instance
ceiling the reference's mean KL, r_max the mean of the ceilings of the seed's instances.

Actions are tool calls, 20 per instance: ``metadata`` (tables, columns, codings),
``summary`` (per-column statistics), ``sql`` (one read-only query), ``survival`` (Kaplan-Meier
S(12), S(24), S(36) per value of a grouping expression) and ``submit`` (the report). The
report may still be submitted after the 20th call (the authors' final extraction turn); any
other tool then ends the instance without a report (reward 0, every estimate the reference).
Queries run on a read-only connection (the database task's authorizer, a progress-handler time
limit); a statement the authorizer refuses (a write, ATTACH, a pragma that writes) is an
invalid action. Feedback on a report is only "Report submitted for <study>." (no score).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

import clstream.protocols.clbench.envs.cohort.population as popmod
from clstream.core.environment import ActionError
from clstream.protocols.clbench.envs.base import EnvironmentBase, Outcome, build_schedule
from clstream.protocols.clbench.envs.cohort.scoring import (
    COHORTS,
    Score,
    kaplan_meier,
    kl_bits,
    require_extra,
    score_report,
    true_survival,
)
from clstream.protocols.clbench.envs.database.environment import _cell, lock_read_only, run_query

BUDGET = 20
HORIZON_KEYS = {"s12": 12, "s24": 24, "s36": 36}
MAX_GROUPS, MIN_GROUP = 30, 1
MAX_SQL_CHARS, MAX_RESULT_CHARS = 10_000, 40_000
SCHEDULES = {"default": 2, "short": 1}  # draws per (study, region)

INSTRUCTIONS = (
    "You are an epidemiologist studying Vardan-A syndrome, a fictional disease. Each instance "
    "gives you one region's patients from one cohort study, as the SQLite table patients. "
    "Studies enrol different kinds of patients and record different variables under their "
    "own names, units and instruments. Estimate, for each of 36 cohorts of the whole patient "
    "population (every region, not this study's sample), the probability of surviving 12, 24 "
    "and 36 months. You have 20 tool calls per instance, then must submit. Each estimate is "
    "scored by the binary KL divergence (bits, smoothed) from the true survival, against the "
    "study's overall Kaplan-Meier curve as a reference; the reward is the mean KL saved per "
    "cohort and can be negative. A cohort you leave out is given the reference. No score is "
    "shown after a report."
)
ACTION_FORMAT = (
    'Reply with one JSON object naming a tool: {"tool": "metadata"}; {"tool": "summary"}; '
    '{"tool": "sql", "query": "<one read-only SELECT>"}; {"tool": "survival", "group": '
    '"<SQL expression over the columns of patients>"} for Kaplan-Meier S(12), S(24), S(36) '
    'per value of the expression; or {"tool": "submit", "estimates": {"C01": {"s12": 0.9, '
    '"s24": 0.7, "s36": 0.5}, ...}} to report (probabilities in [0, 1]).'
)
_NUMBER = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["tool"],
    "properties": {
        "tool": {"enum": ["metadata", "summary", "sql", "survival", "submit"]},
        "query": {"type": "string"}, "group": {"type": "string"},
        "estimates": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {k: _NUMBER for k in HORIZON_KEYS}}}},
}


def _sql_type(coding: popmod.Coding) -> str:
    if coding.kind == "scale":
        return "INTEGER" if coding.digits == 0 else "REAL"
    if coding.kind == "labels":
        return "TEXT" if any(isinstance(x, str) for x in coding.labels) else "INTEGER"
    return "TEXT" if coding.kind == "bins" else "INTEGER"


def refused(conn: sqlite3.Connection, sql: str) -> str | None:
    """Why the read-only authorizer refuses ``sql`` (compiled, never run), or None: errors
    other than a refusal are left for the run to report."""
    try:
        conn.execute(f"EXPLAIN {sql}").close()
    except (sqlite3.Error, sqlite3.Warning) as err:
        if "not authorized" in str(err):
            return "the database is read-only: only SELECT queries are allowed"
    return None


class CohortEnv(EnvironmentBase):
    """Cohort studies: 5 studies x 2 regions x 2 draws = 20 instances, 20 tool calls each."""

    name: ClassVar[str] = "cohort_studies"
    best_reward: ClassVar[float] = kl_bits(1.0, 0.0)
    """The most any instance can earn: the largest smoothed KL a reference can have (bits)."""
    min_reward: ClassVar[float] = 0.0
    max_steps: ClassVar[int] = BUDGET + 1
    instructions: ClassVar[str] = INSTRUCTIONS
    action_format: ClassVar[str] = ACTION_FORMAT
    action_schema: ClassVar[Mapping[str, Any]] = ACTION_SCHEMA

    def __init__(self, seed: int = 0, schedule: str = "default", max_invalid: int = 3,
                 population_size: int = popmod.POPULATION_SIZE, sql_timeout_s: float = 5.0,
                 row_cap: int = 400) -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; known: {sorted(SCHEDULES)}")
        require_extra()
        specs = popmod.instance_specs(SCHEDULES[schedule])
        per_stage = tuple(sum(1 for s in specs if s.study == name)
                          for name in popmod.STUDY_ORDER)
        super().__init__(seed, build_schedule(schedule, per_stage, popmod.STUDY_ORDER,
                                              [s.instance_id for s in specs]), max_invalid)
        self.population_size = int(population_size)
        self.sql_timeout_s, self.row_cap = float(sql_timeout_s), int(row_cap)
        self.instances = {s.instance_id: s for s in specs}
        self.population = popmod.make_population(seed, self.population_size)
        self.truth = true_survival(self.population)
        self._draws: dict[tuple[str, int], np.ndarray] = {}
        self._references: dict[str, tuple[float, ...]] = {}
        self._conn: sqlite3.Connection | None = None
        self._calls = 0

    # --- the data of an instance -------------------------------------------------------------

    def rows(self, instance_id: str) -> np.ndarray:
        """Population indices of an instance's patients."""
        spec = self.instances[instance_id]
        key = (spec.study, spec.draw)
        if key not in self._draws:
            self._draws[key] = popmod.enrol(self.seed, popmod.STUDIES[spec.study],
                                            self.population, spec.draw)
        picked = self._draws[key]
        region = popmod.REGIONS.index(spec.region)
        mine: np.ndarray = picked[self.population["region"][picked] == region]
        return mine

    def records(self, instance_id: str) -> list[dict[str, Any]]:
        """An instance's patients as its study stores them."""
        study = popmod.STUDIES[self.instances[instance_id].study]
        return popmod.encoded(study, self.population, self.rows(instance_id))

    def reference(self, instance_id: str) -> tuple[float, ...]:
        """The instance's study-wide Kaplan-Meier S(12), S(24), S(36)."""
        if instance_id not in self._references:
            rows = self.rows(instance_id)
            self._references[instance_id] = kaplan_meier(self.population["time"][rows],
                                                         self.population["event"][rows])
        return self._references[instance_id]

    def ceiling(self, instance_id: str) -> float:
        """The reward of a perfect report on ``instance_id``."""
        return score_report(self.truth, self.reference(instance_id), {}).ceiling

    @property
    def r_max(self) -> float:
        """The mean ceiling of this seed's instances: a report can at best match the truth,
        earning the instance's reference KL (seed 0, default schedule: 0.187757 bits; the
        authors': 0.162202)."""
        ids = self.schedule.instance_ids
        return math.fsum(self.ceiling(i) for i in ids) / len(ids)

    def _ceiling(self) -> dict[str, Any]:
        return {"basis": "mean over the instances of the reference's KL (a perfect report)",
                "best_reward": self.best_reward, "authors_r_max": 0.162202}

    def database(self, instance_id: str) -> sqlite3.Connection:
        """A fresh read-only in-memory database of one instance."""
        spec = self.instances[instance_id]
        study = popmod.STUDIES[spec.study]
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        cols = ", ".join(f"{c.name} {_sql_type(c.coding)}" for c in study.columns)
        conn.execute(f"CREATE TABLE patients ({cols})")
        names = [c.name for c in study.columns]
        conn.executemany(f"INSERT INTO patients VALUES ({', '.join('?' * len(names))})",
                         [[r[n] for n in names] for r in self.records(instance_id)])
        conn.execute("CREATE TABLE _columns (name TEXT, type TEXT, description TEXT)")
        conn.executemany("INSERT INTO _columns VALUES (?, ?, ?)",
                         [(c.name, _sql_type(c.coding), c.description) for c in study.columns])
        conn.execute("CREATE TABLE _study_info (key TEXT, value TEXT)")
        conn.executemany("INSERT INTO _study_info VALUES (?, ?)", [
            ("study", study.name), ("region", spec.region), ("description", study.description),
            ("enrolment", study.enrolment)])
        conn.commit()
        lock_read_only(conn)
        return conn

    @cached_property
    def _cohort_list(self) -> str:
        return "\n".join(f"{c.cohort_id}: {c.label}" for c in COHORTS)

    # --- hooks -----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {"population_size": self.population_size, "budget": BUDGET,
                "sql_timeout_s": self.sql_timeout_s, "row_cap": self.row_cap}

    def _enter(self, instance_id: str) -> None:
        self.close()
        self._conn = self.database(instance_id)
        self._calls = 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _observation(self, first: bool) -> str:
        assert self.current is not None
        spec = self.instances[self.current]
        study = popmod.STUDIES[spec.study]
        left = BUDGET - self._calls
        budget = (f"Tool calls left: {left}." if left else
                  "No tool calls left: submit your report now; any other tool ends the "
                  "instance without a report.")
        head = (f"Study {study.name}, {spec.region} region, draw {spec.draw}: "
                f"{len(self.rows(self.current))} patients in table patients.")
        if not first:
            return f"{head} Report in progress.\n{budget}"
        return (f"{head}\nAbout the study: {study.description} {study.enrolment}\n"
                "Estimate S(12), S(24) and S(36) months for each cohort of the whole "
                "population of patients (all regions):\n"
                f"{self._cohort_list}\n{budget}")

    def _check(self, action: dict[str, Any]) -> None:
        tool = action.get("tool")
        if tool in ("metadata", "summary"):
            return
        if tool == "submit":
            self._estimates(action)
            return
        if tool not in ("sql", "survival"):
            raise ActionError('"tool" must be one of metadata, summary, sql, survival, submit')
        key = "query" if tool == "sql" else "group"
        text = action.get(key)
        if not isinstance(text, str) or not text.strip():
            raise ActionError(f'"{key}" must be a non-empty string')
        if len(text) > MAX_SQL_CHARS:
            raise ActionError(f'"{key}" is at most {MAX_SQL_CHARS} characters')
        assert self._conn is not None
        problem = refused(self._conn, text if tool == "sql" else self._group_sql(text))
        if problem:
            raise ActionError(problem)

    @staticmethod
    def _estimates(action: Mapping[str, Any]) -> dict[str, dict[int, float]]:
        given = action.get("estimates")
        if not isinstance(given, Mapping):
            raise ActionError('"estimates" must be an object: cohort id -> {"s12", "s24", '
                              '"s36"}')
        known = {c.cohort_id for c in COHORTS}
        out: dict[str, dict[int, float]] = {}
        for cohort_id, values in given.items():
            if cohort_id not in known:
                raise ActionError(f"unknown cohort {cohort_id!r} (C01 to C36)")
            if not isinstance(values, Mapping):
                raise ActionError(f'the estimate of {cohort_id} must be {{"s12": ..., '
                                  '"s24": ..., "s36": ...}')
            out[cohort_id] = {}
            for key, value in values.items():
                if key not in HORIZON_KEYS:
                    raise ActionError(f"{cohort_id}: unknown key {key!r} (s12, s24, s36)")
                if value is None:
                    continue
                if (isinstance(value, bool) or not isinstance(value, int | float)
                        or not 0.0 <= value <= 1.0):
                    raise ActionError(f"{cohort_id}.{key} must be a probability in [0, 1]")
                out[cohort_id][HORIZON_KEYS[key]] = float(value)
        return out

    def _apply(self, action: dict[str, Any]) -> Outcome:
        assert self.current is not None and self._conn is not None
        tool = action["tool"]
        study = self.instances[self.current].study
        if tool == "submit":
            return self._report(self._estimates(action), f"Report submitted for {study}.")
        if self._calls >= BUDGET:
            return self._report({}, f"The {BUDGET} tool calls are spent and no report came: "
                                    f"the instance ends; every cohort gets the reference.")
        self._calls += 1
        if tool == "metadata":
            body = self._metadata()
        elif tool == "summary":
            body = self._summary()
        elif tool == "sql":
            body = run_query(self._conn, action["query"], self.sql_timeout_s, self.row_cap,
                             MAX_RESULT_CHARS)
        else:
            body = self._survival(action["group"])
        return Outcome(f"{tool} ({BUDGET - self._calls} tool calls left):\n{body}",
                       info={"calls": self._calls})

    def _report(self, estimates: dict[str, dict[int, float]], feedback: str) -> Outcome:
        assert self.current is not None
        s: Score = score_report(self.truth, self.reference(self.current), estimates)
        return Outcome(feedback, True, s.reward, s.reward > 0, {
            "calls": self._calls, "raw_metric": s.estimate_kl, "reference_kl": s.reference_kl,
            "ceiling": s.ceiling, "missing_estimates": s.missing,
            "ended": "submitted" if estimates or "submitted" in feedback else "budget"})

    # --- tools -----------------------------------------------------------------------------

    def _metadata(self) -> str:
        assert self.current is not None
        study = popmod.STUDIES[self.instances[self.current].study]
        lines = [f"Study {study.name}. {study.description} {study.enrolment}",
                 "Tables: patients (one row per patient), _columns (these descriptions), "
                 "_study_info.", "Columns of patients (name | type | description):"]
        lines += [f"{c.name} | {_sql_type(c.coding)} | {c.description}" for c in study.columns]
        return "\n".join(lines)

    def _summary(self) -> str:
        assert self.current is not None
        records = self.records(self.current)
        study = popmod.STUDIES[self.instances[self.current].study]
        lines = [f"{len(records)} patients. Per column: non-missing count, then min / mean / "
                 "max, or the counts of each value."]
        for c in study.columns:
            values = [r[c.name] for r in records if r[c.name] is not None]
            if values and all(isinstance(v, int | float) for v in values) and len(
                    set(values)) > 8:
                nums = [float(v) for v in values]
                lines.append(f"{c.name}: {len(nums)}; {_cell(min(nums))} / "
                             f"{_cell(sum(nums) / len(nums))} / {_cell(max(nums))}")
            else:
                counts: dict[str, int] = {}
                for v in values:
                    counts[str(v)] = counts.get(str(v), 0) + 1
                shown = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
                lines.append(f"{c.name}: {len(values)}; {shown}")
        return "\n".join(lines)

    @staticmethod
    def _group_sql(expression: str) -> str:
        return f"SELECT ({expression}) AS grp, rowid FROM patients"

    def _survival(self, expression: str) -> str:
        assert self.current is not None and self._conn is not None
        result = run_query(self._conn, self._group_sql(expression), self.sql_timeout_s,
                           10 ** 6, 10 ** 8)
        lines = result.split("\n")
        if result.startswith("SQL error") or len(lines) < 2:
            return result
        groups: dict[str, list[int]] = {}
        for line in lines[1:-1]:
            value, rowid = line.rsplit(" | ", 1)
            groups.setdefault(value, []).append(int(rowid) - 1)
        if len(groups) > MAX_GROUPS:
            return (f"The expression makes {len(groups)} groups; at most {MAX_GROUPS} are "
                    "allowed (use a CASE expression with fewer values).")
        rows = self.rows(self.current)
        out = ["group | n | deaths | S(12) | S(24) | S(36)"]
        for value in sorted(groups):
            members = rows[groups[value]]
            events = self.population["event"][members]
            curve = kaplan_meier(self.population["time"][members], events)
            out.append(f"{value} | {len(members)} | {int(events.sum())} | "
                       + " | ".join(f"{s:.4f}" for s in curve))
        return "\n".join(out)
