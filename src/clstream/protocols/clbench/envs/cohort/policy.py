"""The builtin policy of the cohort-studies task (see :mod:`...policies`; docs/clbench.md §4.5).

:class:`PooledCohorts` reads the instance's whole ``patients`` table with one query, maps the
study's columns to canonical variables (it knows every study's codings: a test learner), and
turns the instance into *evidence*: for every cohort whose conditions the study measures, the
number of patients in it and their Kaplan-Meier S(12), S(24), S(36); for a three-condition
cohort the study measures only two conditions of, the same for those two. Each cohort is then
estimated from all the evidence it holds: pooled within a region (weighted by n), the regions
averaged with equal weight (the population's regions are equally large); a cohort no study
decides from pieces two conditions at a time, averaged, but only with evidence from earlier
instances; with under 15 patients, the study-wide curve.

With only the current instance, that is the in-study estimate (the cohort's subgroup curve
when the study measures all its variables and n >= 15, else the study curve): the stateless
twin. Notes are the evidence itself, one line per cohort, each entry naming the instance it
came from, so merging is a union and idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from clstream.core.environment import Turn, note_key
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.cohort.population import HORIZONS, STUDIES, Study
from clstream.protocols.clbench.envs.cohort.scoring import COHORTS, Cohort

MIN_N = 15
PAGE = 400
_HEAD = re.compile(r"Study (\w+), (\w+) region, draw (\d+): (\d+) patients")
_ENTRY = re.compile(r"([\w-]+) (\S+) n=(\d+) S=([\d.]+)/([\d.]+)/([\d.]+)")
_FULL = "all"

Entry = tuple[str, str, int, float, float, float]  # instance, subset, n, S12, S24, S36


def kaplan_meier(times: Sequence[float], events: Sequence[int],
                 horizons: Sequence[float] = HORIZONS) -> tuple[float, ...]:
    """Kaplan-Meier S(t) at ``horizons`` (ties: deaths before censorings at one time)."""
    order = sorted(zip(times, events, strict=True))
    at_risk, s, k, out = len(order), 1.0, 0, []
    for h in horizons:
        while k < len(order) and order[k][0] <= h:
            t, deaths, leaving = order[k][0], 0, 0
            while k < len(order) and order[k][0] == t:
                deaths += order[k][1]
                leaving += 1
                k += 1
            s *= 1 - deaths / at_risk
            at_risk -= leaving
        out.append(s)
    return tuple(out)


def _canonical(study: Study, header: list[str], cells: list[str]) -> dict[str, float | None]:
    row: dict[str, float | None] = {}
    for name, cell in zip(header, cells, strict=False):
        column = next((c for c in study.columns if c.name == name), None)
        if column is not None:
            row[column.variable] = None if cell == "NULL" else column.coding.decode(cell)
    return row


def _table(study: Study, turns: Sequence[Turn]) -> list[dict[str, float | None]]:
    """The canonical rows read by this policy's own page queries in ``turns``."""
    rows: list[dict[str, float | None]] = []
    names = {c.name for c in study.columns}
    for t in turns:
        if '"SELECT * FROM patients' not in t.action:
            continue
        # The header is the first line naming the study's columns, wherever a memory's
        # layout put the result (a transcript prefixes it, a clip may cut its tail).
        lines = t.feedback.split("\n")
        at = next((n for n, ln in enumerate(lines) if names & set(ln.split(" | "))), None)
        if at is None:
            continue
        header = lines[at].split(" | ")
        for line in lines[at + 1:]:
            cells = line.split(" | ")
            if len(cells) != len(header):
                continue  # a note, a cut row
            row = _canonical(study, header, cells)
            if "time" in row and "event" in row:
                rows.append(row)
    return rows


def _subset(cohort: Cohort, study: Study) -> tuple[str, tuple[Any, ...]] | None:
    """The conditions of ``cohort`` that ``study`` decides, named: all of them, or two of a
    three-condition cohort; None when it decides too few."""
    known = tuple(c for c in cohort.conditions if c.variable in study.variables)
    if len(known) == len(cohort.conditions):
        return _FULL, known
    if len(known) == 2 and len(cohort.conditions) == 3:
        return "+".join(sorted(c.variable for c in known)), known
    return None


@lru_cache(maxsize=256)
def instance_evidence(turns: tuple[Turn, ...]) -> dict[str, Entry]:
    """cohort id -> the evidence one instance's turns give (none before its table is read)."""
    head = _HEAD.search(turns[0].observation) if turns else None
    instance = instance_of(turns[0].observation) if turns else None
    if head is None or instance is None or head.group(1) not in STUDIES:
        return {}
    study = STUDIES[head.group(1)]
    rows = _table(study, turns)
    if len(rows) < int(head.group(4)):
        return {}
    out: dict[str, Entry] = {}
    for cohort in COHORTS:
        found = _subset(cohort, study)
        if found is None:
            continue
        name, conditions = found
        members = [r for r in rows if all(c.holds(r.get(c.variable)) for c in conditions)]
        if members:
            curve = kaplan_meier([float(r["time"] or 0.0) for r in members],
                                 [int(r["event"] or 0) for r in members])
            s12, s24, s36 = (round(v, 3) for v in curve)
            out[cohort.cohort_id] = (instance, name, len(members), s12, s24, s36)
    return out


def _line(cohort_id: str, entries: Iterable[Entry]) -> str:
    body = "; ".join(f"{i} {sub} n={n} S={a:.3f}/{b:.3f}/{c:.3f}"
                     for i, sub, n, a, b, c in sorted(set(entries)))
    return f"cohort {cohort_id}: {body}"


def _parse(note: str) -> tuple[str, list[Entry]] | None:
    key = note_key(note)
    if key is None or not key.startswith("cohort "):
        return None
    body = note.split(": ", 1)[1]
    return key[len("cohort "):], [(m[0], m[1], int(m[2]), float(m[3]), float(m[4]), float(m[5]))
                                  for m in _ENTRY.findall(body)]


def _pooled(entries: Sequence[Entry]) -> tuple[float, ...] | None:
    """n-weighted within each region (from the instance id), regions averaged; None below
    :data:`MIN_N` patients."""
    if sum(e[2] for e in entries) < MIN_N:
        return None
    by_region: dict[str, list[Entry]] = {}
    for e in entries:
        by_region.setdefault(e[0].split("-")[1], []).append(e)
    curves = []
    for group in by_region.values():
        total = sum(e[2] for e in group)
        curves.append([sum(e[2] * float(e[3 + k]) for e in group) / total for k in range(3)])
    return tuple(sum(c[k] for c in curves) / len(curves) for k in range(3))


class PooledCohorts:
    """Evidence pooled across instances; see the module docstring."""

    name = "pooled-cohorts"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        current = instance_of(observation)
        earlier = [t for t in history if instance_of(t.observation) != current]
        mine = [t for t in history if instance_of(t.observation) == current]
        return self.act_from_notes(self.notes(earlier), mine, observation)

    def notes(self, history: Sequence[Turn]) -> list[str]:
        by_instance: dict[str | None, list[Turn]] = {}
        for t in history:
            by_instance.setdefault(instance_of(t.observation), []).append(t)
        per_cohort: dict[str, list[Entry]] = {}
        for turns in by_instance.values():
            for cohort_id, entry in instance_evidence(tuple(turns)).items():
                per_cohort.setdefault(cohort_id, []).append(entry)
        return [_line(c.cohort_id, per_cohort[c.cohort_id]) for c in COHORTS
                if c.cohort_id in per_cohort]

    def merge(self, old: str, new: str) -> str:
        a, b = _parse(old), _parse(new)
        if a is None or b is None:
            return old if b is None else new
        return _line(a[0], [*a[1], *b[1]])

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        current = instance_of(observation)
        mine = [t for t in history if instance_of(t.observation) == current]
        head = _HEAD.search(mine[0].observation if mine else observation)
        if head is None or head.group(1) not in STUDIES:
            return {"tool": "metadata"}
        study = STUDIES[head.group(1)]
        rows = _table(study, mine)
        if len(rows) < int(head.group(4)):
            return {"tool": "sql",
                    "query": f"SELECT * FROM patients ORDER BY rowid LIMIT {PAGE} "
                             f"OFFSET {len(rows)}"}
        evidence: dict[str, set[Entry]] = {}
        for note in notes:
            parsed = _parse(note)
            if parsed is not None:
                evidence.setdefault(parsed[0], set()).update(
                    e for e in parsed[1] if e[0] != current)
        here = instance_evidence(tuple(mine))
        for cohort_id, entry in here.items():
            evidence.setdefault(cohort_id, set()).add(entry)
        study_curve = kaplan_meier([float(r["time"] or 0.0) for r in rows],
                                   [int(r["event"] or 0) for r in rows])
        estimates = {}
        for cohort in COHORTS:
            curve = self._estimate(sorted(evidence.get(cohort.cohort_id, ())), current)
            values = curve if curve is not None else study_curve
            estimates[cohort.cohort_id] = {
                f"s{h}": round(min(max(v, 0.0), 1.0), 4)
                for h, v in zip(HORIZONS, values, strict=True)}
        return {"tool": "submit", "estimates": estimates}

    @staticmethod
    def _estimate(entries: Sequence[Entry], current: str | None) -> tuple[float, ...] | None:
        full = _pooled([e for e in entries if e[1] == _FULL])
        if full is not None:
            return full
        if all(e[0] == current for e in entries):
            return None  # pieces of a cohort are combined only with remembered evidence
        subsets: dict[str, list[Entry]] = {}
        for e in entries:
            subsets.setdefault(e[1], []).append(e)
        pieces = [p for p in map(_pooled, subsets.values()) if p is not None]
        if not pieces:
            return None
        return tuple(sum(p[k] for p in pieces) / len(pieces) for k in range(3))
