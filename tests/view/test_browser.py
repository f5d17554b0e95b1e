"""``clstream view`` in a real browser: headless system Chromium driven by playwright over one
results directory with brief runs of all four protocols (builtin model) and one OAKS run whose
replies are hostile HTML. Every page is opened as a user would (runs, items filtered, one
item's transcript, a comparison, the figures with a hover), and on every page the console
errors and uncaught page errors are collected and must be none (docs/viewer.md).

Skips, saying what to install, without playwright (the ``test`` extra) or Chromium (Debian's
``chromium``)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.demo import browser_missing

MISSING = browser_missing()
if MISSING is not None:
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page  # noqa: E402

from clstream.demo import get_json, launch_chromium, serve_viewer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "protocols"))
from clbench_short_results import full_and_memory_free  # noqa: E402
from fake_openai_server import FakeOpenAIServer  # noqa: E402

# Shown as text by the viewer, never parsed as HTML: a script, an image whose error handler
# marks the page, and markup that would be bold.
HOSTILE = ('<script>alert(1)</script><img src=x onerror="window.__injected=1;alert(2)">'
           "<b>bold</b>\n## Answer: <script>alert(3)</script>")
HOSTILE_MODEL = "hostile"


class HostileServer(FakeOpenAIServer):
    """Answers every chat request with :data:`HOSTILE`."""

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        for choice in payload["choices"]:
            choice["message"]["content"] = HOSTILE
            choice["message"].pop("reasoning_content", None)
        return payload


@pytest.fixture(scope="session")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One results directory: OAKS (two systems, one dataset, so they compare), SeqMem,
    CL-Bench (the session's shared short run, copied) and ImprintBench, all with the builtin
    model, and an OAKS run of the same dataset whose model replies :data:`HOSTILE`."""
    root = tmp_path_factory.mktemp("viewer")
    out = root / "results"
    shutil.copytree(full_and_memory_free(tmp_path_factory), out)
    commands = [
        ["generate", "oaks-babi", "--seed", "3", "--docs", "1", "--chunks", "4",
         "--chunk-tokens", "250", "--max-questions", "6", "--out", str(root / "babi.json")],
        ["run", "oaks", str(root / "babi.json"), "--out", str(out), "--no-progress",
         "--system", "full", "--system", "rag:k=2"],
        ["generate", "seqmem-synthetic", "--seed", "2", "--tasks", "8", "--holdout", "3",
         "--out", str(root / "syn.json")],
        ["run", "seqmem", str(root / "syn.json"), "--out", str(out), "--no-progress",
         "--system", "memory-free", "--system", "exp-recent:k=2"],
        ["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "3",
         "--out", str(root / "imprint")],
        ["run", "imprint", str(root / "imprint"), "--model", "builtin", "--samples", "2",
         "--out", str(out), "--no-progress", "--system", "memory-free", "--system", "oracle"],
    ]
    for argv in commands:
        assert main(argv) == 0, argv
    with HostileServer() as server:
        assert main(["run", "oaks", str(root / "babi.json"), "--out", str(out),
                     "--no-progress", "--system", "full", "--model", f"openai:{HOSTILE_MODEL}",
                     "--base-url", server.base_url]) == 0
    return out


@pytest.fixture(scope="session")
def viewer(results: Path) -> Iterator[str]:
    """The base URL of ``clstream view`` serving :func:`results`."""
    with serve_viewer(results) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with launch_chromium() as launched:
        yield launched


class Watched:
    """A page with every console error, uncaught error and dialog it raises kept."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.on("dialog", self._dialog)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = Watched(context.new_page())
    page.page.set_default_timeout(30_000)
    yield page
    context.close()
    assert page.errors == []
    assert page.dialogs == []


def runs_of(viewer: str) -> list[dict[str, Any]]:
    """Every run /api/runs lists, whatever its grouping by dataset."""
    listed = get_json(viewer + "api/runs")
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "protocol" in node and "system" in node and ("id" in node or "run" in node):
                found.append(node)
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(listed)
    return found
