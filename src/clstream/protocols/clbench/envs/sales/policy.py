"""The builtin sales policy (docs/clbench.md §4.3, §6): a forecasting program kept in the
workspace, and notes that carry what the years revealed.

Per instance the policy writes ``forecast.py`` if the workspace lacks it, adds every year of
actuals it remembers that the workspace lacks as ``panel/actuals_<year>.csv``, writes
``task.json``, runs the program and submits its FORECAST lines. With a persisted workspace
(the stateful arm) the panel pools every store-year and every revealed year (actuals are
revealed only with ``feedback=rich``; the paper's feedback is the composite score alone, so
the panel then holds the store-years shown, enough once a store has been shown twice), so the
program estimates per-category growth; in a fresh workspace with only the current instance's turns
(the stateless twin) it sees one store-year and forecasts flat. Should the program not run
(no sandbox here), the policy reads the export and the catalog and forecasts the same way
from what it remembers.

As a :class:`~clstream.core.environment.NoteTaker` it writes one note per revealed year
(``sales actuals <year>``: every locality | product | units, the evidence itself, merged as
a union) and one per category growth rate its program printed (``sales growth <category>``,
the latest estimate wins), so notes-only memories carry the panel and the growth estimates.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.environment import Turn, note_key
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.sales.program import (
    FORECAST_PROGRAM,
    PANEL_DIR,
    PROGRAM_PATH,
    TASK_PATH,
)

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


_OWN = re.compile(r"^Your own files: (.*)$", re.MULTILINE)
_FORECAST = re.compile(r"^FORECAST (.+?) \| (.+?) \| ([\d. ]+)$", re.MULTILINE)
_GROWTH = re.compile(r"^GROWTH (\w+) (-?\d+(?:\.\d+)?)$", re.MULTILINE)
ACTUALS_NOTE, GROWTH_NOTE = "sales actuals ", "sales growth "


def _turns_of(history: Sequence[Turn], observation: str) -> tuple[list[Turn], list[Turn]]:
    """(earlier instances' turns, the current instance's turns)."""
    current = instance_of(observation)
    mine = [t for t in history if instance_of(t.observation) == current]
    return [t for t in history if instance_of(t.observation) != current], mine


def _actions(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    out = []
    for t in turns:
        try:
            action = json.loads(t.action)
        except json.JSONDecodeError:
            action = {}
        out.append(action if isinstance(action, dict) else {})
    return out


def _revealed(turns: Sequence[Turn]) -> dict[int, dict[tuple[str, str], float]]:
    """year -> (locality, product) -> units, from the feedback after each submit."""
    out: dict[int, dict[tuple[str, str], float]] = {}
    for t in turns:
        for a in _ACTUALS.finditer(t.feedback):
            rows = out.setdefault(int(a.group(1)), {})
            for line in a.group(2).strip().splitlines():
                city, item, units = (p.strip() for p in line.split("|"))
                rows[(city, item)] = float(units)
    return out


def _growth_printed(turns: Sequence[Turn]) -> dict[str, tuple[int, float]]:
    """category -> (year of the instance, log growth) from the latest run that printed it."""
    out: dict[str, tuple[int, float]] = {}
    for t in turns:
        instance = instance_of(t.observation) or ""
        year = int(instance.rsplit("-", 1)[1]) if re.fullmatch(r"year-\d{4}", instance) else 0
        for m in _GROWTH.finditer(t.feedback):
            out[m.group(1)] = (year, float(m.group(2)))
    return out


class SalesForecaster:
    """Keeps a forecasting program and a pooled panel in the workspace; see the module
    docstring. Deterministic: the program's output is a pure function of the panel."""

    name = "sales-forecaster"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        earlier, mine = _turns_of(history, observation)
        return self._next(_revealed(earlier), _growth_printed(earlier), earlier, mine,
                          observation)

    # --- notes -----------------------------------------------------------------------------

    def notes(self, history: Sequence[Turn]) -> list[str]:
        lines = []
        for year, rows in sorted(_revealed(history).items()):
            lines.append(_actuals_note(year, rows))
        for category, (year, rate) in sorted(_growth_printed(history).items()):
            lines.append(f"{GROWTH_NOTE}{category}: {rate:.5f} log units per year, "
                         f"estimated in {year}")
        return lines

    def merge(self, old: str, new: str) -> str:
        key = note_key(old)
        if key is not None and key.startswith(ACTUALS_NOTE):
            year = int(key[len(ACTUALS_NOTE):])
            return _actuals_note(year, {**_actuals_rows(old), **_actuals_rows(new)})
        return max(old.strip(), new.strip(), key=lambda n: (_growth_note(n)[1], n))

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        _, mine = _turns_of(history, observation)
        revealed: dict[int, dict[tuple[str, str], float]] = {}
        growth: dict[str, tuple[int, float]] = {}
        for note in notes:
            key = note_key(note)
            if key is None:
                continue
            if key.startswith(ACTUALS_NOTE) and key[len(ACTUALS_NOTE):].isdigit():
                revealed.setdefault(int(key[len(ACTUALS_NOTE):]), {}).update(_actuals_rows(note))
            elif key.startswith(GROWTH_NOTE):
                category, (rate, year) = key[len(GROWTH_NOTE):], _growth_note(note)
                if rate is not None and (category not in growth or growth[category][0] <= year):
                    growth[category] = (year, rate)
        return self._next(revealed, growth, [], mine, observation)

    # --- one step --------------------------------------------------------------------------

    def _next(self, revealed: Mapping[int, Mapping[tuple[str, str], float]],
              growth: Mapping[str, tuple[int, float]], earlier: Sequence[Turn],
              mine: Sequence[Turn], observation: str) -> dict[str, Any]:
        intro = mine[0].observation if mine else observation
        task = _sales_task(intro)
        if task is None:
            return {"tool": "list_files"}
        actions = _actions(mine)
        own = _own_files(intro) | {str(a.get("path")) for a, t in zip(actions, mine, strict=True)
                                   if a.get("tool") == "write_file"
                                   and t.feedback.startswith("Wrote ")}
        if PROGRAM_PATH not in own:
            return {"tool": "write_file", "path": PROGRAM_PATH, "content": FORECAST_PROGRAM}
        for year in sorted(revealed):
            path = f"{PANEL_DIR}/actuals_{year}.csv"
            if path not in own:
                return {"tool": "write_file", "path": path,
                        "content": _actuals_csv(year, revealed[year])}
        if not any(a.get("tool") == "write_file" and a.get("path") == TASK_PATH for a in actions):
            return {"tool": "write_file", "path": TASK_PATH, "content": _task_json(task)}
        runs = [t for a, t in zip(actions, mine, strict=True) if a.get("tool") == "run_python"]
        if not runs:
            return {"tool": "run_python", "path": PROGRAM_PATH}
        forecast = _program_forecast(runs[-1].feedback, task)
        if forecast is not None:
            return {"tool": "submit", "predictions": forecast}
        return self._fallback(task, revealed, growth, [*earlier, *mine])

    def _fallback(self, task: _Task, revealed: Mapping[int, Mapping[tuple[str, str], float]],
                  growth: Mapping[str, tuple[int, float]], turns: Sequence[Turn]
                  ) -> dict[str, Any]:
        """Without a working program: read the export and the catalog, forecast here."""
        reads = _read_results(turns)
        for path in (task.data_path, "data/furniture.json"):
            if path not in reads:
                return {"tool": "read_file", "path": path}
        catalog = _catalog(reads["data/furniture.json"])
        stores = dict(task.stores)
        panel: dict[Cell, float] = {}
        for t in turns:
            m = _CONTENTS.match(t.feedback)
            if m and m.group(1).startswith("data/sales_"):
                panel.update(_export_cells(t.feedback[m.end():], catalog, stores))
        for year, rows in revealed.items():
            panel.update({(c, i, year): v for (c, i), v in rows.items()})
        return {"tool": "submit", "predictions": _forecast(task, panel, catalog, growth)}


def _own_files(intro: str) -> set[str]:
    m = _OWN.search(intro)
    if not m or m.group(1).strip() == "(none)":
        return set()
    return {p.strip() for p in m.group(1).split(",") if p.strip()}


def _actuals_csv(year: int, rows: Mapping[tuple[str, str], float]) -> str:
    return "".join(f"{c},{i},{year},{v:g}\n" for (c, i), v in sorted(rows.items()))


def _actuals_note(year: int, rows: Mapping[tuple[str, str], float]) -> str:
    body = "; ".join(f"{c} | {i} | {v:g}" for (c, i), v in sorted(rows.items()))
    return f"{ACTUALS_NOTE}{year}: units sold in {year} (locality | product | units): {body}"


def _actuals_rows(note: str) -> dict[tuple[str, str], float]:
    body = note.split("):", 1)[1] if "):" in note else ""
    out = {}
    for part in body.split(";"):
        fields = [f.strip() for f in part.split("|")]
        if len(fields) == 3:
            try:
                out[(fields[0], fields[1])] = float(fields[2])
            except ValueError:
                continue
    return out


def _growth_note(note: str) -> tuple[float | None, int]:
    m = re.search(r": (-?\d+(?:\.\d+)?) log units per year, estimated in (\d{4})", note)
    return (float(m.group(1)), int(m.group(2))) if m else (None, 0)


def _task_json(task: _Task) -> str:
    return json.dumps({"year": task.year, "cities": task.cities, "targets": task.targets,
                       "horizon": task.horizon, "stores": task.stores}, indent=1)


def _program_forecast(feedback: str, task: _Task) -> list[dict[str, Any]] | None:
    """The submission the program printed, or None when it printed no complete forecast."""
    out = []
    found = {(m.group(1), m.group(2)): m.group(3).split() for m in _FORECAST.finditer(feedback)}
    for city in task.cities:
        for item in task.targets:
            values = found.get((city, item))
            if values is None or len(values) != task.horizon:
                return None
            out += [{"locality": city, "furniture_name": item, "year": task.year + h,
                     "items_sold": float(v)} for h, v in enumerate(values)]
    return out


def _forecast(task: _Task, panel: dict[Cell, float], catalog: dict[str, dict[str, Any]],
              remembered: Mapping[str, tuple[int, float]]) -> list[dict[str, Any]]:
    by_name = {r["furniture_name"]: r for r in catalog.values()}
    growth = {**{c: rate for c, (_, rate) in remembered.items()}, **_growth(panel, by_name)}
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


