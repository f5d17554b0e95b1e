"""``clstream view``: time to the first page, time to filter 100,000 items, and the bytes of
transcript an item's page carries per probe, by method.

- First page: ``clstream view DIR --no-browser`` started as a process, as a user starts it,
  timed from the start to the URL it prints, to the first ``/api/runs`` answer and to the runs
  page rendered in headless Chromium (its runs table on screen), over ``--repeats`` starts;
  on the 100,000-probe store below and on the results ``make demo`` makes (every protocol).
- Filtering: one OAKS run of 100,000 probes (10 documents x 250 chunks x 40 questions, the
  builtin model, ``--transcripts none``: a real run, so the store is what a user has), then
  the items API: its first page (the viewer reads and judges the run's rows on first use and
  keeps them), then wrong answers only, a text search and a sort over all of them (first page
  of 50, with the total count), and the same wrong-answers filter chosen on the items page in
  Chromium, timed until its table shows the filtered rows.
- Transcript bytes: OAKS runs of 64 chunks (one document, 4 questions, 120-token chunks, as
  ``bench_transcripts.py``) by ``icl``, ``rag:k=4`` and ``window:w=4``: the results store's
  transcript bytes per probe (content-addressed, each passage stored once) against the bytes
  of the item JSON the viewer sends for one probe, of them its calls with their full messages
  (the rest is mostly the question's timeline over every interval), and the prompt text sent,
  per probe (40 probes sampled evenly over the run).

Skips the browser figures, saying what to install, without playwright or Chromium.

    .venv/bin/python benchmarks/bench_viewer.py [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli_timing import machine, markdown_table, run_cli, write_section

from clstream.cli import protocols
from clstream.demo import (
    browser_missing,
    by_testid,
    get_json,
    launch_chromium,
    listed_runs,
    segment,
    serve_viewer,
)
from clstream.store.db import ResultsStore
from clstream.store.transcripts import stored_bytes

if TYPE_CHECKING:
    from playwright.sync_api import Browser

BIG = {"docs": 10, "chunks": 250, "questions": 40}
METHODS = ("icl", "rag:k=4", "window:w=4")
TRANSCRIPT_CHUNKS = 64
SAMPLED_ITEMS = 40
PAGE_LIMIT = 50
FILTERS = {"wrong answers (correct=false)": {"correct": "false"},
           "text search (q=crossing)": {"q": "crossing"},
           "sorted by tokens, descending": {"sort": "tokens", "order": "desc"}}


def generate_big(work: Path) -> Path:
    """A results directory with one OAKS run of 100,000 probes."""
    data, out = work / "big.json", work / "big"
    run_cli(["generate", "oaks-babi", "--seed", "0", "--docs", str(BIG["docs"]), "--chunks",
             str(BIG["chunks"]), "--chunk-tokens", "100", "--max-questions",
             str(BIG["questions"]), "--out", str(data)])
    run_cli(["run", "oaks", str(data), "--system", "rag:k=2", "--model", "builtin",
             "--transcripts", "none", "--out", str(out), "--no-progress"])
    return out


def runs_in(directory: Path) -> int:
    with ResultsStore(directory) as store:
        return len(store.runs())


def items_path(base: str) -> str:
    """The items API path of the one run a viewer of a one-run directory lists."""
    (run,) = listed_runs(get_json(base + "api/runs"))
    return f"{base}api/runs/{segment(run['ref'])}/items"


def seconds_of(url: str) -> tuple[float, Any]:
    start = time.perf_counter()
    answer = get_json(url)
    return time.perf_counter() - start, answer


def generate_demo(work: Path) -> Path:
    """The results directory ``make demo`` makes: every protocol's demo runs."""
    out = work / "demo"
    for protocol in protocols():
        for step in protocol.demo(work, out):
            run_cli(step)
    return out


def first_page(label: str, directory: Path, repeats: int, browser: Browser | None
               ) -> list[object]:
    """Seconds from the start of ``clstream view`` to its URL, its runs JSON and its runs page
    rendered (medians of ``repeats`` starts)."""
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
                page.wait_for_selector(by_testid("run-row"))
                page_s.append(time.perf_counter() - start)
                page.close()
    rendered = f"{statistics.median(page_s):.2f}" if page_s else "-"
    return [label, f"{statistics.median(url_s):.2f}",
            f"{statistics.median(json_s):.2f}", rendered]


def filtering(directory: Path, repeats: int, browser: Browser | None) -> list[list[object]]:
    """Seconds the items API takes to list, filter, search and sort the 100,000 probes, and
    the wrong-answers filter chosen on the items page in Chromium."""
    firsts: list[float] = []
    for _ in range(repeats):  # a fresh server each time: the rows are read on first use
        with serve_viewer(directory) as base:
            seconds, listed = seconds_of(f"{items_path(base)}?limit={PAGE_LIMIT}")
            firsts.append(seconds)
    rows: list[list[object]] = [["API: first page, rows read on first use",
                                 f"{listed['total']:,}", f"{statistics.median(firsts):.2f}"]]
    with serve_viewer(directory) as base:
        items = items_path(base)
        get_json(f"{items}?limit=1")
        for label, query in {"first page again": {}, **FILTERS}.items():
            params = urllib.parse.urlencode({**query, "offset": 0, "limit": PAGE_LIMIT})
            times = []
            for _ in range(repeats):
                seconds, answer = seconds_of(f"{items}?{params}")
                times.append(seconds)
            rows.append([f"API: {label}", f"{answer['total']:,}",
                         f"{statistics.median(times):.3f}"])
        if browser is not None:
            route = base + "#/items/" + items.rsplit("/", 2)[1]
            times = []
            for _ in range(repeats):
                page = browser.new_page()
                page.goto(route)
                page.wait_for_selector(by_testid("item-row"))
                start = time.perf_counter()
                page.select_option(by_testid("filter-correct"), "false")
                # The page draws itself again with the filter's option marked selected.
                page.wait_for_selector(f'{by_testid("filter-correct")} '
                                       'option[value="false"][selected]', state="attached")
                page.wait_for_selector(by_testid("item-row"))
                times.append(time.perf_counter() - start)
                total = int(page.get_attribute(by_testid("items-total"), "data-total") or 0)
                page.close()
            rows.append(["page: choose wrong answers, table drawn", f"{total:,}",
                         f"{statistics.median(times):.3f}"])
    return rows


def transcript_bytes(work: Path) -> list[list[object]]:
    """Stored transcript bytes, item JSON bytes (and of them the calls') and prompt bytes
    per probe, by method."""
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
            (probes,) = conn.execute("SELECT COUNT(*) FROM records WHERE kind='probe'"
                                     ).fetchone()
        with serve_viewer(out) as base:
            items = items_path(base)
            listed = get_json(f"{items}?limit=1000")["rows"]
            sampled = listed[::max(1, len(listed) // SAMPLED_ITEMS)][:SAMPLED_ITEMS]
            served = calls = sent = 0
            for row in sampled:
                with urllib.request.urlopen(f"{items}/{segment(row['key'])}",
                                            timeout=60) as answer:
                    body = answer.read()
                item = json.loads(body)
                served += len(body)
                calls += len(json.dumps(item["calls"], ensure_ascii=False).encode())
                sent += sum(len(m["content"].encode()) for call in item["calls"]
                            for m in call["messages"])
        rows.append([method, f"{probes:,}", f"{stored / probes:,.0f}",
                     f"{served / len(sampled):,.0f}", f"{calls / len(sampled):,.0f}",
                     f"{sent / len(sampled):,.0f}"])
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
        print(f"100,000-probe store made in {time.perf_counter() - start:.0f} s", flush=True)
        demo = generate_demo(work)
        stores = {"one OAKS run of 100,000 probes": big,
                  f"`make demo` ({runs_in(demo)} runs, 4 protocols)": demo}
        with ExitStack() as stack:
            browser = None if missing else stack.enter_context(launch_chromium())
            first = [first_page(label, path, args.repeats, browser)
                     for label, path in stores.items()]
            filtered = filtering(big, args.repeats, browser)
        print(*first, *filtered, sep="\n", flush=True)
        transcripts = transcript_bytes(work)
    tables = [
        markdown_table(["results directory", "to URL s", "to /api/runs s", "to runs page s"],
                       first),
        markdown_table(["over 100,000 probes", "rows matched", "s"], filtered),
        markdown_table(["method", f"probes @{TRANSCRIPT_CHUNKS} chunks",
                        "stored transcript bytes/probe", "item JSON bytes/probe",
                        "its calls' JSON bytes/probe", "prompt bytes/probe"], transcripts,
                       "lrrrrr"),
    ]
    for table in tables:
        print(table, end="\n\n")
    if args.readme:
        write_section("viewer", f"Machine: {machine()}. {args.repeats} repeats, medians.\n\n"
                      + "\n\n".join(tables))


if __name__ == "__main__":
    main()
