"""``export``, ``summary``, ``report`` and ``view`` select runs by the system as it was given to
``run`` (``mem0``) as well as by its resolved label (``mem0:retriever=bm25``); when the spec
typed resolved to two systems, one line names both (store/export.py :func:`select_runs`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.systems.mem0 import installed_retriever

LABEL = f"mem0:retriever={installed_retriever()}"
OTHER = f"mem0:retriever={installed_retriever()},top_k=5"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``one``: mem0 and rag as typed; ``two``: mem0 and mem0:top_k=5 (two resolutions)."""
    root = tmp_path_factory.mktemp("by_system")
    data = root / "data.json"
    assert main(["generate", "oaks-babi", "--docs", "1", "--chunks", "2", "--chunk-tokens",
                 "120", "--out", str(data)]) == 0
    for out, systems in (("one", ("mem0", "rag")), ("two", ("mem0", "mem0:top_k=5"))):
        for system in systems:
            assert main(["run", "oaks", str(data), "--system", system, "--model", "builtin",
                         "--out", str(root / out), "--no-progress"]) == 0
    return root


def _summary_systems(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main(["summary", *args, "--json"]) == 0
    return [run["system"] for run in json.loads(capsys.readouterr().out)["runs"]]


@pytest.mark.parametrize("typed", ["mem0", LABEL])
def test_each_verb_finds_the_run_by_spec_or_label(
        results: Path, tmp_path: Path, typed: str, capsys: pytest.CaptureFixture[str]) -> None:
    one = str(results / "one")
    assert _summary_systems(capsys, one, "--system", typed) == [LABEL]
    assert main(["export", one, "--system", typed, "--out", str(tmp_path / "p.jsonl")]) == 0
    assert (tmp_path / "p.jsonl").read_text().strip()
    report = tmp_path / "r.html"
    assert main(["report", one, "--system", typed, "--out", str(report)]) == 0
    html = report.read_text()
    assert LABEL in html and ">rag<" not in html
    static = tmp_path / "viewer"
    assert main(["view", one, "--system", typed, "--static", str(static)]) == 0
    assert "wrote the viewer of 1 runs" in capsys.readouterr().err


def test_a_spec_that_resolved_to_two_systems_is_one_line_naming_both(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = str(results / "two")
    both = f"system 'mem0' ran as {LABEL} and {OTHER}; give one of them"
    for args in (["summary", two], ["report", two, "--out", str(tmp_path / "r.html")],
                 ["export", two, "--out", str(tmp_path / "p.jsonl")],
                 ["view", two, "--static", str(tmp_path / "viewer")]):
        capsys.readouterr()
        assert main([*args, "--system", "mem0"]) == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and both in err, (args, err)
    assert _summary_systems(capsys, two, "--system", "mem0:top_k=5") == [OTHER]
    assert _summary_systems(capsys, two, "--system", LABEL) == [LABEL]


def test_an_unknown_system_lists_the_systems_there_are(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = str(results / "one")
    for args in (["summary", one], ["view", one, "--static", str(tmp_path / "viewer")]):
        capsys.readouterr()
        assert main([*args, "--system", "ace"]) == 2
        assert f"no run of system 'ace' (runs here: {LABEL}, rag)" in capsys.readouterr().err
    assert not (tmp_path / "viewer").exists()


def test_several_directories_read_as_one_select_by_system(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirs = [str(results / "one"), str(results / "two")]
    assert _summary_systems(capsys, *dirs, "--system", "rag") == ["rag"]
    assert sorted(_summary_systems(capsys, *dirs, "--system", "mem0:top_k=5")) == [OTHER]
