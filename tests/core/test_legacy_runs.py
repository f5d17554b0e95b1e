"""Runs stored under ids hashed from specs as typed (before specs were canonical) are adopted by
the canonical spec's run, and ``export --system`` finds a run by its typed or canonical label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import StoreError
from clstream.core.records import Record
from clstream.core.registry import canonical_run_spec
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.driver.components import adopt_legacy_run, parse_components, register_run
from clstream.store.db import ResultsStore
from clstream.store.export import select_run


def legacy(system: str) -> RunSpec:
    return RunSpec(protocol="oaks", dataset_hash="d" * 8, system=ComponentSpec.parse(system),
                   model=parse_model_spec("builtin"))


def store_legacy(store: ResultsStore, spec: RunSpec) -> None:
    """What the previous release wrote: its id, its label, its spec as typed."""
    store.ensure_run(spec.run_id, spec.protocol, spec.system.label, spec.model.label,
                     spec.dataset_hash, spec.model_dump(mode="json"), {})
    store.put_records(spec.run_id, [Record(kind="probe", key="q@1", payload={"output": "x"})])


def test_a_legacy_run_is_renamed_to_the_canonical_id(tmp_path: Path,
                                                     fake_components: str) -> None:
    old = legacy("fake-sys:k=8")
    new = canonical_run_spec(legacy("fake-sys"))
    assert old.run_id != new.run_id
    with ResultsStore(tmp_path, writer=True) as store:
        store_legacy(store, old)
        assert register_run(store, new, new.dataset_hash, {}) is True  # a resume
        assert [r.run_id for r in store.runs()] == [new.run_id]
        assert store.done_keys(new.run_id, "probe") == {"q@1"}
        stored = store.get_run(new.run_id)
        assert RunSpec.model_validate(stored.spec).run_id == new.run_id
        # registering again changes nothing
        assert register_run(store, new, new.dataset_hash, {}) is True
        assert adopt_legacy_run(store, new.run_id, new.model_dump(mode="json")) is None


def test_only_a_run_of_the_same_canonical_spec_is_adopted(tmp_path: Path,
                                                          fake_components: str) -> None:
    other = legacy("fake-sys:k=2")
    new = canonical_run_spec(legacy("fake-sys"))
    with ResultsStore(tmp_path, writer=True) as store:
        store_legacy(store, other)
        assert adopt_legacy_run(store, new.run_id, new.model_dump(mode="json")) is None
        assert register_run(store, new, new.dataset_hash, {}) is False  # a new run
        assert {r.run_id for r in store.runs()} == {other.run_id, new.run_id}


def test_parse_components_gives_canonical_specs(fake_components: str) -> None:
    model, systems = parse_components("hf:/m", "dtype=float32", ["fake-sys", "fake-sys:k=8"])
    assert model.args["dtype"] == "float32" and model.args["batch_size"] == 8
    assert systems[0] == systems[1] and systems[0].label == "fake-sys"


def test_export_finds_a_run_by_typed_or_canonical_label(tmp_path: Path,
                                                        fake_components: str) -> None:
    canonical = canonical_run_spec(legacy("fake-sys"))
    two = canonical_run_spec(legacy("fake-sys:k=2"))
    pre = legacy("fake-sys:mode=fancy")  # stored by the previous release, never adopted
    with ResultsStore(tmp_path, writer=True) as store:
        for spec in (canonical, two):
            register_run(store, spec, spec.dataset_hash, {})
        store_legacy(store, pre)
    with ResultsStore(tmp_path) as store:
        assert store.get_run(canonical.run_id).system == "fake-sys"
        for typed in ("fake-sys", "fake-sys:k=8", "fake-sys:mode=plain,k=8", canonical.run_id):
            assert select_run(store, typed).run_id == canonical.run_id
        assert select_run(store, "fake-sys:k=2").run_id == two.run_id
        assert select_run(store, "fake-sys:mode=fancy,k=8").run_id == pre.run_id
        assert select_run(store, "fake-sys", model="builtin").run_id == canonical.run_id
        with pytest.raises(StoreError, match="no run of system 'fake-sys:k=3'"):
            select_run(store, "fake-sys:k=3")


def test_registering_many_runs_reads_each_stored_spec_once(
        tmp_path: Path, fake_components: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from clstream.driver import components

    read: list[object] = []
    real = components._canonical_json

    def counted(spec: Any) -> str | None:
        read.append(spec)
        return real(spec)

    monkeypatch.setattr(components, "_canonical_json", counted)
    runs = 40
    for k in range(1, runs + 1):  # one store opened per run, as the driver does per job
        spec = canonical_run_spec(legacy(f"fake-sys:k={k}"))
        with ResultsStore(tmp_path, writer=True) as store:
            assert register_run(store, spec, spec.dataset_hash, {}) is False
    # each new run's spec once, each stored run's spec once: not every stored run per run
    assert len(read) <= 2 * runs


def test_a_legacy_run_stored_after_the_index_was_read_is_adopted(
        tmp_path: Path, fake_components: str) -> None:
    first = canonical_run_spec(legacy("fake-sys:k=3"))
    old = legacy("fake-sys:k=8")
    new = canonical_run_spec(legacy("fake-sys"))
    with ResultsStore(tmp_path, writer=True) as store:
        register_run(store, first, first.dataset_hash, {})  # the index is read here
    with ResultsStore(tmp_path, writer=True) as store:
        store_legacy(store, old)
    with ResultsStore(tmp_path, writer=True) as store:
        assert register_run(store, new, new.dataset_hash, {}) is True
        assert {r.run_id for r in store.runs()} == {first.run_id, new.run_id}
        assert store.done_keys(new.run_id, "probe") == {"q@1"}
