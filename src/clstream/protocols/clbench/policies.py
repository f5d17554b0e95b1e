"""Builtin (non-LLM) policies for the CL-Bench environments and a driver that plays them.

Each policy is a pure function of (turns seen, current observation) over the environments'
*texts* only (observations, its own JSON actions, feedback), so the builtin model can run it
from a prompt later. The stateful arm hands a policy the whole run's turns; the stateless arm
only the current instance's turns: the same code with its memory wiped, which is all that
separates the two (docs/clbench.md §6: each task has a stateful builtin policy that learns the latent
structure and a stateless one that cannot).

* :class:`SpectrumRegistry` -- keeps a registry of transmitters seen across scans (running
  mean centre and width, hit count) and reports confirmed ones even while they are silent;
  without memory it reports only the peaks of the current scan.
* :class:`SalesForecaster` -- pools every store-year it has seen (exports it read, actuals
  revealed after each year) into one panel under a schema alias map, estimates one growth
  rate per category from consecutive years, and extrapolates each target's latest level;
  without memory it forecasts flat from the one visible store-year.
* :class:`~clstream.protocols.clbench.envs.database_policy.SchemaExplorer` -- caches schema
  facts (table per category, columns, price/time/boolean encodings) and answers with one
  query once it knows them; forgets all on a drift notice; without memory it rediscovers them
  for every question.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.core.environment import (
    NOTE_SEPARATOR,
    Environment,
    NoteTaker,
    Policy,
    Turn,
    action_text,
    merge_notes,
    note_key,
    rollout_order,
)
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.database_policy import SchemaExplorer

__all__ = [
    "POLICIES",
    "InstanceRun",
    "SalesForecaster",
    "SchemaExplorer",
    "SpectrumRegistry",
    "current_turns",
    "play",
    "play_instance",
    "play_stateful",
    "play_stateless",
    "play_with_notes",
]


# --- driving a policy ----------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceRun:
    """One finished instance of a policy run."""

    instance_id: str
    stage: int
    reward: float
    success: bool | None
    steps: int
    info: dict[str, Any] = field(default_factory=dict)


def current_turns(history: Sequence[Turn], observation: str) -> list[Turn]:
    """The turns of the instance ``observation`` belongs to (by its header line)."""
    instance = instance_of(observation)
    return [t for t in history if instance_of(t.observation) == instance]


def play_instance(env: Environment, policy: Policy, instance_id: str, history: list[Turn]
                  ) -> InstanceRun:
    """Play one instance from ``env``'s current state, appending its turns to ``history``."""
    query = env.begin(instance_id)
    while True:
        action = policy.act(tuple(history), query.observation)
        result = env.step(action)
        history.append(Turn(query.observation, action_text(action), result.feedback))
        if result.instance_complete:
            assert result.reward is not None
            return InstanceRun(instance_id, query.stage, result.reward, result.success,
                               result.step, dict(result.info))
        assert result.next_query is not None
        query = result.next_query


def play(env: Environment, policy: Policy, order: Sequence[str], *, stateful: bool
         ) -> list[InstanceRun]:
    """Play ``order``: one memory through all of it (stateful), or each instance from
    :meth:`~clstream.core.environment.Environment.reset_to` with no memory (stateless)."""
    history: list[Turn] = []
    runs = []
    if stateful:
        env.reset()
    for instance_id in order:
        if not stateful:
            env.reset_to(instance_id)
            history = []
        runs.append(play_instance(env, policy, instance_id, history))
    return runs


def play_with_notes(env: Environment, policy: NoteTaker, rollout: int = 0) -> list[InstanceRun]:
    """A stateful rollout where the policy remembers earlier instances only through its notes
    (what a notepad would hold): after each instance its turns become notes, merged into the
    notes kept; within an instance the policy sees that instance's turns."""
    env.reset()
    notes: list[str] = []
    runs = []
    for instance_id in rollout_order(env.schedule, env.order_policy, env.seed, rollout):
        query = env.begin(instance_id)
        turns: list[Turn] = []
        while True:
            action = policy.act_from_notes(notes, tuple(turns), query.observation)
            result = env.step(action)
            turns.append(Turn(query.observation, action_text(action), result.feedback))
            if result.instance_complete:
                break
            assert result.next_query is not None
            query = result.next_query
        assert result.reward is not None
        runs.append(InstanceRun(instance_id, query.stage, result.reward, result.success,
                                result.step, dict(result.info)))
        notes = merge_notes(policy, [*notes, *policy.notes(turns)])
    return runs


def play_stateful(env: Environment, policy: Policy, rollout: int = 0) -> list[InstanceRun]:
    """A stateful rollout in the task's order for ``rollout`` (seeded by the env's seed)."""
    return play(env, policy, rollout_order(env.schedule, env.order_policy, env.seed, rollout),
                stateful=True)


def play_stateless(env: Environment, policy: Policy) -> list[InstanceRun]:
    """The stateless arm, every instance once in canonical order (it does not depend on order)."""
    return play(env, policy, env.schedule.instance_ids, stateful=False)


# --- spectrum monitoring --------------------------------------------------------------------

_PEAK = re.compile(r"^p\d+ \| (-?\d+(?:\.\d+)?) \| (-?\d+(?:\.\d+)?) \| (\d+(?:\.\d+)?)\s*$",
                   re.MULTILINE)
WIDE_FROM = 8.5  # MHz: peaks at least this wide belong to the wideband class


def scan_peaks(observation: str) -> list[tuple[float, float]]:
    """(centre, width) of every peak line of a scan observation."""
    return [(float(m.group(1)), float(m.group(3))) for m in _PEAK.finditer(observation)]


@dataclass
class _Track:
    center: float
    width: float
    hits: int
    wide: bool

    def add(self, center: float, width: float) -> None:
        self.hits += 1
        self.center += (center - self.center) / self.hits
        self.width += (width - self.width) / self.hits


class SpectrumRegistry:
    """Transmitter registry over every scan seen; reports confirmed tracks plus current peaks.

    A peak joins the nearest track of its width class within max(2.5, 0.3 width) MHz; a track
    with two hits or more is reported even when silent. With only the current scan, this is
    "report what you see".
    """

    name = "spectrum-registry"

    def __init__(self, min_hits: int = 2) -> None:
        self.min_hits = min_hits

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        scans: dict[str | None, list[tuple[float, float]]] = {}
        for turn in history:
            scans.setdefault(instance_of(turn.observation), scan_peaks(turn.observation))
        return self._report(scans, observation)

    # --- notes: the peaks of every scan seen, one note per 24 MHz stretch of the band -------

    def notes(self, history: Sequence[Turn]) -> list[str]:
        """One note per stretch of the band holding peaks: each peak as ``<scan> <centre>/<width>``
        (the scan id is the evidence, so merging a scan twice changes nothing)."""
        seen: dict[str, list[tuple[float, float]]] = {}
        for turn in history:
            scan = instance_of(turn.observation)
            if scan is not None:
                seen.setdefault(scan, scan_peaks(turn.observation))
        stretches: dict[int, set[_Sighting]] = {}
        for scan, peaks in seen.items():
            for c, w in peaks:
                stretches.setdefault(_stretch(c), set()).add((scan, c, w))
        return [_spectrum_note(k, stretches[k]) for k in sorted(stretches)]

    def merge(self, old: str, new: str) -> str:
        key = note_key(new)
        stretch = _SUBJECT.fullmatch(key or "")
        start = int(float(stretch.group(1))) if stretch else 0
        return _spectrum_note(start // SPECTRUM_STRETCH, _sightings(old) | _sightings(new))

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        remembered: dict[str | None, list[tuple[float, float]]] = {}
        for scan, c, w in sorted(s for note in notes if _SUBJECT.fullmatch(note_key(note) or "")
                                 for s in _sightings(note)):
            remembered.setdefault(scan, []).append((c, w))
        scans: dict[str | None, list[tuple[float, float]]] = remembered
        for turn in history:
            scans.setdefault(instance_of(turn.observation), scan_peaks(turn.observation))
        return self._report(scans, observation)

    def _report(self, scans: dict[str | None, list[tuple[float, float]]], observation: str
                ) -> dict[str, Any]:
        current = instance_of(observation)
        scans.pop(current, None)
        tracks: list[_Track] = []
        for peaks in scans.values():
            for c, w in peaks:
                self._match(tracks, c, w)
        now = [self._match(tracks, c, w) for c, w in scan_peaks(observation)]
        report = [t for t in tracks if t.hits >= self.min_hits or any(t is n for n in now)]
        report.sort(key=lambda t: t.center)
        return {"transmitters": [
            {"center_freq": round(t.center, 2), "bandwidth": round(t.width, 2),
             "currently_active": any(t is n for n in now)} for t in report]}

    @staticmethod
    def _match(tracks: list[_Track], center: float, width: float) -> _Track:
        wide = width >= WIDE_FROM
        best, gap = None, math.inf
        for t in tracks:
            d = abs(t.center - center)
            if t.wide == wide and d < max(2.5, 0.3 * t.width) and d < gap:
                best, gap = t, d
        if best is None:
            best = _Track(center, width, 1, wide)
            tracks.append(best)
        else:
            best.add(center, width)
        return best


SPECTRUM_STRETCH = 24  # MHz of band per note: few notes, each naming the words of a scan
_SUBJECT = re.compile(r"spectrum (\d+)-\d+ MHz")
_ENTRY = re.compile(r"(\S+) (-?\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)")
_Sighting = tuple[str, float, float]


def _stretch(center: float) -> int:
    return max(0, math.floor(center / SPECTRUM_STRETCH))


def _spectrum_note(stretch: int, sightings: set[_Sighting]) -> str:
    lo = stretch * SPECTRUM_STRETCH
    entries = ", ".join(f"{scan} {c:g}/{w:g}" for scan, c, w in sorted(sightings))
    return (f"spectrum {lo}-{lo + SPECTRUM_STRETCH} MHz: detected peaks (scan centre/width "
            f"MHz) {entries}")


def _sightings(note: str) -> set[_Sighting]:
    body = note.split(NOTE_SEPARATOR, 1)[1] if NOTE_SEPARATOR in note else ""
    body = body.split(") ", 1)[1] if ") " in body else ""
    return {(m.group(1), float(m.group(2)), float(m.group(3))) for m in _ENTRY.finditer(body)}


# --- sales prediction -----------------------------------------------------------------------

ID_COLUMNS = ("product_id", "item_code", "furniture_id")
STORE_COLUMNS = ("store_id", "branch_id", "location_id")
YEAR_COLUMNS = ("sale_year", "txn_year", "year")
UNIT_COLUMNS = ("quantity", "units_sold", "items_sold")
_STORE = re.compile(r"([A-Z][A-Za-z .]*?) \((LOC\d+)\)")
_CONTENTS = re.compile(r"^Contents of (\S+):\n", re.MULTILINE)
_ACTUALS = re.compile(r"^Actual units sold in (\d{4}) .*?:\n((?:.+ \| .+ \| \d+\n?)+)",
                      re.MULTILINE)

Cell = tuple[str, str, int]


@dataclass(frozen=True)
class _Task:
    year: int
    stores: dict[str, str]
    data_path: str
    targets: list[str]
    cities: list[str]
    horizon: int


def _sales_task(intro: str) -> _Task | None:
    year = re.search(r"^Year (\d{4})\.", intro, re.MULTILINE)
    data = re.search(r"(data/sales_\w+?_\d{4}\.csv)", intro)
    goal = re.search(r"every locality \((.+?)\), every furniture_name \((.+?)\) and every year "
                     r"(\d{4})-(\d{4})", intro)
    if not (year and data and goal):
        return None
    stores = {loc: city.strip() for city, loc in _STORE.findall(intro)}
    return _Task(int(year.group(1)), stores, data.group(1),
                 [n.strip() for n in goal.group(2).split(",")],
                 [c.strip() for c in goal.group(1).split(",")],
                 int(goal.group(4)) - int(goal.group(3)) + 1)


def _read_results(turns: Sequence[Turn]) -> dict[str, str]:
    """path -> contents of every successful read, latest last."""
    out: dict[str, str] = {}
    for t in turns:
        m = _CONTENTS.match(t.feedback)
        if m:
            out[m.group(1)] = t.feedback[m.end():]
    return out


def _catalog(text: str) -> dict[str, dict[str, Any]]:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return {r["furniture_id"]: r for r in rows if isinstance(r, dict) and "furniture_id" in r}


def _pick(header: Sequence[str], names: Sequence[str]) -> int | None:
    for n, col in enumerate(header):
        if col.strip() in names:
            return n
    return None


def _export_cells(text: str, catalog: dict[str, dict[str, Any]], stores: dict[str, str]
                  ) -> dict[Cell, float]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return {}
    cols = [_pick(rows[0], names) for names in (ID_COLUMNS, STORE_COLUMNS, YEAR_COLUMNS,
                                                UNIT_COLUMNS)]
    if any(c is None for c in cols):
        return {}
    i_id, i_store, i_year, i_units = (int(c) for c in cols if c is not None)
    out: dict[Cell, float] = {}
    for row in rows[1:]:
        try:
            item, city = catalog[row[i_id]]["furniture_name"], stores[row[i_store]]
            out[(city, item, int(row[i_year]))] = float(row[i_units])
        except (KeyError, IndexError, ValueError):
            continue
    return out


def _demand_shape(price: float) -> float:
    return 800.0 / (1.0 + math.exp(price / 1000.0)) + 100.0


class SalesForecaster:
    """Pooled-panel forecaster: per-category growth from every consecutive pair of years it
    has seen, each target extrapolated from its latest known level. Without memory it sees one
    store-year, so it forecasts flat and borrows levels across stores."""

    name = "sales-forecaster"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        mine = current_turns(history, observation)
        task = _sales_task(mine[0].observation if mine else observation)
        if task is None:
            return {"tool": "list_files"}
        reads = _read_results(history)
        if task.data_path not in _read_results(mine):
            return {"tool": "read_file", "path": task.data_path}
        if "data/furniture.json" not in reads:
            return {"tool": "read_file", "path": "data/furniture.json"}
        catalog = _catalog(reads["data/furniture.json"])
        stores = dict(task.stores)
        for t in history:
            stores.update({loc: city.strip() for city, loc in _STORE.findall(t.observation)})
        panel: dict[Cell, float] = {}
        for t in history:
            m = _CONTENTS.match(t.feedback)
            if m and m.group(1).startswith("data/sales_"):
                panel.update(_export_cells(t.feedback[m.end():], catalog, stores))
            for a in _ACTUALS.finditer(t.feedback):
                for line in a.group(2).strip().splitlines():
                    city, item, units = (p.strip() for p in line.split("|"))
                    panel[(city, item, int(a.group(1)))] = float(units)
        return {"tool": "submit", "predictions": self._forecast(task, panel, catalog)}

    def _forecast(self, task: _Task, panel: dict[Cell, float],
                  catalog: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        by_name = {r["furniture_name"]: r for r in catalog.values()}
        growth = _growth(panel, by_name)
        fallback = sum(growth.values()) / len(growth) if growth else 0.0
        out = []
        for city in task.cities:
            for item in task.targets:
                info = by_name.get(item, {})
                rate = growth.get(info.get("category", ""), fallback)
                base_year, level = _level(panel, city, item, task.year - 1, by_name)
                for year in range(task.year, task.year + task.horizon):
                    units = level * math.exp(rate * (year - base_year))
                    out.append({"locality": city, "furniture_name": item, "year": year,
                                "items_sold": round(units, 1)})
        return out


def _growth(panel: dict[Cell, float], by_name: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Mean log growth per year per category over consecutive observed years of a series."""
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for (city, item, year), units in panel.items():
        series.setdefault((city, item), []).append((year, units))
    sums: dict[str, list[float]] = {}
    for (_, item), points in series.items():
        category = by_name.get(item, {}).get("category")
        points.sort()
        for (y1, v1), (y2, v2) in zip(points, points[1:], strict=False):
            if category and v1 > 0 and v2 > 0:
                sums.setdefault(category, []).append(math.log(v2 / v1) / (y2 - y1))
    return {c: sum(v) / len(v) for c, v in sums.items()}


def _level(panel: dict[Cell, float], city: str, item: str, year: int,
           by_name: dict[str, dict[str, Any]]) -> tuple[int, float]:
    """(year, units) to extrapolate from: the series' latest value, else the same product at
    another store, else the visible store's category mean reshaped by price."""
    own = [(y, v) for (c, i, y), v in panel.items() if c == city and i == item]
    if own:
        return max(own)
    same = [(y, v) for (c, i, y), v in panel.items() if i == item and y == year]
    if same:
        return year, sum(v for _, v in same) / len(same)
    info = by_name.get(item, {})
    peers = [(by_name[i], v) for (c, i, y), v in panel.items()
             if y == year and i in by_name and by_name[i].get("category") == info.get("category")]
    if peers and "price_usd" in info:
        shape = _demand_shape(float(info["price_usd"]))
        return year, sum(v * shape / _demand_shape(float(p["price_usd"]))
                         for p, v in peers) / len(peers)
    values = [v for (c, i, y), v in panel.items() if y == year]
    return year, (sum(values) / len(values) if values else 100.0)


POLICIES: dict[str, Callable[[], Policy]] = {
    "blind_spectrum_monitoring": SpectrumRegistry,
    "sales_prediction": SalesForecaster,
    "database_exploration": SchemaExplorer,
}
"""The builtin policy of each task, by environment name."""
