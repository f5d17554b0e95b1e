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
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.cli import main as cli
from clstream.cli import protocols

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# The system Chromium (Debian's ``chromium``), headless, with nothing that reaches the network
# on its own: playwright's own browser download is never used.
CHROMIUM_FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync")
URL_LINE = re.compile(r"http://(?:127\.0\.0\.1|localhost):\d+/\S*")
VIEWER_START_S = 120.0
SCREENSHOT_SIZE = {"width": 1280, "height": 800}


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
def serve_viewer(*directories: Path, extra: tuple[str, ...] = ()) -> Iterator[str]:
    """``clstream view DIR... --no-browser`` as a child process; yields the URL it prints and
    stops it with SIGINT (as a user's Ctrl-C) on the way out."""
    argv = [sys.executable, "-m", "clstream", "view", *map(str, directories), "--no-browser",
            *extra]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def forward() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=forward, daemon=True).start()
    try:
        yield _printed_url(process, lines)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _printed_url(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> str:
    deadline = time.monotonic() + VIEWER_START_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            assert process.stderr is not None
            process.wait()
            raise RuntimeError(f"clstream view exited with status {process.returncode}: "
                               + process.stderr.read().strip())
        if found := URL_LINE.search(line):
            return found.group(0).rstrip("/") + "/"
    raise RuntimeError(f"clstream view printed no URL within {VIEWER_START_S:.0f} s")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


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
    missing = browser_missing()
    if missing is not None:
        print(f"viewer screenshots skipped: {missing}", file=sys.stderr)
        return 0
    from clstream.demo_pages import screenshot_pages

    for path in screenshot_pages(results, out):
        print(path)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m clstream.demo")
    parser.add_argument("--out", default="demo-out")
    args = parser.parse_args()
    return run_demo(Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
