"""Sales prediction (demand forecasting; docs/clbench.md §4.3; paper App. A.6).

A furniture retailer has three stores (San Francisco, New York, Chicago) and 19 products, one
per furniture type, in 5 categories. Yearly unit sales of product i in category c at store l::

    lambda = (C[l, c] / (1 + exp(price_i / 1000)) + 100) * g[c] ** (year - 2026)
    sold ~ Poisson(lambda)          (normal approximation, rounded; lambda >= 100 here)

with C[c] ~ U(500, 1200), C[l, c] = C[c] * U(0.7, 1.4) and one growth rate g[c] ~ U(1.10, 1.25)
per category *shared by all stores*: the latent structure a forecaster can pool across years.

Instance t (year T = 2027, 2028, ...) shows one store's point-of-sale export for year T-1 only
(the visible store rotates SF, NY, CHI, ...), each store with its own column names, and each
stage adds its own non-causal distractor columns. The agent forecasts 75 cells: the
alphabetically first product of each category at all three stores, years T..T+4. Reward: WAPE
skill 1 - sum|p - a| / sum|a| over the 75 cells, unclipped (a missing cell counts as 0 units);
r_max 1. After submitting, the agent sees only the composite score (the skill on year T's 15
cells), as in the paper; option ``feedback=rich`` adds year T's actual sales of the 15 target
(store, product) pairs, as the authors' code puts them in the next prompt. Never permuted (the
years are a calendar).

The workspace is a small file store (paths to bytes) held by the environment. ``data/`` belongs
to the environment and is replaced at every instance (older exports are discarded); files the
agent writes elsewhere -- by hand or from its programs -- persist across instances of the
stateful run and are wiped for the stateless arm (:meth:`SalesEnv.reset_to`), as the authors'
baseline cleans the workspace. Actions are tool calls: list, read, write, run a Python file or
snippet, submit; the budget is 20 steps and the 20th must be a submit.

A program runs in the OS sandbox (:func:`clstream.judges.workspace.run_in_workspace`: bubblewrap,
no network, an empty environment, a capped tmpfs, a read-only system) with the workspace as its
working directory and numpy, scipy and scikit-learn importable read-only where installed
(:data:`WORKSPACE_PACKAGES`; the first observation names what is available). Its files come
back into the workspace (``data/`` excepted) unless it was stopped at :data:`PROGRAM_TIMEOUT_S`
or for memory; its output is shown cut to :data:`STDOUT_CAP` / :data:`STDERR_CAP` characters.
The agent's files are capped at :data:`WORKSPACE_CAP` bytes in all (snapshots carry them, so a
resumed run continues with the same files).
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core.environment import ActionError, EnvironmentStateError, OrderPolicy
from clstream.judges.isolation import IsolationUnavailable, allowed_packages
from clstream.judges.sandbox import steady_paths
from clstream.judges.workspace import WorkspaceError, check_path, run_in_workspace
from clstream.protocols.clbench.envs.base import EnvironmentBase, Outcome, build_schedule

FIRST_YEAR, START_YEAR, HORIZON = 2026, 2027, 5
VARIANTS = ("stage_1", "stage_2", "stage_3")
SCHEDULES: dict[str, tuple[int, ...]] = {"default": (4, 4, 4), "short": (1, 1, 1)}
MAX_STEPS = 20
READ_CAP, FILE_CAP, WORKSPACE_CAP, MAX_FILES = 30_000, 100_000, 2_000_000, 100
WORKSPACE_PACKAGES = ("numpy", "scipy", "sklearn")
PROGRAM_TIMEOUT_S, PROGRAM_MEMORY_MB, CODE_CAP = 30.0, 1024, 50_000
STDOUT_CAP, STDERR_CAP = 4000, 2000

CATEGORIES: dict[str, tuple[tuple[str, int], ...]] = {
    "seating": (("Sectional Sofa", 2400), ("Chesterfield Sofa", 2000), ("Lounge Chair", 900),
                ("Accent Chair", 450)),
    "tables": (("Coffee Table", 500), ("Dining Table", 1200), ("Console Table", 600),
               ("End Table", 250)),
    "storage": (("Bookcase", 400), ("Dresser", 900), ("Display Cabinet", 1100),
                ("Sideboard", 1300)),
    "bedroom": (("King Bed Frame", 1600), ("Queen Bed Frame", 1300), ("Nightstand", 300),
                ("Upholstered Bed", 1800)),
    "workspace": (("Writing Desk", 700), ("Executive Desk", 1500), ("Desk Chair", 350)),
}
COLLECTIONS = ("Alder", "Birchwood", "Cobalt", "Dune", "Ember", "Fjord", "Granite", "Harbor",
               "Iris", "Juniper", "Kestrel", "Linden", "Meridian", "Nova", "Oakmont", "Pioneer",
               "Quarry", "Redwood", "Sierra", "Tamarack", "Umber", "Vale", "Willow", "Yarrow")


@dataclass(frozen=True)
class Store:
    city: str
    code: str
    location_id: str
    state: str
    columns: tuple[str, str, str, str]  # product id, store id, year, units


STORES = (
    Store("San Francisco", "sf", "LOC01", "CA", ("product_id", "store_id", "sale_year", "quantity")),
    Store("New York", "ny", "LOC02", "NY", ("item_code", "branch_id", "txn_year", "units_sold")),
    Store("Chicago", "chi", "LOC03", "IL", ("furniture_id", "location_id", "year", "items_sold")),
)
DISTRACTORS = (("weather_index", "foot_traffic"), ("online_search_volume", "marketing_spend"),
               ("competitor_price_index", "foot_traffic", "marketing_spend"))


@dataclass(frozen=True)
class Product:
    furniture_id: str
    name: str
    furniture_type: str
    category: str
    price: float


class SalesWorld:
    """The latent world of one seed: catalog, assortments, growth, the full sales panel."""

    def __init__(self, seed: int, last_year: int) -> None:
        rng = random.Random(f"sales-world:{seed}")
        names = rng.sample(COLLECTIONS, sum(len(v) for v in CATEGORIES.values()))
        self.products: list[Product] = []
        for category, types in CATEGORIES.items():
            for ftype, base in types:
                n = len(self.products)
                price = round(base * rng.uniform(0.8, 1.25) / 10) * 10 - 0.01
                self.products.append(Product(f"FRN-{101 + n}", f"{names[n]} {ftype}", ftype,
                                             category, round(price, 2)))
        self.growth = {c: rng.uniform(1.10, 1.25) for c in CATEGORIES}
        base_level = {c: rng.uniform(500, 1200) for c in CATEGORIES}
        self.level = {(s.city, c): base_level[c] * rng.uniform(0.7, 1.4)
                      for s in STORES for c in CATEGORIES}
        self.assortment: dict[str, list[Product]] = {}
        for s in STORES:
            keep = [rng.choice([p for p in self.products if p.category == c]) for c in CATEGORIES]
            others = [p for p in self.products if p not in keep]
            keep += rng.sample(others, rng.choice((6, 7)))
            self.assortment[s.city] = sorted(keep, key=lambda p: p.furniture_id)
        self.targets = [min((p for p in self.products if p.category == c), key=lambda p: p.name)
                        for c in CATEGORIES]
        self.sales: dict[tuple[str, str, int], int] = {}
        self.expected: dict[tuple[str, str, int], float] = {}
        for year in range(FIRST_YEAR, last_year + 1):
            for s in STORES:
                for p in self.products:
                    lam = self.expected_units(s.city, p, year)
                    self.expected[(s.city, p.name, year)] = lam
                    self.sales[(s.city, p.name, year)] = max(0, round(rng.gauss(lam, lam ** 0.5)))

    def expected_units(self, city: str, p: Product, year: int) -> float:
        sens = 1.0 / (1.0 + math.exp(p.price / 1000.0))
        return (self.level[(city, p.category)] * sens + 100.0) * (
            self.growth[p.category] ** (year - FIRST_YEAR))

    def export_csv(self, store: Store, year: int, stage: int, seed: int) -> str:
        """The visible store's export of ``year`` in its own schema, with the stage's
        distractor columns."""
        rng = random.Random(f"sales-distractors:{seed}:{store.code}:{year}")
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([*store.columns, *DISTRACTORS[stage]])
        for p in self.assortment[store.city]:
            lam = self.expected[(store.city, p.name, year)]
            extra = {"weather_index": round(50 + 10 * math.sin(math.pi * year / 2)
                                            + rng.gauss(0, 3), 1),
                     "foot_traffic": rng.randint(50, 500),
                     "online_search_volume": max(0, round(0.8 * lam + rng.gauss(0, 0.2 * lam))),
                     "marketing_spend": round(rng.lognormvariate(8.0, 0.5), 2),
                     "competitor_price_index": round(0.6 * p.price + rng.gauss(0, 50), 1)}
            writer.writerow([p.furniture_id, store.location_id, year,
                             self.sales[(store.city, p.name, year)],
                             *(extra[d] for d in DISTRACTORS[stage])])
        return out.getvalue()


def wape_skill(predicted: Mapping[Any, float], actual: Mapping[Any, float]) -> float:
    """1 - sum|p - a| / sum|a| over the cells of ``actual`` (a missing prediction is 0)."""
    denom = sum(abs(a) for a in actual.values())
    err = sum(abs(predicted.get(k, 0.0) - a) for k, a in actual.items())
    return 1.0 - err / denom if denom > 0 else (1.0 if err == 0 else 0.0)


INSTRUCTIONS = (
    "You are the forecasting analyst of a furniture retailer with three stores. Every year you "
    "receive one store's sales export for the year just ended (older exports are deleted) plus "
    "the product catalog, and you forecast yearly units sold for several products at every "
    "store for the next five years, including stores and products missing from the export. "
    "You work through tools in a small workspace: data/ holds this year's files and is "
    "replaced every year; files you write anywhere else, by hand or from your Python programs, "
    "stay for later years. Programs run in a sandbox without network, with the workspace as "
    "their working directory. The forecast is "
    "scored by 1 - sum|predicted - actual| / sum|actual| over all its cells; after submitting "
    "you see the composite score: the same skill on the first forecast year alone."
)
ACTION_FORMAT = (
    "Reply with one JSON object, one tool call: "
    '{"tool": "list_files"} | {"tool": "read_file", "path": "<path>"} | '
    '{"tool": "write_file", "path": "<path outside data/>", "content": "<text>"} | '
    '{"tool": "run_python", "path": "<file.py>"} | {"tool": "run_python", "code": "<program>"} | '
    '{"tool": "submit", "predictions": [{"locality": "<store city>", "furniture_name": '
    '"<name>", "year": <year>, "items_sold": <number>}, ...]}. Submit ends the year.'
)
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["tool"],
    "properties": {
        "tool": {"enum": ["list_files", "read_file", "write_file", "run_python", "submit"]},
        "path": {"type": "string"}, "content": {"type": "string"}, "code": {"type": "string"},
        "predictions": {"type": "array", "items": {
            "type": "object",
            "required": ["locality", "furniture_name", "year", "items_sold"],
            "properties": {"locality": {"type": "string"}, "furniture_name": {"type": "string"},
                           "year": {"type": "integer"},
                           "items_sold": {"type": "number", "minimum": 0}}}}},
}


def _year_of(instance_id: str) -> int:
    return int(instance_id.rsplit("-", 1)[1])


class SalesEnv(EnvironmentBase):
    """Sales prediction: 12 yearly forecasts (4/4/4), 20 steps, persistent workspace."""

    name: ClassVar[str] = "sales_prediction"
    order_policy: ClassVar[OrderPolicy] = OrderPolicy.FIXED
    best_reward: ClassVar[float] = 1.0
    min_reward: ClassVar[float] = 0.0
    max_steps: ClassVar[int] = MAX_STEPS
    instructions: ClassVar[str] = INSTRUCTIONS
    action_format: ClassVar[str] = ACTION_FORMAT
    action_schema: ClassVar[Mapping[str, Any]] = ACTION_SCHEMA
    OPTIONS: ClassVar[Mapping[str, tuple[str, ...]]] = {"feedback": ("paper", "rich")}

    def __init__(self, seed: int = 0, schedule: str = "default", max_invalid: int = 3,
                 options: Mapping[str, str] | None = None) -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; known: {sorted(SCHEDULES)}")
        sizes = SCHEDULES[schedule]
        years = list(range(START_YEAR, START_YEAR + sum(sizes)))
        super().__init__(seed, build_schedule(schedule, sizes, VARIANTS,
                                              [f"year-{y}" for y in years]), max_invalid,
                         options)
        self.world = SalesWorld(seed, years[-1] + HORIZON - 1)
        self.files: dict[str, bytes] = {}
        found = allowed_packages(WORKSPACE_PACKAGES).names  # with what they require
        self.packages = tuple(n for n in WORKSPACE_PACKAGES if n in found)

    # --- content ---------------------------------------------------------------------------

    def visible_store(self, instance_id: str) -> Store:
        return STORES[self.schedule.canonical_index(instance_id) % len(STORES)]

    def data_path(self, instance_id: str) -> str:
        return f"data/sales_{self.visible_store(instance_id).code}_{_year_of(instance_id) - 1}.csv"

    def actuals(self, instance_id: str, years: Sequence[int] | None = None
                ) -> dict[tuple[str, str, int], float]:
        """The scored cells of an instance: (city, product name, year) -> units sold."""
        start = _year_of(instance_id)
        span = years if years is not None else range(start, start + HORIZON)
        return {(s.city, p.name, y): float(self.world.sales[(s.city, p.name, y)])
                for s in STORES for p in self.world.targets for y in span}

    def _data_files(self, instance_id: str) -> dict[str, bytes]:
        store, year = self.visible_store(instance_id), _year_of(instance_id)
        stage = self.schedule.stage_of(instance_id)
        catalog = [{"furniture_id": p.furniture_id, "furniture_name": p.name,
                    "furniture_type": p.furniture_type, "category": p.category,
                    "price_usd": p.price} for p in self.world.products]
        location = [{"location_id": store.location_id, "city": store.city, "state": store.state}]
        texts = {self.data_path(instance_id): self.world.export_csv(store, year - 1, stage,
                                                                     self.seed),
                 "data/furniture.json": json.dumps(catalog, indent=1),
                 "data/locations.json": json.dumps(location, indent=1)}
        return {path: text.encode() for path, text in texts.items()}

    def own_files(self) -> dict[str, bytes]:
        """The agent's files: the workspace outside ``data/``."""
        return {k: v for k, v in self.files.items() if not k.startswith("data/")}

    # --- hooks -----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {"horizon": HORIZON, "stores": [s.city for s in STORES],
                "workspace": {"max_bytes": WORKSPACE_CAP, "program_timeout_s": PROGRAM_TIMEOUT_S,
                              "program_memory_mb": PROGRAM_MEMORY_MB}}

    def _reset_state(self) -> None:
        self.files = {}

    def _enter(self, instance_id: str) -> None:
        self.files = {k: v for k, v in self.files.items() if not k.startswith("data/")}
        self.files.update(self._data_files(instance_id))

    def _observation(self, first: bool) -> str:
        assert self.current is not None
        year, store = _year_of(self.current), self.visible_store(self.current)
        left = self.max_steps - self._valid
        budget = (f"Steps left this year: {left} of {self.max_steps}"
                  + (" (this one must be a submit)." if left == 1 else "."))
        if not first:
            return f"Forecast for year {year} continues. {budget}"
        stores = ", ".join(f"{s.city} ({s.location_id})" for s in STORES)
        columns = self.files[self.data_path(self.current)].decode().split("\n", 1)[0]
        columns = columns.replace(",", ", ")
        own = sorted(k for k in self.files if not k.startswith("data/"))
        targets = ", ".join(p.name for p in self.world.targets)
        return "\n".join([
            f"Year {year}. The retailer's stores: {stores}.",
            f"Visible store this year: {store.city} ({store.location_id}); its export covers "
            f"{year - 1} only.",
            "Files in data/:",
            f"  {self.data_path(self.current)} (columns: {columns})",
            "  data/furniture.json (catalog: furniture_id, furniture_name, furniture_type, "
            "category, price_usd)",
            "  data/locations.json (the visible store)",
            f"Your own files: {', '.join(own) if own else '(none)'}",
            "Python programs may import the standard library"
            + (f" and {', '.join(self.packages)}." if self.packages else " only."),
            f"Forecast items_sold for every locality (San Francisco, New York, Chicago), every "
            f"furniture_name ({targets}) and every year {year}-{year + HORIZON - 1}: "
            f"{len(STORES) * len(self.world.targets) * HORIZON} cells.",
            budget])

    def _check(self, action: dict[str, Any]) -> None:
        tool = action.get("tool")
        if tool not in ("list_files", "read_file", "write_file", "run_python", "submit"):
            raise ActionError('"tool" must be one of list_files, read_file, write_file, '
                              f"run_python, submit; got {tool!r}")
        if tool != "submit" and self._valid >= self.max_steps - 1:
            raise ActionError("this is the last step of the year: only submit is accepted")
        if tool in ("read_file", "write_file"):
            path = action.get("path")
            if not isinstance(path, str) or not path.strip():
                raise ActionError(f'{tool} needs a "path" string')
        if tool == "write_file":
            self._check_write(str(action["path"]).strip(), action.get("content"))
        if tool == "run_python":
            self._check_run(action)
        if tool == "submit":
            self._cells(action.get("predictions"))

    def _check_write(self, path: str, content: Any) -> None:
        if not isinstance(content, str):
            raise ActionError('write_file needs a "content" string')
        try:
            check_path(path)
        except WorkspaceError as err:
            raise ActionError(str(err)) from None
        if path.split("/")[0] == "data":
            raise ActionError("data/ is read-only; write your files elsewhere")
        if len(content) > FILE_CAP:
            raise ActionError(f"a file holds at most {FILE_CAP} characters")
        others = {k: v for k, v in self.own_files().items() if k != path}
        if len(others) >= MAX_FILES:
            raise ActionError(f"the workspace holds at most {MAX_FILES} files of yours")
        if sum(map(len, others.values())) + len(content.encode()) > WORKSPACE_CAP:
            raise ActionError(f"your files may hold at most {WORKSPACE_CAP} bytes in all")

    def _check_run(self, action: dict[str, Any]) -> None:
        path, code = action.get("path"), action.get("code")
        if (path is None) == (code is None):
            raise ActionError('run_python needs either a "path" (a .py file of the workspace) '
                              'or a "code" string, not both')
        if code is not None and (not isinstance(code, str) or len(code) > CODE_CAP):
            raise ActionError(f'run_python "code" must be a string of at most {CODE_CAP} '
                              "characters")

    def _cells(self, predictions: Any) -> dict[tuple[str, str, int], float]:
        assert self.current is not None
        if not isinstance(predictions, list):
            raise ActionError('submit needs a "predictions" list')
        year = _year_of(self.current)
        cities = {s.city.lower(): s.city for s in STORES}
        names = {p.name.lower(): p.name for p in self.world.targets}
        cells: dict[tuple[str, str, int], float] = {}
        for n, entry in enumerate(predictions):
            where = f"predictions[{n}]"
            if not isinstance(entry, dict):
                raise ActionError(f"{where} must be an object")
            city = cities.get(str(entry.get("locality", "")).strip().lower())
            name = names.get(str(entry.get("furniture_name", "")).strip().lower())
            y, units = entry.get("year"), entry.get("items_sold")
            if city is None:
                raise ActionError(f"{where}.locality {entry.get('locality')!r} is not a store")
            if name is None:
                raise ActionError(f"{where}.furniture_name {entry.get('furniture_name')!r} is "
                                  "not a forecast product")
            if isinstance(y, bool) or not isinstance(y, int) or not year <= y < year + HORIZON:
                raise ActionError(f"{where}.year must be an integer in {year}-"
                                  f"{year + HORIZON - 1}, got {y!r}")
            if (isinstance(units, bool) or not isinstance(units, int | float)
                    or not math.isfinite(units) or units < 0):
                raise ActionError(f"{where}.items_sold must be a number >= 0, got {units!r}")
            if (city, name, y) in cells:
                raise ActionError(f"{where} repeats the cell {city} / {name} / {y}")
            cells[(city, name, y)] = float(units)
        return cells

    def _apply(self, action: dict[str, Any]) -> Outcome:
        assert self.current is not None
        tool = action["tool"]
        if tool == "list_files":
            listing = "\n".join(f"{k} ({len(v)} bytes)" for k, v in sorted(self.files.items()))
            return Outcome(f"Files:\n{listing}")
        if tool == "run_python":
            return self._run(action)
        path = str(action.get("path", "")).strip()
        if tool == "read_file":
            if path not in self.files:
                return Outcome(f"No file {path!r}. Use list_files to see the workspace.")
            try:
                text = self.files[path].decode()
            except UnicodeDecodeError:
                return Outcome(f"{path} is a binary file of {len(self.files[path])} bytes; "
                               "read it from a program.")
            more = f"\n... (cut at {READ_CAP} of {len(text)} characters)" if len(text) > READ_CAP else ""
            return Outcome(f"Contents of {path}:\n{text[:READ_CAP]}{more}")
        if tool == "write_file":
            self.files[path] = str(action["content"]).encode()
            return Outcome(f"Wrote {path} ({len(self.files[path])} bytes).")
        return self._submit(self._cells(action["predictions"]))

    def _submit(self, cells: dict[tuple[str, str, int], float]) -> Outcome:
        assert self.current is not None
        year = _year_of(self.current)
        actual = self.actuals(self.current)
        reward = wape_skill(cells, actual)
        first = self.actuals(self.current, [year])
        first_score = wape_skill(cells, first)
        missing = len(actual) - len(cells)
        lines = [f"Predictions recorded for year {year}. Composite score: {first_score:.3f}."]
        if missing:
            lines.append(f"{missing} cells had no prediction and count as 0 units.")
        if self.options["feedback"] == "rich":
            lines.append(f"Actual units sold in {year} (locality | furniture_name | units):")
            lines += [f"{c} | {n} | {a:.0f}" for (c, n, _), a in first.items()]
        return Outcome("\n".join(lines), True, reward, None,
                       {"raw_metric": reward, "first_year_score": first_score,
                        "missing_cells": missing})

    def _run(self, action: dict[str, Any]) -> Outcome:
        """Run a workspace file or a snippet in the sandbox; take its files back."""
        path = action.get("path")
        if path is not None:
            path = str(path).strip()
            if path not in self.files:
                return Outcome(f"No file {path!r}. Use list_files to see the workspace.")
            try:
                code = self.files[path].decode()
            except UnicodeDecodeError:
                return Outcome(f"{path} is not a UTF-8 text program.")
            label = path
        else:
            code, label = str(action["code"]), "the snippet"
        try:
            run = run_in_workspace(code, self.files, timeout_s=PROGRAM_TIMEOUT_S,
                                   memory_mb=PROGRAM_MEMORY_MB,
                                   max_bytes=WORKSPACE_CAP + self._data_bytes(),
                                   max_output_bytes=4 * STDOUT_CAP, packages=self.packages)
        except IsolationUnavailable as err:
            return Outcome(f"Programs cannot run here: {err}")
        result = run.result
        lines = [f"Ran {label}: {result.status}"  # no durations: records stay reproducible
                 + (f" ({result.reason})." if result.reason else ".")]
        if run.files is not None:
            own = {k: v for k, v in run.files.items() if not k.startswith("data/")}
            if len(own) > MAX_FILES or sum(map(len, own.values())) > WORKSPACE_CAP:
                lines.append(f"File changes discarded: your files may hold at most "
                             f"{MAX_FILES} files and {WORKSPACE_CAP} bytes.")
            else:
                data = {k: v for k, v in self.files.items() if k.startswith("data/")}
                self.files = {**data, **own}
        elif run.note:
            lines.append(run.note[:1].upper() + run.note[1:] + ".")
        for name, text, cap in (("stdout", result.stdout, STDOUT_CAP),
                                ("stderr", result.stderr, STDERR_CAP)):
            text = steady_paths(text)
            if text.strip():
                cut = f"\n... (cut at {cap} of {len(text)} characters)" if len(text) > cap else ""
                lines.append(f"{name}:\n{text[:cap].rstrip()}{cut}")
        return Outcome("\n".join(lines))

    def _data_bytes(self) -> int:
        return sum(len(v) for k, v in self.files.items() if k.startswith("data/"))

    def _state_json(self) -> dict[str, Any]:
        """The agent's files: UTF-8 ones as text (``files``), others base64
        (``binary_files``); at most :data:`WORKSPACE_CAP` bytes in all."""
        text: dict[str, str] = {}
        binary: dict[str, str] = {}
        for path, data in sorted(self.own_files().items()):
            try:
                text[path] = data.decode()
            except UnicodeDecodeError:
                binary[path] = base64.b64encode(data).decode("ascii")
        return {"files": text, **({"binary_files": binary} if binary else {})}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        files, binary = state.get("files", {}), state.get("binary_files", {})
        loaded: dict[str, bytes] = {}
        try:
            for field, table in (("files", files), ("binary_files", binary)):
                if not isinstance(table, dict):
                    raise ValueError(field)
                for path, value in table.items():
                    if not isinstance(path, str) or not isinstance(value, str):
                        raise ValueError(field)
                    check_path(path)
                    loaded[path] = (value.encode() if field == "files"
                                    else base64.b64decode(value, validate=True))
        except (ValueError, WorkspaceError) as err:
            raise EnvironmentStateError(
                f"{self.name}: snapshot field 'files' is malformed ({err})") from None
        if sum(map(len, loaded.values())) > WORKSPACE_CAP or any(
                p.startswith("data/") for p in loaded):
            raise EnvironmentStateError(f"{self.name}: snapshot files exceed the workspace")
        self.files = loaded
