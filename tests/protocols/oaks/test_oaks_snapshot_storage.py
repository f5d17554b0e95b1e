"""A snapshotted system's stored memory grows linearly in the stream: ``icl`` and ``notepad``
keep the whole document read so far, and the store keeps each chunk's snapshot as what it added
(clstream.store.snapshots), so the bytes stored per chunk of a 128-chunk document stay within
1.25 times those of a 16-chunk one (stored whole, they grew with the chunk count)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.driver.components import system_factory
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import OaksRunner
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from planned import drive_runner  # noqa: E402


def stored_bytes_per_chunk(tmp: Path, system: str, chunks: int) -> float:
    data = tmp / f"babi{chunks}.json"
    write_oaks_babi(data, seed=5, docs=1, chunks=chunks, chunk_tokens=120, max_questions=4)
    dataset = load_oaks(data)
    model = BuiltinReader()
    spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                   system=ComponentSpec.parse(system), model=parse_model_spec("builtin"))
    with ResultsStore(tmp / f"res{chunks}", writer=True) as store:
        make = system_factory(spec, model)
        runner = OaksRunner(dataset, spec, store, make)
        result = drive_runner(runner, store, spec, {"probe": "probes"}, model, make)
        assert result.errors == 0
        steps, stored = store.conn.execute(
            "SELECT COUNT(*), SUM(LENGTH(CAST(state AS BLOB))) FROM states").fetchone()
        assert steps == chunks
        (doc,) = dataset.documents
        last = store.load_state(spec.run_id, doc.bid)
        assert last is not None and len(last[1]["memory"]["turns"]) == chunks
    return float(stored) / chunks


@pytest.mark.parametrize("system", ["icl", "notepad"])
def test_stored_memory_per_chunk_stays_flat(tmp_path: Path, system: str) -> None:
    short = stored_bytes_per_chunk(tmp_path, system, 16)
    long = stored_bytes_per_chunk(tmp_path, system, 128)
    assert long <= 1.25 * short, (short, long)
