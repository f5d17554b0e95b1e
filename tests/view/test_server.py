"""The viewer's server is safe by construction (docs/viewer.md §4): 127.0.0.1 only, a foreign
Host refused, no URL ever a file path, security headers, read-only methods, and a results
directory unchanged byte for byte after every page of it was read."""

from __future__ import annotations

import hashlib
import http.client
import re
from pathlib import Path

import pytest
from served import fetch, get_json, serve_in_thread

from clstream.view.catalog import Catalog
from clstream.view.server import HOST, ViewServer, load_assets


def raw_get(server: ViewServer, path: str, host: str | None = None) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (no client normalises it)."""
    conn = http.client.HTTPConnection(HOST, server.server_address[1], timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_it_listens_on_the_loopback_address_only(server: ViewServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.server_address[1]}/"


def test_a_foreign_host_header_is_refused(server: ViewServer) -> None:
    port = server.server_address[1]
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}",
                 "127.0.0.1", f"localhost.evil.example:{port}"):
        for path in ("/", "/api/runs", "/app.js"):
            status, body = raw_get(server, path, host)
            assert status == 403, (host, path)
            assert b"run_id" not in body
    assert raw_get(server, "/api/runs", None)[0] == 403  # no Host at all
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert raw_get(server, "/api/runs", host)[0] == 200


def test_no_url_opens_a_file(server: ViewServer, results: Path) -> None:
    port = server.server_address[1]
    host = f"127.0.0.1:{port}"
    paths = ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
             "//etc/passwd", "/api/../../etc/passwd", "/api/runs/..%2F..%2Fetc%2Fpasswd/items",
             "/app.js/../../../etc/passwd", "/assets/app.js", "/view/assets/index.html",
             f"/{results}/results.sqlite", "/results.sqlite", "/api/runs/%ff/items",
             "/%2Fetc%2Fpasswd", "/..\\..\\etc\\passwd", "/server.py", "/__init__.py"]
    for path in paths:
        status, body = raw_get(server, path, host)
        assert status in (403, 404), path
        assert b"root:" not in body and b"SQLite format" not in body, path


def test_security_headers_on_every_answer(server: ViewServer) -> None:
    for path in ("/", "/app.js", "/app.css", "/api/runs", "/api/nope", "/nope"):
        _, headers, _ = fetch(server, path)
        assert headers["Content-Security-Policy"] == "default-src 'self'", path
        assert headers["X-Content-Type-Options"] == "nosniff", path
    status, headers, body = fetch(server, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert body == load_assets()["index.html"]
    assert fetch(server, "/app.js")[1]["Content-Type"].startswith("text/javascript")


def test_only_reading_methods_are_served(server: ViewServer) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert fetch(server, "/api/runs", method=method)[0] == 405
    status, _, body = fetch(server, "/api/runs", method="HEAD")
    assert status == 200 and body == b""


def test_the_page_is_packaged_and_sets_no_html_from_data() -> None:
    assets = load_assets()
    script = assets["app.js"].decode()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(",
                         script)
    page = assets["index.html"].decode()
    assert re.findall(r"<script[^>]*>", page) == ['<script src="app.js" defer>']
    assert "http://" not in page and "https://" not in page and "style=" not in page


def _fingerprint(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_browsing_every_page_changes_nothing_stored(matrix_dir: Path,
                                                    tmp_path: Path) -> None:
    import shutil

    results = tmp_path / "results"
    shutil.copytree(matrix_dir, results)
    before = _fingerprint(results)
    for server in serve_in_thread(Catalog([results])):
        runs = [r for g in get_json(server, "/api/runs")["datasets"] for r in g["runs"]]
        get_json(server, "/api/summary")
        get_json(server, "/api/figures")
        for run in runs:
            page = get_json(server, f"/api/runs/{run['ref']}/items?limit=3&sort=score")
            for row in page["rows"]:
                from urllib.parse import quote

                get_json(server, f"/api/runs/{run['ref']}/items/{quote(row['key'], safe='')}")
        get_json(server, f"/api/compare?a={runs[0]['ref']}&b={runs[1]['ref']}")
    assert _fingerprint(results) == before


def test_no_browser_is_no_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    from clstream.view import server as module

    def broken(url: str) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "open", broken)
    module._open("http://127.0.0.1:1/")  # returns; the server goes on


def test_every_test_hook_of_the_page_is_documented() -> None:
    """Browser tests find elements by ``data-testid``; docs/viewer.md §3 lists every one."""
    assets = load_assets()
    script, page = assets["app.js"].decode(), assets["index.html"].decode()
    names = set(re.findall(r'data-testid="([\w-]+)"', page))
    for found in re.findall(r"testid: ([^,}]+)", script):
        names |= set(re.findall(r'"([\w-]+)"', found))
    assert len(names) > 40
    docs = (Path(__file__).resolve().parents[2] / "docs" / "viewer.md").read_text()
    assert sorted(n for n in names if f"`{n}`" not in docs) == []


def test_concurrent_first_requests_get_the_same_answers(matrix_dir: Path) -> None:
    """Each request is served on its own thread with its own read-only store; what is read
    once and kept is read once, whichever request comes first."""
    from concurrent.futures import ThreadPoolExecutor

    for server in serve_in_thread(Catalog([matrix_dir])):
        refs = [r["ref"] for g in get_json(server, "/api/runs")["datasets"] for r in g["runs"]]
        paths = [f"/api/runs/{ref}/items?limit=5&sort=score" for ref in refs] * 3
        paths += ["/api/summary", "/api/figures"] * 3
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(fetch, [server] * len(paths), paths))
        assert all(status == 200 for status, _, _ in answers)
        by_path: dict[str, set[bytes]] = {}
        for path, (_, _, body) in zip(paths, answers, strict=True):
            by_path.setdefault(path, set()).add(body)
        assert all(len(bodies) == 1 for bodies in by_path.values())
