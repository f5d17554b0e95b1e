"""``clstream view``'s local web server: the packaged page and the JSON API, nothing else.

Safe by construction (docs/viewer.md §4): it listens on 127.0.0.1 only; a request whose
``Host`` is not this address or ``localhost`` with this port is refused (403), so a web page
that points a name of its own at 127.0.0.1 (DNS rebinding) cannot read the results; no part
of a URL is ever a file path: the packaged assets are read once, by their fixed
names, and every other path is an API route or 404; only GET and HEAD are served. Every
answer carries ``Content-Security-Policy: default-src 'self'`` (no inline script, nothing
from elsewhere) and ``X-Content-Type-Options: nosniff``. The stores are opened read-only
(:mod:`clstream.view.catalog`), so browsing never changes a results directory.
"""

from __future__ import annotations

import errno
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from clstream.core.errors import ClstreamError, SpecError
from clstream.core.jsonio import dumps_finite
from clstream.view import api
from clstream.view.catalog import BadRequest, Catalog, NotFound

HOST = "127.0.0.1"
ASSETS = {"index.html": "text/html; charset=utf-8",
          "app.js": "text/javascript; charset=utf-8",
          "app.css": "text/css; charset=utf-8",
          "favicon.svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def load_assets() -> dict[str, bytes]:
    """The page's files as the package ships them (package data, so an installed clstream
    has them too)."""
    folder = files("clstream.view").joinpath("assets")
    return {name: folder.joinpath(name).read_bytes() for name in ASSETS}


def api_document(catalog: Catalog, segments: list[str], query: dict[str, str]) -> Any:
    """The document of API path ``/api/<segments>``; :class:`NotFound` for any other."""
    match segments:
        case ["runs"]:
            return api.runs(catalog, query)
        case ["summary"]:
            return api.summary(catalog)
        case ["figures"]:
            return api.figure_data(catalog)
        case ["compare"]:
            return api.compare(catalog, query)
        case ["runs", ref, "items"]:
            return api.items(catalog, ref, query)
        case ["runs", ref, "items", key]:
            return api.item(catalog, ref, key)
    raise NotFound("no such API path")


class ViewHandler(BaseHTTPRequestHandler):
    """One request. The server it belongs to is a :class:`ViewServer`."""

    server: ViewServer
    server_version = "clstream-view"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Quiet: the terminal shows the URL and errors, not every request."""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, document: Any) -> None:
        text = dumps_finite(document, ensure_ascii=False, separators=(",", ":"))
        self._send(status, text.encode("utf-8", "backslashreplace"),
                   "application/json; charset=utf-8")

    def _host_allowed(self) -> bool:
        port = self.server.server_address[1]
        host = (self.headers.get("Host") or "").strip().lower()
        return host in {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}

    def do_GET(self) -> None:
        if not self._host_allowed():
            self._json(403, {"error": "refused: the Host header must name this viewer "
                                      "(127.0.0.1 or localhost with its port)"})
            return
        parts = urlsplit(self.path)
        path = parts.path
        if path in ("/", "/index.html"):
            name = "index.html"
        else:
            name = path[1:]
        if name in ASSETS:
            self._send(200, self.server.assets[name], ASSETS[name])
            return
        if name == "static.json":  # the page's question: a static copy? (static_site.py)
            self._json(200, {"mode": "live"})
            return
        raw = path.split("/")
        if len(raw) < 3 or raw[:2] != ["", "api"]:
            self._json(404, {"error": "not found"})
            return
        try:
            segments = [unquote(s, errors="strict") for s in raw[2:]]
        except UnicodeDecodeError:
            self._json(404, {"error": "not found"})
            return
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        try:
            self._json(200, api_document(self.server.catalog, segments, query))
        except NotFound as exc:
            self._json(404, {"error": str(exc)})
        except BadRequest as exc:
            self._json(400, {"error": str(exc)})
        except ClstreamError as exc:
            self._json(500, {"error": str(exc)})
        except Exception as exc:  # one broken request must not stop the viewer
            print(f"clstream view: {self.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
            self._json(500, {"error": f"internal error ({type(exc).__name__})"})

    def do_HEAD(self) -> None:
        self.do_GET()

    def _refuse(self) -> None:
        self._json(405, {"error": "read-only: only GET and HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, catalog: Catalog, port: int) -> None:
        self.catalog = catalog
        self.assets = load_assets()
        super().__init__((HOST, port), ViewHandler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"


def make_server(catalog: Catalog, port: int = 0) -> ViewServer:
    """A server on 127.0.0.1 (``port`` 0: a free one); a port in use is a one-line error."""
    try:
        return ViewServer(catalog, port)
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise SpecError(f"--port {port}: cannot listen on {HOST}:{port} "
                            f"({exc.strerror or exc})") from None
        raise


def serve(catalog: Catalog, port: int = 0, open_browser: bool = True) -> int:
    """Serve until Ctrl-C (exit status 0); prints the URL first."""
    server = make_server(catalog, port)
    print(f"clstream view: {server.url} (Ctrl-C stops)", flush=True)
    if open_browser:
        threading.Thread(target=_open, args=(server.url,), daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("clstream view: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def _open(url: str) -> None:
    """Open the page in a browser where there is one; never fail where there is none."""
    try:
        webbrowser.open(url)
    except Exception:
        pass
