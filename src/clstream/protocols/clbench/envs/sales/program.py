"""The forecasting program the builtin sales policy keeps in its workspace (docs/clbench.md
§4.3, §6).

The policy writes :data:`FORECAST_PROGRAM` to ``forecast.py`` once, adds each year's revealed
actuals as ``panel/actuals_<year>.csv``, writes ``task.json`` (the year, stores, products and
horizon asked for) and runs the program. The program itself copies the year's export into
``panel/`` in one schema, so with a persisted workspace the panel grows by one store-year
and one year of actuals per instance; in a fresh workspace it holds one store-year and the
forecast is flat. Standard library only, so a run costs the sandbox's start and no package
import (the program would work the same with numpy; the builtin policy keeps runs cheap).
"""

from __future__ import annotations

PROGRAM_PATH = "forecast.py"
TASK_PATH = "task.json"
PANEL_DIR = "panel"

FORECAST_PROGRAM = '''"""Sales forecast over a pooled panel kept in panel/.

Copies this year's export from data/ into panel/ (locality, furniture_name, year, units),
reads every panel file (exports and revealed actuals), estimates one log growth rate per
category from consecutive years of each series and extrapolates every target from its
latest level. Prints GROWTH lines and one FORECAST line per (locality, product).
"""
import csv
import glob
import json
import math
import os

COLUMNS = {"id": ("product_id", "item_code", "furniture_id"),
           "store": ("store_id", "branch_id", "location_id"),
           "year": ("sale_year", "txn_year", "year"),
           "units": ("quantity", "units_sold", "items_sold")}


def pick(header, names):
    for n, col in enumerate(header):
        if col.strip() in names:
            return n
    return None


def ingest(catalog, stores):
    os.makedirs("panel", exist_ok=True)
    for path in sorted(glob.glob("data/sales_*.csv")):
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
        cols = {k: pick(rows[0], v) for k, v in COLUMNS.items()} if rows else {}
        if not cols or None in cols.values():
            continue
        out = []
        for row in rows[1:]:
            try:
                out.append([stores[row[cols["store"]]],
                            catalog[row[cols["id"]]]["furniture_name"],
                            int(row[cols["year"]]), float(row[cols["units"]])])
            except (KeyError, IndexError, ValueError):
                continue
        with open("panel/export_" + os.path.basename(path), "w", newline="") as fh:
            csv.writer(fh, lineterminator="\\n").writerows(out)


def load_panel():
    panel = {}
    for path in sorted(glob.glob("panel/*.csv")):
        with open(path, newline="") as fh:
            for row in csv.reader(fh):
                if len(row) == 4:
                    panel[(row[0], row[1], int(row[2]))] = float(row[3])
    return panel


def growth_rates(panel, category):
    series = {}
    for (city, item, year), units in sorted(panel.items()):
        series.setdefault((city, item), []).append((year, units))
    logs = {}
    for (city, item), points in sorted(series.items()):
        for (y1, v1), (y2, v2) in zip(points, points[1:]):
            if item in category and v1 > 0 and v2 > 0:
                logs.setdefault(category[item], []).append(math.log(v2 / v1) / (y2 - y1))
    return {c: sum(v) / len(v) for c, v in sorted(logs.items())}


def shape(price):
    return 800.0 / (1.0 + math.exp(price / 1000.0)) + 100.0


def level(panel, city, item, year, by_name):
    cells = sorted(panel.items())
    own = [(y, v) for (c, i, y), v in cells if c == city and i == item]
    if own:
        return max(own)
    same = [v for (c, i, y), v in cells if i == item and y == year]
    if same:
        return year, sum(same) / len(same)
    info = by_name.get(item, {})
    peers = [(by_name[i], v) for (c, i, y), v in cells
             if y == year and i in by_name and by_name[i]["category"] == info.get("category")]
    if peers and "price_usd" in info:
        target = shape(float(info["price_usd"]))
        return year, sum(v * target / shape(float(p["price_usd"])) for p, v in peers) / len(peers)
    values = [v for (c, i, y), v in cells if y == year]
    return year, (sum(values) / len(values) if values else 100.0)


def main():
    with open("task.json") as fh:
        task = json.load(fh)
    with open("data/furniture.json") as fh:
        catalog = {r["furniture_id"]: r for r in json.load(fh)}
    ingest(catalog, task["stores"])
    panel = load_panel()
    by_name = {r["furniture_name"]: r for r in catalog.values()}
    category = {name: r["category"] for name, r in by_name.items()}
    growth = growth_rates(panel, category)
    fallback = sum(growth.values()) / len(growth) if growth else 0.0
    for name, rate in growth.items():
        print("GROWTH", name, "%.5f" % rate)
    years = range(task["year"], task["year"] + task["horizon"])
    for city in task["cities"]:
        for item in task["targets"]:
            rate = growth.get(category.get(item, ""), fallback)
            base, units = level(panel, city, item, task["year"] - 1, by_name)
            values = " ".join("%.1f" % (units * math.exp(rate * (y - base))) for y in years)
            print("FORECAST", city, "|", item, "|", values)


main()
'''
