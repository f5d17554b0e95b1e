"""Ingestion cost is linear in the corpus: each document an instance's method takes in is
observed once, and each passage indexed once, by one system per instance; answering the items
never feeds memory again (ImprintBench runner module docstring). A runner that rebuilt memory
per batch of items, or replayed the corpus per item, would observe each document many times."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core.events import Event
from clstream.protocols.imprint.runner import documents
from clstream.protocols.imprint.schema import load_dataset
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.systems import context


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imprint-linear") / "persona"
    assert main(["generate", "imprint", "--setting", "persona", "--seed", "0", "--size",
                 "small", "--out", str(out)]) == 0
    return out


class Counts:
    """Documents observed per system instance and passages inserted per index, counted at
    class level so that every instance the runner builds is seen."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.observed: Counter[int] = Counter()
        self.ids: Counter[str] = Counter()
        self.inserted: Counter[tuple[int, int]] = Counter()  # (index, passage): insertions
        self.indexes: list[IncrementalBM25] = []  # kept alive, so no two share an id
        observe, add = context._ContextSystem.observe, IncrementalBM25.add
        counts = self

        async def counting_observe(system: Any, event: Event) -> Any:
            counts.observed[id(system)] += 1
            counts.ids[str(getattr(event, "doc_id", ""))] += 1
            return await observe(system, event)

        def counting_add(index: IncrementalBM25, doc_id: int, text: str) -> None:
            if index not in counts.indexes:
                counts.indexes.append(index)
            counts.inserted[(id(index), doc_id)] += 1
            add(index, doc_id, text)

        monkeypatch.setattr(context._ContextSystem, "observe", counting_observe)
        monkeypatch.setattr(IncrementalBM25, "add", counting_add)


@pytest.mark.parametrize("system", ["full", "rag:k=4"])
@pytest.mark.parametrize("supervision", ["C", "C+Q"])
def test_each_document_is_observed_once_per_instance(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str,
    supervision: str,
) -> None:
    data = load_dataset(data_dir)
    instances = sorted({d.instance_id for d in data.corpus})
    assert len(instances) >= 2
    fed = [documents(data, i, supervision) for i in instances]
    counts = Counts(monkeypatch)
    assert main(["run", "imprint", str(data_dir), "--model", "builtin", "--system", system,
                 "--samples", "2", "--supervision", supervision, "--batch", "4",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert sorted(counts.observed.values()) == sorted(len(f) for f in fed)
    assert all(n == 1 for n in counts.ids.values()), counts.ids.most_common(3)
    if system.startswith("rag"):  # one index per instance, each passage inserted once
        assert len(counts.indexes) == len(instances)
        assert set(counts.inserted.values()) == {1}
    else:
        assert not counts.inserted  # a system that never retrieves builds no index

    # A rerun finds every item answered: no document is observed again.
    counts.observed.clear()
    assert main(["run", "imprint", str(data_dir), "--model", "builtin", "--system", system,
                 "--samples", "2", "--supervision", supervision, "--batch", "4",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert not counts.observed
