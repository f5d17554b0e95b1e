"""The viewer's JSON API: each path of docs/viewer.md §2 as a function of a
:class:`~clstream.view.catalog.Catalog` and the query, so the server and the static writer
build the same documents.

Numbers are never derived here: the summary, the cross-protocol table, headline metrics with
their intervals and paired differences are the report's (:mod:`clstream.report`), and the
figures draw the series the summary holds. Paging, filters and sorting act on the item rows
of :mod:`clstream.view.items`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from clstream.core.records import RunRow
from clstream.view.catalog import BadRequest, Catalog, NotFound, run_ref
from clstream.view.figures import figures
from clstream.view.items import SORT_KEYS, changed_keys, select

MAX_LIMIT = 1000
DEFAULT_LIMIT = 50
Query = Mapping[str, str]


def run_info(catalog: Catalog, index: int, run: RunRow) -> dict[str, Any]:
    return {"ref": run_ref(index, run.run_id), "dir": str(catalog.dirs[index]),
            "dir_index": index, "run_id": run.run_id, "protocol": run.protocol,
            "system": run.system, "model": run.model, "seed": run.spec.get("seed"),
            "dataset_sha256": run.dataset_sha256}


def _status(catalog: Catalog, index: int, run: RunRow) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        with catalog.store(index) as store:
            status = store.run_status(run.run_id)
            return {"ok": status.total_ok, "errors": status.total_errors,
                    "records": {k: {"ok": status.ok[k], "errors": status.errors[k]}
                                for k in status.ok},
                    "calls": store.calls_count(run.run_id)}

    return catalog.cached("status", run_ref(index, run.run_id), read)


def runs(catalog: Catalog, query: Query) -> dict[str, Any]:
    """Runs grouped by (protocol, dataset), narrowed by ``protocol``, ``system``, ``model``
    and ``seed``."""
    wanted = {k: query[k] for k in ("protocol", "system", "model", "seed") if query.get(k)}
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for index, run in catalog.all_runs():
        info = run_info(catalog, index, run)
        if any(str(info[k]) != v for k, v in wanted.items()):
            continue
        group = groups.setdefault((run.protocol, run.dataset_sha256), {
            "protocol": run.protocol, "dataset_sha256": run.dataset_sha256, "runs": []})
        group["runs"].append({**info, "status": _status(catalog, index, run),
                              "wall_s": round(run.wall_s, 3), "created_at": run.created_at})
    return {"dirs": [{"index": i, "path": str(d)} for i, d in enumerate(catalog.dirs)],
            "datasets": list(groups.values()),
            "total": sum(len(g["runs"]) for g in groups.values())}


def summary(catalog: Catalog) -> dict[str, Any]:
    """Each directory's summary, the cross-protocol table over all of them, each run's
    headline metrics with their intervals (``headlines``, by ref) and each directory's
    protocol tables as ``clstream summary`` prints them (``text``)."""
    from clstream.report.cross_protocol import cross_protocol, headlines

    summaries = catalog.summaries()
    every = [run for s in summaries for run in s["runs"]]
    return {"summaries": summaries, "cross_protocol": cross_protocol(every),
            "text": [_text(s["runs"]) for s in summaries],
            "headlines": {run["ref"]: [dataclasses.asdict(h) for h in headlines(run)]
                          for run in every if "broken" not in run}}


def _text(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each protocol's table as ``clstream summary`` prints it, per protocol and dataset."""
    from clstream.core.registry import names, resolve

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
        if "broken" not in run and run.get("protocol") in names("protocol"):
            spec = (run.get("meta") or {}).get("spec") or {}
            groups.setdefault((run["protocol"], str(spec.get("dataset_hash") or "")),
                              []).append(run)
    return [{"protocol": protocol, "dataset_sha256": sha,
             "lines": resolve("protocol", protocol).summary_lines(found)}
            for (protocol, sha), found in groups.items()]


def _integer(query: Query, name: str, default: int, low: int, high: int) -> int:
    text = query.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"query parameter {name}: expected an integer, got {text!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"query parameter {name}: expected {low}..{high}, got {value}")
    return value


def _correct(query: Query) -> bool | None:
    text = query.get("correct")
    if text in (None, ""):
        return None
    if text not in ("true", "false"):
        raise BadRequest(f"query parameter correct: expected true or false, got {text!r}")
    return text == "true"


def items(catalog: Catalog, ref: str, query: Query) -> dict[str, Any]:
    """One page of the run's item rows, the total the filters keep and the families."""
    index, run = catalog.find(ref)
    rows = catalog.rows(ref)
    sort = query.get("sort") or "key"
    if sort not in SORT_KEYS:
        raise BadRequest(f"query parameter sort: expected one of {', '.join(SORT_KEYS)}, "
                         f"got {sort!r}")
    order = query.get("order") or "asc"
    if order not in ("asc", "desc"):
        raise BadRequest(f"query parameter order: expected asc or desc, got {order!r}")
    keys = None
    if query.get("changed_vs"):
        keys = changed_keys(rows, catalog.rows(query["changed_vs"]))
    kept = select(rows, family=query.get("family") or None, correct=_correct(query),
                  q=query.get("q") or None, keys=keys, sort=sort, descending=order == "desc")
    offset = _integer(query, "offset", 0, 0, 10**9)
    limit = _integer(query, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    return {"run": run_info(catalog, index, run), "total": len(kept), "offset": offset,
            "limit": limit, "families": sorted({str(r["family"]) for r in rows}),
            "rows": kept[offset:offset + limit]}


def item(catalog: Catalog, ref: str, key: str) -> dict[str, Any]:
    from clstream.view.detail import group_index, item_detail

    index, run = catalog.find(ref)
    rows = catalog.rows(ref)
    row = next((r for r in rows if r["key"] == key), None)
    if row is None:
        raise NotFound(f"run {ref}: no item {key!r}")
    with catalog.store(index) as store:
        found = item_detail(store, run, group_index(rows), row)
    return {"run": run_info(catalog, index, run), **found}


def _paired(catalog: Catalog, a: tuple[int, RunRow], b: tuple[int, RunRow]) -> list[dict[str, Any]]:
    """The paired differences A - B: the summary's own (report/paired.py, Holm-adjusted over
    its family) where it compared the two runs, else the same test on the items the two runs
    share (:func:`clstream.metrics.paired.paired_difference`, the report's confidence)."""
    from clstream.core.registry import names, resolve
    from clstream.metrics.paired import paired_difference
    from clstream.report.paired import CONFIDENCE

    (ia, ra), (ib, rb) = a, b
    if ia == ib:
        stored = catalog.summaries()[ia].get("paired", {}).get("pairs", [])
        found = [p for p in stored if (p["run_a"], p["run_b"]) == (ra.run_id, rb.run_id)]
        if found:
            return found
    if ra.protocol != rb.protocol or ra.protocol not in names("protocol"):
        return []
    reader = getattr(resolve("protocol", ra.protocol), "item_scores", None)
    if reader is None:
        return []
    with catalog.store(ia) as sa, catalog.store(ib) as sb:
        try:
            scores_a, scores_b = reader(sa, ra), reader(sb, rb)
        except Exception:  # as the report: runs whose items cannot be read are not compared
            return []
    out = []
    for metric, a_items in scores_a.items():
        b_items = scores_b.get(metric, {})
        common = sorted(set(a_items) & set(b_items))
        if not common:
            continue
        result = paired_difference([a_items[k] for k in common], [b_items[k] for k in common],
                                   confidence=CONFIDENCE)
        out.append({"protocol": ra.protocol, "metric": metric, "a": ra.system,
                    "b": rb.system, "run_a": ra.run_id, "run_b": rb.run_id,
                    "items": result.n, "difference": result.mean,
                    "interval": list(result.interval), "p_value": result.p_value,
                    "exact": result.exact, "confidence": CONFIDENCE})
    return out


_SIDE = ("family", "interval", "stage", "gold", "answer", "correct", "verdict", "score")


def compare(catalog: Catalog, query: Query) -> dict[str, Any]:
    """Runs ``a`` and ``b`` item by item on the keys both hold (``changed=true``: only those
    whose verdict differs), paged, with their paired differences."""
    if not query.get("a") or not query.get("b"):
        raise BadRequest("query parameters a and b: give two run refs")
    a, b = catalog.find(query["a"]), catalog.find(query["b"])
    rows_a, rows_b = catalog.rows(query["a"]), catalog.rows(query["b"])
    theirs = {r["key"]: r for r in rows_b}
    mine = {r["key"] for r in rows_a}
    shared = [r for r in rows_a if r["key"] in theirs]
    if query.get("changed") == "true":
        changed = changed_keys(rows_a, rows_b)
        shared = [r for r in shared if r["key"] in changed]
    offset = _integer(query, "offset", 0, 0, 10**9)
    limit = _integer(query, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    page = [{"key": r["key"], "a": {f: r[f] for f in _SIDE},
             "b": {f: theirs[r["key"]][f] for f in _SIDE}}
            for r in shared[offset:offset + limit]]
    return {"a": run_info(catalog, *a), "b": run_info(catalog, *b), "total": len(shared),
            "only_a": len(mine - set(theirs)), "only_b": len(set(theirs) - mine),
            "changed": len(changed_keys(rows_a, rows_b)), "offset": offset, "limit": limit,
            "rows": page, "paired": _paired(catalog, a, b)}


def figure_data(catalog: Catalog) -> dict[str, Any]:
    from clstream.report.cross_protocol import cross_protocol

    summaries = catalog.summaries()
    every = [run for s in summaries for run in s["runs"]]
    return {"figures": figures(every, cross_protocol(every))}
