"""Pins what users get from the command line: `generate`, `run`, `export` and `score --json`
on small streams with the builtin model must stay byte-identical to the files under
``tests/golden/``, whatever the package's inner shape.

Regenerate (only when a change of output is intended and explained):
``CLSTREAM_REGENERATE_GOLDEN=1 pytest tests/test_golden_outputs.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clstream.cli import main

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("CLSTREAM_REGENERATE_GOLDEN") == "1"

OAKS_SYSTEMS = ["full", "window:w=3", "rag:k=2", "rag+window:k=2,w=2"]
SEQMEM_SYSTEMS = ["memory-free", "exp-recent:k=2", "exp-rag", "dc-rs", "awm", "expel-st",
                  "expel-mt", "g-memory"]


def _slug(system: str) -> str:
    return system.replace(":", "_").replace(",", "_").replace("=", "").replace("+", "-")


def _check(produced: Path, name: str) -> None:
    want = GOLDEN / name
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        want.write_bytes(produced.read_bytes())
        return
    assert produced.read_bytes() == want.read_bytes(), f"{name} differs from tests/golden/{name}"


def _score(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(argv) == 0
    out.write_text(capsys.readouterr().out, encoding="utf-8")


def test_oaks_outputs_are_pinned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "babi.json"
    assert main(["generate", "oaks-babi", "--seed", "3", "--docs", "2", "--chunks", "6",
                 "--chunk-tokens", "250", "--out", str(data)]) == 0
    _check(data, "oaks_babi.json")
    runs = tmp_path / "runs"
    argv = ["run", "oaks", str(data), "--out", str(runs), "--no-progress"]
    for system in OAKS_SYSTEMS:
        argv += ["--system", system]
    assert main(argv) == 0
    for system in OAKS_SYSTEMS:
        preds = tmp_path / f"{_slug(system)}.jsonl"
        assert main(["export", str(runs), "--system", system, "--out", str(preds)]) == 0
        _check(preds, f"oaks_{_slug(system)}.jsonl")
        score = tmp_path / f"{_slug(system)}.score.json"
        _score(["score", "oaks", str(data), str(preds), "--json"], score, capsys)
        _check(score, f"oaks_{_slug(system)}.score.json")


def test_seqmem_outputs_are_pinned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "syn.json"
    assert main(["generate", "seqmem-synthetic", "--seed", "2", "--tasks", "24", "--holdout",
                 "6", "--out", str(data)]) == 0
    _check(data, "seqmem_synthetic.json")
    runs = tmp_path / "runs"
    argv = ["run", "seqmem", str(data), "--out", str(runs), "--no-progress"]
    for system in SEQMEM_SYSTEMS:
        argv += ["--system", system]
    assert main(argv) == 0
    for system in SEQMEM_SYSTEMS:
        records = tmp_path / f"{_slug(system)}.jsonl"
        assert main(["export", str(runs), "--system", system, "--out", str(records)]) == 0
        _check(records, f"seqmem_{_slug(system)}.jsonl")
        score = tmp_path / f"{_slug(system)}.score.json"
        _score(["score", "seqmem", str(records), "--json"], score, capsys)
        _check(score, f"seqmem_{_slug(system)}.score.json")
