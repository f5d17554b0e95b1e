"""``clstream view`` in a real browser: headless system Chromium driven by playwright over two
results directories, one with brief runs of all four protocols (builtin model, the viewer
tests' shared directory) and one with an OAKS run whose replies are hostile HTML. Every page is
opened as a user would (runs filtered, items filtered, one item's transcript, a comparison,
the figures with a hover), and on every page the console errors and uncaught page errors are
collected and must be none (docs/viewer.md).

Skips, saying what to install, without playwright (the ``test`` extra) or Chromium (Debian's
``chromium``)."""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.demo import browser_missing

MISSING = browser_missing()
if MISSING is not None:
    pytest.skip(MISSING, allow_module_level=True)

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, expect  # noqa: E402

from clstream.demo import (  # noqa: E402
    by_testid,
    get_json,
    launch_chromium,
    listed_runs,
    segment,
    serve_viewer,
    write_screenshots,
)

# Shown as text by the viewer, never parsed as HTML: a script, an image whose error handler
# marks the page, and markup that would be bold.
HOSTILE_REPLY = ('<script>alert(1)</script><img src=x onerror="window.__injected=1;alert(2)">'
                 "<b>bold</b>\n## Answer: <script>alert(3)</script>")
HOSTILE_MODEL = "hostile"
# A busy machine draws pages slowly: every wait allows 30 s (no test asserts a time).
WAIT_MS = 30_000
expect.set_options(timeout=WAIT_MS)


class HostileServer(FakeOpenAIServer):
    """Answers every chat request with :data:`HOSTILE_REPLY`."""

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        for choice in payload["choices"]:
            choice["message"]["content"] = HOSTILE_REPLY
            choice["message"].pop("reasoning_content", None)
        return payload


@pytest.fixture(scope="session")
def hostile_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second results directory: one brief OAKS run whose model, served by a loopback
    OpenAI-compatible server, replies :data:`HOSTILE_REPLY` to every question."""
    root = tmp_path_factory.mktemp("hostile-run")
    data, out = root / "babi.json", root / "results"
    assert main(["generate", "oaks-babi", "--seed", "3", "--docs", "1", "--chunks", "2",
                 "--chunk-tokens", "120", "--max-questions", "3", "--out", str(data)]) == 0
    with HostileServer() as server:
        assert main(["run", "oaks", str(data), "--out", str(out), "--no-progress",
                     "--system", "full", "--model", f"openai:{HOSTILE_MODEL}",
                     "--base-url", server.base_url]) == 0
    return out


@pytest.fixture(scope="session")
def viewer(results: Path, hostile_results: Path) -> Iterator[str]:
    """The base URL of ``clstream view`` (a child process, as a user starts it) serving the
    four protocols' directory (tests/view/conftest.py) and the hostile run's."""
    with serve_viewer(results, hostile_results) as url:
        yield url


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


@pytest.fixture(scope="session")
def static_copy(results: Path, hostile_results: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of ``clstream view --static`` of the same two directories, served as plain
    files (docs/viewer.md §5), shards smaller than a page of items."""
    site = tmp_path_factory.mktemp("static") / "site"
    assert main(["view", str(results), str(hostile_results), "--static", str(site),
                 "--shard-rows", "32"]) == 0
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 lambda *args: _QuietFiles(*args, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


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
    page.page.set_default_timeout(WAIT_MS)
    yield page
    context.close()
    assert page.errors == []
    assert page.dialogs == []


def runs(viewer: str) -> list[dict[str, Any]]:
    return listed_runs(get_json(viewer + "api/runs"))


def the_run(viewer: str, protocol: str, system: str, model: str = "builtin") -> dict[str, Any]:
    (run,) = [r for r in runs(viewer) if (r["protocol"], r["system"], r["model"])
              == (protocol, system, model)]
    return run


def open_page(watched: Watched, viewer: str, route: str, ready: str) -> Page:
    page = watched.page
    page.goto(viewer + route)
    page.wait_for_selector(by_testid(ready))
    return page


def test_the_runs_page_lists_every_run_and_filters_by_protocol(viewer: str,
                                                               watched: Watched) -> None:
    listed = runs(viewer)
    assert {r["protocol"] for r in listed} == {"oaks", "seqmem", "clbench", "imprint"}
    page = open_page(watched, viewer, "#/runs", "runs-table")
    expect(page.locator(by_testid("run-row"))).to_have_count(len(listed))
    page.fill(by_testid("filter-protocol"), "seqmem")
    page.click(by_testid("filter-apply"))
    seqmem = {r["ref"] for r in listed if r["protocol"] == "seqmem"}
    rows = page.locator(by_testid("run-row"))
    expect(rows).to_have_count(len(seqmem))
    assert {rows.nth(i).get_attribute("data-ref") for i in range(len(seqmem))} == seqmem
    assert "protocol=seqmem" in page.url
    page.fill(by_testid("filter-protocol"), "no-such-protocol")
    page.click(by_testid("filter-apply"))
    expect(page.locator(by_testid("runs-empty"))).to_be_visible()
    expect(page.locator(by_testid("run-row"))).to_have_count(0)


def test_an_item_shows_its_prompt_and_reply_as_stored(viewer: str, watched: Watched) -> None:
    run = the_run(viewer, "oaks", "rag:k=2")
    page = open_page(watched, viewer, "#/runs", "runs-table")
    page.locator(f'{by_testid("run-row")}[data-ref="{run["ref"]}"] {by_testid("run-link")}').click()
    page.wait_for_selector(by_testid("item-row"))
    items = get_json(viewer + f"api/runs/{segment(run['ref'])}/items?limit=1000")
    expect(page.locator(by_testid("item-row"))).to_have_count(min(50, items["total"]))
    assert page.get_attribute(by_testid("items-total"), "data-total") == str(items["total"])
    # Wrong answers only: the rows the API keeps, each marked wrong.
    wrong = get_json(viewer + f"api/runs/{segment(run['ref'])}/items?correct=false&limit=1000")
    assert 0 < wrong["total"] < items["total"]
    page.select_option(by_testid("filter-correct"), "false")
    expect(page.locator(by_testid("items-total"))).to_have_attribute(
        "data-total", str(wrong["total"]))
    expect(page.locator(by_testid("item-row"))).to_have_count(min(50, wrong["total"]))
    shown = page.locator(by_testid("item-row"))
    assert [shown.nth(i).get_attribute("data-key") for i in range(shown.count())] == \
        [row["key"] for row in wrong["rows"][:50]]
    assert all("wrong" in (shown.nth(i).get_attribute("class") or "")
               for i in range(shown.count()))
    key = wrong["rows"][0]["key"]
    page.locator(f'{by_testid("item-row")}[data-key="{key}"] {by_testid("item-link")}').click()
    page.wait_for_selector(by_testid("call"))
    item = get_json(viewer + f"api/runs/{segment(run['ref'])}/items/{segment(key)}")
    (call,) = item["calls"]
    messages = page.locator(f'{by_testid("call")} {by_testid("call-message")} pre')
    assert [messages.nth(i).inner_text() for i in range(messages.count())] == \
        [m["content"] for m in call["messages"]]
    assert any("Question:" in m["content"] for m in call["messages"])
    reply = page.locator(f'{by_testid("call")} {by_testid("call-reply")} pre')
    assert reply.first.inner_text() == call["samples"][0]["text"]
    # The same question over the stream's intervals.
    assert len(item["timeline"]) > 1
    expect(page.locator(by_testid("timeline-row"))).to_have_count(len(item["timeline"]))


def test_items_page_and_sort_as_the_api_does(viewer: str, watched: Watched) -> None:
    ref = segment(the_run(viewer, "oaks", "rag:k=2")["ref"])
    second = get_json(viewer + f"api/runs/{ref}/items?offset=50&limit=50")
    assert second["total"] > 50
    page = open_page(watched, viewer, f"#/items/{ref}", "item-row")
    page.click(by_testid("page-next"))
    expect(page.locator(by_testid("page-info"))).to_have_text(
        f"51–{min(100, second['total'])} of {second['total']}")
    assert page.locator(by_testid("item-row")).first.get_attribute("data-key") == \
        second["rows"][0]["key"]
    by_tokens = get_json(viewer + f"api/runs/{ref}/items?sort=tokens&order=asc&limit=50")
    page.click(by_testid("sort-tokens"))
    expect(page.locator(by_testid("page-info"))).to_have_text(
        f"1–50 of {by_tokens['total']}")
    shown = page.locator(by_testid("item-row"))
    assert [shown.nth(i).get_attribute("data-key") for i in range(shown.count())] == \
        [row["key"] for row in by_tokens["rows"]]
    # A family and a text typed into the search box (Enter), kept with the sort.
    family = by_tokens["families"][0]
    word = by_tokens["rows"][0]["gold"].split()[0] if by_tokens["rows"][0]["gold"] else "a"
    found = get_json(viewer + f"api/runs/{ref}/items?sort=tokens&order=asc&limit=50"
                     f"&family={family}&q={segment(word)}")
    assert found["total"] > 0
    page.select_option(by_testid("filter-family"), family)
    expect(page.locator(f'{by_testid("filter-family")} option[value="{family}"][selected]')
           ).to_have_count(1)
    page.fill(by_testid("filter-q"), word)
    page.press(by_testid("filter-q"), "Enter")
    expect(page.locator(by_testid("items-total"))).to_have_attribute(
        "data-total", str(found["total"]))
    shown = page.locator(by_testid("item-row"))
    assert [shown.nth(i).get_attribute("data-key") for i in range(shown.count())] == \
        [row["key"] for row in found["rows"]]


@pytest.mark.parametrize("protocol", ["oaks", "seqmem", "clbench", "imprint"])
def test_an_item_of_each_protocol_shows_every_call(viewer: str, watched: Watched,
                                                   protocol: str) -> None:
    ref = segment(the_run(viewer, protocol, "rag:k=2")["ref"])
    key = get_json(viewer + f"api/runs/{ref}/items?limit=1")["rows"][0]["key"]
    item = get_json(viewer + f"api/runs/{ref}/items/{segment(key)}")
    assert item["calls"], key
    page = open_page(watched, viewer, f"#/item/{ref}/{segment(key)}", "calls")
    judged = sum(call["judge"] for call in item["calls"])
    expect(page.locator(by_testid("call"))).to_have_count(len(item["calls"]) - judged)
    expect(page.locator(by_testid("judge-call"))).to_have_count(judged)
    replies = page.locator(f'{by_testid("call-reply")} pre')
    assert replies.count() == sum(len(call["samples"]) for call in item["calls"])
    assert replies.first.inner_text() == item["calls"][0]["samples"][0]["text"]
    timeline = item["timeline"] or []
    expect(page.locator(by_testid("timeline-row"))).to_have_count(len(timeline))
    assert page.locator(f'{by_testid("memory")}, {by_testid("memory-none")}').count() == 1


def test_two_runs_compare_side_by_side(viewer: str, watched: Watched) -> None:
    a, b = the_run(viewer, "oaks", "memory-free"), the_run(viewer, "oaks", "rag:k=2")
    compared = get_json(viewer + f"api/compare?a={segment(a['ref'])}&b={segment(b['ref'])}")
    assert compared["total"] > 0 and compared["changed"] > 0
    page = open_page(watched, viewer, f"#/compare/{segment(a['ref'])}/{segment(b['ref'])}",
                     "compare-row")
    expect(page.locator(by_testid("compare-row"))).to_have_count(min(50, compared["total"]))
    counts = page.inner_text(by_testid("compare-counts"))
    assert f"{compared['total']} shared items" in counts
    assert f"{compared['changed']} changed" in counts
    expect(page.locator(by_testid("paired-table"))).to_be_visible()
    changed = get_json(viewer + f"api/compare?a={segment(a['ref'])}&b={segment(b['ref'])}"
                       "&changed=true")
    assert changed["total"] == compared["changed"]
    page.check(by_testid("compare-changed"))
    expect(page.locator(by_testid("page-info"))).to_have_text(
        f"1–{min(50, changed['total'])} of {changed['total']}")
    rows = page.locator(by_testid("compare-row"))
    assert [rows.nth(i).get_attribute("data-key") for i in range(rows.count())] == \
        [row["key"] for row in changed["rows"]]


def test_figures_show_a_value_on_hover_and_hide_a_series(viewer: str,
                                                         watched: Watched) -> None:
    figures = get_json(viewer + "api/figures")["figures"]
    page = open_page(watched, viewer, "#/figures", "figure-mark")
    expect(page.locator(by_testid("figure"))).to_have_count(len(figures))
    first = figures[0]
    figure = page.locator(f'{by_testid("figure")}[data-id="{first["id"]}"]')
    mark = figure.locator(by_testid("figure-mark")).first
    mark.hover()
    tooltip = page.locator(by_testid("figure-tooltip"))
    expect(tooltip).to_be_visible()
    assert tooltip.inner_text() == mark.get_attribute("data-value")
    assert first["series"][0]["label"] in tooltip.inner_text()
    marks = figure.locator(by_testid("figure-mark")).count()
    hidden = len(first["series"][0]["points"])
    figure.locator(by_testid("series-toggle")).first.uncheck()
    expect(figure.locator(by_testid("figure-mark"))).to_have_count(marks - hidden)


def test_the_summary_page_draws_its_tables(viewer: str, watched: Watched) -> None:
    page = open_page(watched, viewer, "#/summary", "cross-table")
    methods = get_json(viewer + "api/summary")["cross_protocol"]["methods"]
    expect(page.locator(by_testid("cross-row"))).to_have_count(len(methods))
    # a seed column exactly where the runs name several seeds (rows that differ only in it)
    headers = page.locator(f"{by_testid('cross-table')} th").all_inner_texts()
    assert ("seed" in headers) == (len({s for m in methods for s in m["seeds"]}) > 1)
    expect(page.locator(by_testid("summary-row"))).to_have_count(len(runs(viewer)))


def test_a_hostile_reply_is_shown_as_text(viewer: str, watched: Watched) -> None:
    run = the_run(viewer, "oaks", "full", model=f"openai:{HOSTILE_MODEL}")
    ref = segment(run["ref"])
    key = get_json(viewer + f"api/runs/{ref}/items?limit=1")["rows"][0]["key"]
    page = open_page(watched, viewer, f"#/items/{ref}", "item-row")
    row = page.locator(f'{by_testid("item-row")}[data-key="{key}"]')
    assert HOSTILE_REPLY in row.inner_text()
    page = open_page(watched, viewer, f"#/item/{ref}/{segment(key)}", "call-reply")
    assert page.locator(f'{by_testid("call-reply")} pre').first.inner_text() == HOSTILE_REPLY
    main = page.locator(by_testid("main"))
    assert main.locator("script, img, b").count() == 0
    assert page.evaluate("window.__injected") is None


def test_the_demo_writes_a_screenshot_of_each_page(results: Path, browser: Browser,
                                                   tmp_path: Path) -> None:
    shots = write_screenshots(results, tmp_path, browser)
    assert [p.name for p in shots] == [f"viewer-{page}.png" for page in
                                       ("runs", "items", "item", "compare", "figures")]
    for shot in shots:
        head = shot.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
        assert struct.unpack(">II", head[16:24]) == (1280, 800)


def test_a_static_copy_shows_what_the_server_shows(viewer: str, static_copy: str,
                                                  watched: Watched) -> None:
    listed = runs(viewer)
    page = open_page(watched, static_copy, "#/runs", "runs-table")
    assert page.inner_text(by_testid("mode")) == "static copy"
    expect(page.locator(by_testid("run-row"))).to_have_count(len(listed))
    run = the_run(viewer, "oaks", "rag:k=2")
    ref = segment(run["ref"])
    wrong = get_json(viewer + f"api/runs/{ref}/items?correct=false&sort=interval&limit=50")
    page = open_page(watched, static_copy, f"#/items/{ref}?correct=false&sort=interval",
                     "item-row")
    shown = page.locator(by_testid("item-row"))
    expect(shown).to_have_count(len(wrong["rows"]))
    assert [shown.nth(i).get_attribute("data-key") for i in range(shown.count())] == \
        [row["key"] for row in wrong["rows"]]
    assert page.get_attribute(by_testid("items-total"), "data-total") == str(wrong["total"])
    key = wrong["rows"][-1]["key"]
    item = get_json(viewer + f"api/runs/{ref}/items/{segment(key)}")
    page = open_page(watched, static_copy, f"#/item/{ref}/{segment(key)}", "call-reply")
    assert page.locator(f'{by_testid("call-reply")} pre').first.inner_text() == \
        item["calls"][0]["samples"][0]["text"]
    other = segment(the_run(viewer, "oaks", "memory-free")["ref"])
    compared = get_json(viewer + f"api/compare?a={other}&b={ref}")
    page = open_page(watched, static_copy, f"#/compare/{other}/{ref}", "compare-row")
    assert f"{compared['changed']} changed" in page.inner_text(by_testid("compare-counts"))
    figures = get_json(viewer + "api/figures")["figures"]
    page = open_page(watched, static_copy, "#/figures", "figure-mark")
    expect(page.locator(by_testid("figure"))).to_have_count(len(figures))


def test_a_static_copy_shows_a_hostile_reply_as_text(viewer: str, static_copy: str,
                                                     watched: Watched) -> None:
    ref = segment(the_run(viewer, "oaks", "full", model=f"openai:{HOSTILE_MODEL}")["ref"])
    key = get_json(viewer + f"api/runs/{ref}/items?limit=1")["rows"][0]["key"]
    page = open_page(watched, static_copy, f"#/item/{ref}/{segment(key)}", "call-reply")
    assert page.locator(f'{by_testid("call-reply")} pre').first.inner_text() == HOSTILE_REPLY
    assert page.locator(by_testid("main")).locator("script, img, b").count() == 0
    assert page.evaluate("window.__injected") is None
