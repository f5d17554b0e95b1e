"""A results directory of all four protocols, two systems each, run briefly with the builtin
model (``clstream run matrix``), and a viewer serving it on a free port of 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from served import HOSTILE, PROTOCOLS, SYSTEMS, serve_in_thread

from clstream.cli import main
from clstream.view.catalog import Catalog
from clstream.view.server import ViewServer


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


@pytest.fixture(scope="session")
def server(results: Path) -> Iterator[ViewServer]:
    yield from serve_in_thread(Catalog([results]))


