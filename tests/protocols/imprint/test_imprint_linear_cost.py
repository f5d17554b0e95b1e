"""Ingestion cost is linear in the corpus: each document an instance's method takes in is
observed once, and each passage indexed once, by one system per instance; answering the items
never feeds memory again (ImprintBench runner module docstring). A runner that rebuilt memory
per batch of items, or replayed the corpus per item, would observe each document many times."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.protocols.imprint.runner import documents
from clstream.protocols.imprint.schema import load_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from observe_counts import ObserveCounts  # noqa: E402


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imprint-linear") / "persona"
    assert main(["generate", "imprint", "--setting", "persona", "--seed", "0", "--size",
                 "small", "--out", str(out)]) == 0
    return out


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
    counts = ObserveCounts(monkeypatch)
    assert main(["run", "imprint", str(data_dir), "--model", "builtin", "--system", system,
                 "--samples", "2", "--supervision", supervision, "--batch", "4",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert sorted(counts.by_system.values()) == sorted(len(f) for f in fed)
    assert set(counts.by_document.values()) == {1}, counts.by_document.most_common(3)
    if system.startswith("rag"):  # one index per instance, each passage inserted once
        assert len(counts.per_index()) == len(instances)
        assert set(counts.inserted.values()) == {1}
    else:
        assert not counts.inserted  # a system that never retrieves builds no index

    # A rerun finds every item answered: no document is observed again.
    counts.clear()
    assert main(["run", "imprint", str(data_dir), "--model", "builtin", "--system", system,
                 "--samples", "2", "--supervision", supervision, "--batch", "4",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert not counts.by_system
