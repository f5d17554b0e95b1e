"""What the viewer's tests share: the protocols and systems of the viewed directory, a viewer
served on a thread, and plain HTTP requests to it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from clstream.view.catalog import Catalog
from clstream.view.server import ViewServer, make_server

PROTOCOLS = ("clbench", "imprint", "oaks", "seqmem")
SYSTEMS = ("memory-free", "rag:k=2")
HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>"
"""A reply no page may run: stored as one OAKS answer of the viewed directory."""


def serve_in_thread(catalog: Catalog) -> Iterator[ViewServer]:
    server = make_server(catalog)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def fetch(server: ViewServer, path: str, headers: dict[str, str] | None = None,
          method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of ``path`` (errors included, not raised)."""
    request = urllib.request.Request(server.url.rstrip("/") + path, headers=headers or {},
                                     method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def get_json(server: ViewServer, path: str) -> Any:
    status, _, body = fetch(server, path)
    assert status == 200, (path, body[:300])
    return json.loads(body)
