"""Choosing runs by the system as it was given to ``run`` (store/export.py :func:`select_run`,
:func:`select_runs`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clstream.core.errors import StoreError
from clstream.core.records import Record
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.store.db import ResultsStore
from clstream.store.export import select_run, select_runs


def _store_run(store: ResultsStore, label: str, args: dict[str, object], seed: int = 0) -> str:
    """A run labelled with its resolved parameters, its spec holding every argument."""
    spec = RunSpec(protocol="oaks", dataset_hash="d" * 8,
                   system=ComponentSpec(name="mem0", args=args),
                   model=parse_model_spec("builtin"), seed=seed)
    store.ensure_run(spec.run_id, "oaks", label, "builtin", "d" * 8,
                     spec.model_dump(mode="json"), {})
    store.put_records(spec.run_id, [Record(kind="probe", key="q@1", payload={"output": "x"})])
    return spec.run_id


def test_the_name_given_to_run_finds_the_run_it_resolved_to(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, writer=True) as store:
        dense = _store_run(store, "mem0:retriever=dense", {"retriever": "dense", "top_k": 10})
    with ResultsStore(tmp_path) as store:
        assert select_run(store, "mem0").run_id == dense
        assert select_run(store, "mem0:top_k=10").run_id == dense
        with pytest.raises(StoreError, match="no run of system 'mem0:retriever=bm25'"):
            select_run(store, "mem0:retriever=bm25")
    with ResultsStore(tmp_path, writer=True) as store:
        five = _store_run(store, "mem0:retriever=dense,top_k=5", {"retriever": "dense",
                                                                  "top_k": 5})
    with ResultsStore(tmp_path) as store:
        assert select_run(store, "mem0:top_k=5").run_id == five
        both = ("system 'mem0' ran as mem0:retriever=dense and mem0:retriever=dense,top_k=5; "
                "give one of them")
        with pytest.raises(StoreError, match=both):
            select_run(store, "mem0")


def test_runs_are_selected_by_label_run_id_or_the_spec_given_to_run(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, writer=True) as store:
        dense = _store_run(store, "mem0:retriever=dense", {"retriever": "dense", "top_k": 10})
    with ResultsStore(tmp_path) as store:
        for typed in ("mem0", "mem0:retriever=dense", "mem0:top_k=10", dense):
            assert [r.run_id for r in select_runs(store, system=typed)] == [dense], typed
        assert select_runs(store, system="mem0:retriever=bm25") == []
        assert select_runs(store, protocol="seqmem", system="mem0") == []
    with ResultsStore(tmp_path, writer=True) as store:
        five = _store_run(store, "mem0:retriever=dense,top_k=5", {"retriever": "dense",
                                                                  "top_k": 5})
    with ResultsStore(tmp_path) as store:
        assert [r.run_id for r in select_runs(store, system="mem0:top_k=5")] == [five]
        assert [r.run_id for r in select_runs(store, system="mem0:retriever=dense")] == [dense]
        with pytest.raises(StoreError, match="^there: system 'mem0' ran as "):
            select_runs(store, system="mem0", where="there")


def test_runs_that_differ_only_in_their_seed_are_named_apart(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, writer=True) as store:
        first = _store_run(store, "mem0", {}, seed=0)
        second = _store_run(store, "mem0", {}, seed=1)
    with ResultsStore(tmp_path) as store, pytest.raises(StoreError) as refused:
        select_run(store, "mem0")
    message = str(refused.value)
    assert f"{first} (oaks, dddddddd, builtin, seed 0)" in message
    assert f"{second} (oaks, dddddddd, builtin, seed 1)" in message
