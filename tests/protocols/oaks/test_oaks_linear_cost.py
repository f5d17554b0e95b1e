"""A run's cost is linear in its stream: each chunk is observed, and each passage indexed, once
per document, whatever the pools the prompt-ordered path forms (issue of linear runs; OAKS
runner module docstring). A replay of every interval's prefix would make T(T+1)/2 of each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.driver.components import system_factory
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks import runner as oaks_runner
from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.export import oaks_predictions
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import OaksRunner
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from observe_counts import ObserveCounts  # noqa: E402
from planned import drive_runner  # noqa: E402

CHUNKS = 12


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("linear") / "babi.json"
    write_oaks_babi(path, seed=5, docs=2, chunks=CHUNKS, chunk_tokens=120, max_questions=6)
    return path


def run(data: Path, tmp: Path, system: str, pooled: bool) -> dict[tuple[str, int], str]:
    dataset = load_oaks(data)
    model = BuiltinReader()
    spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                   system=ComponentSpec.parse(system), model=parse_model_spec("builtin"))
    with ResultsStore(tmp, writer=True) as store:
        make = system_factory(spec, model)
        runner = OaksRunner(dataset, spec, store, make, model=model if pooled else None)
        result = drive_runner(runner, store, spec, {"probe": "probes"}, model, make)
        assert result.done == result.total and result.errors == 0
        (row,) = store.runs()
        return oaks_predictions(store, row)


@pytest.mark.parametrize("system", ["full", "window:w=3", "rag:k=2", "rag+window:k=1,w=2"])
@pytest.mark.parametrize("pool_tokens", [oaks_runner.POOL_TOKENS, 1])
def test_each_chunk_is_observed_and_indexed_once_per_document(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str, pool_tokens: int
) -> None:
    monkeypatch.setattr(oaks_runner, "POOL_TOKENS", pool_tokens)  # 1: a pool per interval
    counts = ObserveCounts(monkeypatch)
    run(data, tmp_path, system, pooled=True)
    docs = load_oaks(data).documents
    assert counts.by_stream == {d.bid: d.num_chunks for d in docs}
    if system.startswith("rag"):
        # one index per document, each passage inserted once
        assert sorted(counts.per_index().values()) == sorted(d.num_chunks for d in docs)
        assert set(counts.inserted.values()) == {1}
    else:  # nothing retrieves, nothing is indexed
        assert not counts.inserted


def test_the_pooled_path_answers_as_the_sequential_one(data: Path, tmp_path: Path) -> None:
    for system in ("full", "rag:k=2", "rag:k=2,dedupe=0.5"):
        slug = system.replace(":", "_").replace(",", "_").replace("=", "")
        assert run(data, tmp_path / f"a{slug}", system, pooled=True) \
            == run(data, tmp_path / f"b{slug}", system, pooled=False)


class KeyRecorder(BuiltinReader):
    """The builtin model, remembering the keys of every request in the order it got them."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []

    async def generate(self, requests: Any) -> Any:
        self.keys += [r.key for r in requests]
        return await super().generate(requests)


@pytest.mark.parametrize("system", ["window:w=3", "rag:k=2"])
def test_the_order_requests_leave_the_runner_is_a_function_of_spec_and_data(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str
) -> None:
    monkeypatch.setattr(oaks_runner, "POOL_TOKENS", 3000)  # several pools per document
    dataset = load_oaks(data)
    orders = []
    for attempt in range(2):
        model = KeyRecorder()
        spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                       system=ComponentSpec.parse(system), model=parse_model_spec("builtin"))
        with ResultsStore(tmp_path / str(attempt), writer=True) as store:
            make = system_factory(spec, model)
            runner = OaksRunner(dataset, spec, store, make, model=model)
            drive_runner(runner, store, spec, {"probe": "probes"}, model, make)
        orders.append(model.keys)
    total = sum(len(d.questions) * d.num_chunks for d in dataset.documents)
    assert orders[0] == orders[1] and len(orders[0]) == total
    assert orders[0] != sorted(orders[0], key=lambda k: int(k.rsplit("@", 1)[1]))  # reordered
