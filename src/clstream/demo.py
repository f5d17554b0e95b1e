"""``make demo``: for every registered protocol, generate a small stream and run a few systems
with the builtin offline model (each protocol says how, :meth:`StreamProtocol.demo`), then
print the summary, write one HTML report with a section per protocol and print its path.

Beside the report it writes a PNG screenshot of each page of ``clstream view`` (runs, items,
item, compare, figures; docs/viewer.md) when playwright and Chromium are installed; without
them it says in one line what to install and the demo still succeeds. The helpers that start
the viewer and drive Chromium are also what the viewer's browser tests and its benchmark use,
so all three see the viewer exactly as a user starts it (``clstream view DIR``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from clstream.cli import main as cli
from clstream.cli import protocols

if TYPE_CHECKING:
    from playwright.sync_api import Browser

# The system Chromium (Debian's ``chromium``), headless, with nothing that reaches the network
# on its own: playwright's own browser download is never used.
CHROMIUM_FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync")
URL_LINE = re.compile(r"http://(?:127\.0\.0\.1|localhost):\d+/\S*")
VIEWER_START_S = 120.0
# Each page of the viewer and the element that is on screen once its data is drawn
# (docs/viewer.md §3).
READY = {"runs": "runs-table", "items": "item-row", "item": "call", "compare": "compare-row",
         "figures": "figure-mark"}


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser_missing() -> str | None:
    """What to install before the viewer's pages can be driven in a browser, or None."""
    if importlib.util.find_spec("playwright") is None:
        return ("playwright is not installed: pip install -e '.[test]' (the test extra; "
                "it drives the system Chromium)")
    if chromium_path() is None:
        return ("Chromium not found: install Debian's 'chromium' package "
                "(apt-get install chromium, or scripts/system-packages.sh as root)")
    return None


@contextmanager
def launch_chromium() -> Iterator[Browser]:
    """Headless system Chromium under playwright (:func:`browser_missing` must be None)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(),
                                             args=list(CHROMIUM_FLAGS))
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def serve_viewer(*directories: Path) -> Iterator[str]:
    """``clstream view DIR... --no-browser`` as a child process; yields the URL it prints and
    stops it with SIGINT (as a user's Ctrl-C) on the way out. Its stderr goes to a file, so
    however much it says there it never waits on this process to read it."""
    argv = [sys.executable, "-m", "clstream", "view", *map(str, directories), "--no-browser"]
    errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def forward() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=forward, daemon=True).start()
    try:
        yield _printed_url(process, lines, errors)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        errors.close()


def _printed_url(process: subprocess.Popen[str], lines: queue.Queue[str | None],
                 errors: IO[str]) -> str:
    deadline = time.monotonic() + VIEWER_START_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            process.wait()
            errors.seek(0)
            raise RuntimeError(f"clstream view exited with status {process.returncode}: "
                               + errors.read().strip())
        if found := URL_LINE.search(line):
            return found.group(0).rstrip("/") + "/"
    raise RuntimeError(f"clstream view printed no URL within {VIEWER_START_S:.0f} s")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def by_testid(name: str) -> str:
    """The CSS selector of the viewer's elements marked ``data-testid=name``."""
    return f'[data-testid="{name}"]'


def listed_runs(listing: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run of an ``/api/runs`` answer, dataset after dataset (docs/viewer.md §2.1)."""
    return [run for group in listing["datasets"] for run in group["runs"]]


def segment(text: str) -> str:
    """One path segment of a hash route or an API path, as the page encodes it."""
    return urllib.parse.quote(text, safe="")


def viewer_routes(base: str) -> dict[str, str]:
    """The hash route of each page of :data:`READY` on the viewer at ``base``: the items and
    item of the first run of the first dataset with two runs (an OAKS one where there is
    one: its items read at a glance), compared with the second."""
    groups = get_json(base + "api/runs")["datasets"]
    groups = sorted(groups, key=lambda group: group["protocol"] != "oaks")
    pair = next((g["runs"][:2] for g in groups if len(g["runs"]) >= 2), None)
    if pair is None:
        raise RuntimeError("no dataset with two runs to compare")
    first, second = (segment(run["ref"]) for run in pair)
    rows = get_json(base + f"api/runs/{first}/items?limit=1")["rows"]
    return {"runs": "#/runs", "items": f"#/items/{first}",
            "item": f"#/item/{first}/{segment(rows[0]['key'])}",
            "compare": f"#/compare/{first}/{second}", "figures": "#/figures"}


def screenshot_pages(results: Path, out: Path, browser: Browser | None = None) -> list[Path]:
    """A PNG of each page of the viewer serving ``results``, ``out/viewer-<page>.png``; the
    figures page with the tooltip of its first mark shown. In ``browser`` where one is given
    (playwright drives one browser process per thread), else in one launched here."""
    written = []
    with ExitStack() as stack:
        base = stack.enter_context(serve_viewer(results))
        if browser is None:
            browser = stack.enter_context(launch_chromium())
        for name, route in viewer_routes(base).items():
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(base + route)
            page.wait_for_selector(by_testid(READY[name]))
            if name == "figures":
                page.hover(by_testid("figure-mark"))
                page.wait_for_selector(by_testid("figure-tooltip"))
            path = out / f"viewer-{name}.png"
            page.screenshot(path=str(path))
            page.close()
            written.append(path)
    return written


def run_demo(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results"
    steps = [step for protocol in protocols() for step in protocol.demo(out, results)]
    steps += [["summary", str(results)],
              ["report", str(results), "--out", str(out / "report.html")]]
    for step in steps:
        print("$ clstream " + " ".join(step), file=sys.stderr)
        code = cli(step)
        if code:
            return code
    write_screenshots(results, out)
    return 0


def write_screenshots(results: Path, out: Path, browser: Browser | None = None) -> list[Path]:
    """:func:`screenshot_pages`, or one line on stderr saying why there are none: the demo
    succeeds without a browser (its report is its result)."""
    missing = browser_missing()
    if missing is not None:
        print(f"viewer screenshots skipped: {missing}", file=sys.stderr)
        return []
    from playwright.sync_api import Error as BrowserError

    try:
        shots = screenshot_pages(results, out, browser)
    except (BrowserError, RuntimeError, OSError) as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"viewer screenshots not written: {first_line}", file=sys.stderr)
        return []
    for path in shots:
        print(path)
    return shots


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m clstream.demo")
    parser.add_argument("--out", default="demo-out")
    args = parser.parse_args()
    return run_demo(Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
