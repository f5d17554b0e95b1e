"""A results directory of all four protocols, two systems each, run briefly with the builtin
model (``clstream run matrix``), and a viewer serving it on a free port of 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.view.catalog import Catalog
from clstream.view.server import ViewServer, make_server

PROTOCOLS = ("clbench", "imprint", "oaks", "seqmem")
SYSTEMS = ("memory-free", "rag:k=2")
HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>"
"""A reply no page may run: stored as one OAKS answer of the viewed directory."""


@pytest.fixture(scope="session")
def matrix_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "results"
    assert main(["run", "matrix", "--protocols", ",".join(PROTOCOLS), "--systems",
                 ",".join(SYSTEMS), "--model", "builtin", "--out", str(out),
                 "--no-progress"]) == 0
    return out


@pytest.fixture(scope="session")
def results(matrix_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The matrix with one OAKS answer replaced by :data:`HOSTILE` (record and reply)."""
    import sqlite3
    import zlib

    out = tmp_path_factory.mktemp("hostile") / "results"
    shutil.copytree(matrix_dir, out)
    with sqlite3.connect(out / "results.sqlite") as conn:
        run_id, key, payload = conn.execute(
            "SELECT r.run_id, key, payload FROM records r JOIN runs USING (run_id)"
            " WHERE runs.protocol='oaks' AND kind='probe' ORDER BY r.run_id, key"
            " LIMIT 1").fetchone()
        record = json.loads(payload)
        record["output"] = HOSTILE
        conn.execute("UPDATE records SET payload=? WHERE run_id=? AND kind='probe' AND key=?",
                     (json.dumps(record), run_id, key))
        reply = conn.execute("SELECT reply FROM calls WHERE run_id=? AND record_key=?",
                             (run_id, key)).fetchone()[0]
        samples = json.loads(zlib.decompress(reply))
        samples[0]["text"] = HOSTILE
        conn.execute("UPDATE calls SET reply=? WHERE run_id=? AND record_key=?",
                     (zlib.compress(json.dumps(samples).encode()), run_id, key))
    return out


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


@pytest.fixture(scope="session")
def server(results: Path) -> Iterator[ViewServer]:
    yield from serve_in_thread(Catalog([results]))


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
