"""``clstream view DIR --static OUT``: the viewer as static files, for a web server or an
archive next to a paper (docs/viewer.md §5).

OUT holds the same assets and, instead of the API, its documents as JSON files: the
runs, the summary and the figures whole; each run's item rows in shards of a fixed number of
rows (``data/items/RUN/N.json``, stored order) and the same rows' item documents
(``data/detail/RUN/N.json``); and the comparison of every two runs of one protocol and
dataset (``data/compare/A__B.json``). ``static.json`` is the marker the page looks for: where
it is found the page reads the shards and filters, sorts and pages itself, with the rules of
the API, so both show the same numbers. A run's name in a file name is its ref with ``_`` for
``:``.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

from clstream.core.files import write_atomic
from clstream.core.jsonio import dumps_finite
from clstream.view import api
from clstream.view.catalog import Catalog, run_ref
from clstream.view.detail import group_index, item_detail
from clstream.view.server import load_assets

SHARD_ROWS = 200
MARKER = "static.json"


def file_ref(ref: str) -> str:
    return ref.replace(":", "_")


def _write(out: Path, relative: str, document: Any) -> None:
    path = out / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dumps_finite(document, ensure_ascii=False, separators=(",", ":")))


def write_static(catalog: Catalog, out: Path, shard_rows: int = SHARD_ROWS,
                 with_calls: bool = True) -> dict[str, Any]:
    """Write the static viewer into ``out`` (already claimed as an output directory);
    returns the marker written last, so a copy killed midway has none and is not read as
    whole. Without ``with_calls`` the item documents hold no model call: the calls'
    messages are most of a copy's bytes, and a copy for a paper's readers may not need
    them."""
    out.mkdir(parents=True, exist_ok=True)
    for name, data in load_assets().items():
        (out / name).write_bytes(data)
    _write(out, "data/runs.json", api.runs(catalog, {}))
    _write(out, "data/summary.json", api.summary(catalog))
    _write(out, "data/figures.json", api.figure_data(catalog))
    marker: dict[str, Any] = {"mode": "static", "shard_rows": shard_rows, "calls": with_calls,
                              "runs": {}}
    every = catalog.all_runs()
    for index, run in every:
        ref = run_ref(index, run.run_id)
        rows = catalog.rows(ref)
        shards = max(1, -(-len(rows) // shard_rows))
        info, groups = api.run_info(catalog, index, run), group_index(rows)
        with catalog.store(index) as store:  # one store for the run: each item as api.item
            for n in range(shards):
                page = rows[n * shard_rows:(n + 1) * shard_rows]
                _write(out, f"data/items/{file_ref(ref)}/{n}.json", {"rows": page})
                _write(out, f"data/detail/{file_ref(ref)}/{n}.json",
                       {r["key"]: {"run": info,
                                   **item_detail(store, run, groups, r, with_calls)}
                        for r in page})
        marker["runs"][ref] = {"file": file_ref(ref), "total": len(rows), "shards": shards,
                               "families": sorted({str(r["family"]) for r in rows})}
    pairs = []
    for (ia, a), (ib, b) in combinations(every, 2):
        if (a.protocol, a.dataset_sha256) != (b.protocol, b.dataset_sha256):
            continue
        ra, rb = run_ref(ia, a.run_id), run_ref(ib, b.run_id)
        document = api.compare(catalog, {"a": ra, "b": rb, "limit": str(api.MAX_LIMIT)})
        total = document["total"]
        rows = list(document["rows"])
        while len(rows) < total:
            rows += api.compare(catalog, {"a": ra, "b": rb, "offset": str(len(rows)),
                                          "limit": str(api.MAX_LIMIT)})["rows"]
        document.update(rows=rows, offset=0, limit=len(rows))
        _write(out, f"data/compare/{file_ref(ra)}__{file_ref(rb)}.json", document)
        pairs.append([ra, rb])
    marker["compare"] = pairs
    _write(out, MARKER, marker)
    return marker
