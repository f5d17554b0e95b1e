"""``clstream view``: time to the first page, time to filter 100,000 items, and the bytes of
transcript an item's page carries per probe, by method.

- First page: ``clstream view DIR --no-browser`` started as a process, as a user starts it,
  timed from the start to the URL it prints, to the first ``/api/runs`` answer and to the runs
  page rendered in headless Chromium (its runs table on screen), over ``--repeats`` starts.
- Filtering: one OAKS run of 100,000 probes (10 documents x 250 chunks x 40 questions, the
  builtin model, ``--transcripts none``: a real run, so the store is what a user has), then
  the items API asked for wrong answers only, for a text search and for a sort over all of
  them (first page of 50, with the total count), and the same wrong-answers filter chosen on
  the items page in Chromium, timed until its table shows the filtered rows.
- Transcript bytes: OAKS runs of 64 chunks (one document, 4 questions, 120-token chunks, as
  ``bench_transcripts.py``) by ``icl``, ``rag:k=4`` and ``window:w=4``: the results store's
  transcript bytes per probe (content-addressed, each passage stored once) against the bytes
  of the item JSON the viewer sends for one probe (its calls with their full messages) and the
  prompt text sent, per probe.

Skips the browser figures, saying what to install, without playwright or Chromium.

    .venv/bin/python benchmarks/bench_viewer.py [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_timing import machine, markdown_table, run_cli, write_section

from clstream.demo import browser_missing, get_json, launch_chromium, serve_viewer
from clstream.store.transcripts import stored_bytes

BIG = {"docs": 10, "chunks": 250, "questions": 40}
METHODS = ("icl", "rag:k=4", "window:w=4")
TRANSCRIPT_CHUNKS = 64
SAMPLED_ITEMS = 40
PAGE_LIMIT = 50


def generate_big(work: Path) -> Path:
    """A results directory with one OAKS run of 100,000 probes."""
    data, out = work / "big.json", work / "big"
    run_cli(["generate", "oaks-babi", "--seed", "0", "--docs", str(BIG["docs"]), "--chunks",
             str(BIG["chunks"]), "--chunk-tokens", "100", "--max-questions",
             str(BIG["questions"]), "--out", str(data)])
    run_cli(["run", "oaks", str(data), "--system", "rag:k=2", "--model", "builtin",
             "--transcripts", "none", "--out", str(out), "--no-progress"])
    return out


def the_run(base: str) -> dict[str, Any]:
    """The one run a viewer of a one-run directory lists."""
    from clstream.demo import listed_runs

    (run,) = listed_runs(get_json(base + "api/runs"))
    return run


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def first_page(directory: Path, repeats: int, browser: Any) -> list[list[object]]:
    """Seconds from the start of ``clstream view`` to its URL, its runs JSON and its runs page
    rendered (the median of ``repeats`` starts)."""
    from clstream.demo import RUNS_READY

    url_s, json_s, page_s = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        with serve_viewer(directory) as base:
            url_s.append(time.perf_counter() - start)
            get_json(base + "api/runs")
            json_s.append(time.perf_counter() - start)
            if browser is not None:
                page = browser.new_page()
                page.goto(base)
                page.wait_for_selector(RUNS_READY)
                page_s.append(time.perf_counter() - start)
                page.close()
    rendered = f"{statistics.median(page_s):.2f}" if page_s else "-"
    return [[directory.name, f"{statistics.median(url_s):.2f}",
             f"{statistics.median(json_s):.2f}", rendered]]


def filtering(directory: Path, repeats: int, browser: Any) -> list[list[object]]:
    """Seconds the items API takes to filter, search and sort the 100,000 probes, and the
    wrong-answers filter chosen on the items page in Chromium."""
    from clstream.demo import ITEMS_READY, items_route

    rows: list[list[object]] = []
    with serve_viewer(directory) as base:
        run = the_run(base)
        items = base + f"api/runs/{urllib.parse.quote(run['id'], safe='')}/items"
        queries = {"first page, no filter": {},
                   "wrong answers (correct=false)": {"correct": "false"},
                   "text search (q=Tamrin)": {"q": "Tamrin"},
                   "sorted by answer, descending": {"sort": "answer", "order": "desc"}}
        for label, query in queries.items():
            params = urllib.parse.urlencode({**query, "offset": 0, "limit": PAGE_LIMIT})
            times = []
            for _ in range(repeats):
                seconds, answer = timed(lambda p=params: get_json(f"{items}?{params}"))
                times.append(seconds)
            rows.append([f"API: {label}", f"{answer['total']:,}",
                         f"{statistics.median(times):.3f}"])
        if browser is not None:
            times = []
            for _ in range(repeats):
                page = browser.new_page()
                page.goto(base + items_route(run["id"]))
                page.wait_for_selector(ITEMS_READY)
                from clstream.demo import choose_wrong_answers

                seconds, total = timed(lambda pg=page: choose_wrong_answers(pg))
                times.append(seconds)
                page.close()
            rows.append(["page: choose wrong answers", f"{total:,}",
                         f"{statistics.median(times):.3f}"])
    return rows


def transcript_bytes(work: Path) -> list[list[object]]:
    """Stored transcript bytes, item JSON bytes and prompt bytes per probe, by method."""
    data = work / "babi64.json"
    run_cli(["generate", "oaks-babi", "--seed", "5", "--docs", "1", "--chunks",
             str(TRANSCRIPT_CHUNKS), "--chunk-tokens", "120", "--max-questions", "4",
             "--out", str(data)])
    rows: list[list[object]] = []
    for method in METHODS:
        out = work / f"t-{method.replace(':', '-')}"
        run_cli(["run", "oaks", str(data), "--system", method, "--model", "builtin",
                 "--out", str(out), "--no-progress"])
        with sqlite3.connect(out / "results.sqlite") as conn:
            stored = stored_bytes(conn)
            (probes,) = conn.execute("SELECT COUNT(*) FROM records WHERE kind='probe'").fetchone()
        with serve_viewer(out) as base:
            run = the_run(base)
            run_path = f"api/runs/{urllib.parse.quote(run['id'], safe='')}/items"
            listed = get_json(base + f"{run_path}?limit={probes}")["rows"]
            step = max(1, len(listed) // SAMPLED_ITEMS)
            sampled = listed[::step][:SAMPLED_ITEMS]
            sent = served = 0
            for row in sampled:
                key = urllib.parse.quote(row["key"], safe="")
                with urllib.request.urlopen(f"{base}{run_path}/{key}", timeout=60) as answer:
                    body = answer.read()
                served += len(body)
                import json

                item = json.loads(body)
                sent += sum(len(m["content"].encode()) for call in item["calls"]
                            for m in call["messages"])
        rows.append([method, f"{probes:,}", f"{stored / probes:,.0f}",
                     f"{served / len(sampled):,.0f}", f"{sent / len(sampled):,.0f}"])
        print("  ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--readme", action="store_true", help="rewrite the README tables")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    missing = browser_missing()
    if missing is not None:
        print(f"browser figures skipped: {missing}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        big = generate_big(work)
        made = time.perf_counter() - start
        print(f"100,000-probe store made in {made:.0f} s", flush=True)
        if missing is None:
            with launch_chromium() as browser:
                first = first_page(big, args.repeats, browser)
                filtered = filtering(big, args.repeats, browser)
        else:
            first = first_page(big, args.repeats, None)
            filtered = filtering(big, args.repeats, None)
        transcripts = transcript_bytes(work)
    tables = [
        markdown_table(["results directory", "to URL s", "to /api/runs s", "to runs page s"],
                       first),
        markdown_table(["filter over 100,000 probes", "rows matched", "s"], filtered),
        markdown_table(["method", f"probes @{TRANSCRIPT_CHUNKS} chunks",
                        "stored transcript bytes/probe", "item JSON bytes/probe",
                        "prompt bytes/probe"], transcripts, "lrrrr"),
    ]
    for table in tables:
        print(table, end="\n\n")
    if args.readme:
        write_section("viewer", f"Machine: {machine()}. {args.repeats} repeats, medians.\n\n"
                      + "\n\n".join(tables))


if __name__ == "__main__":
    main()
