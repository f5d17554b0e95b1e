"""A results directory holding runs of several protocols and datasets (as the README's own
commands make it): ``export``, ``summary`` and ``report`` choose runs by protocol and dataset,
and the text summary shows which dataset each row belongs to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("selection")
    for seed in (1, 2):
        data = root / f"oaks{seed}.json"
        assert main(["generate", "oaks-babi", "--seed", str(seed), "--docs", "1", "--chunks",
                     "3", "--chunk-tokens", "120", "--out", str(data)]) == 0
        assert main(["run", "oaks", str(data), "--system", "full", "--out",
                     str(root / "res"), "--no-progress"]) == 0
    assert main(["generate", "seqmem-synthetic", "--tasks", "8", "--holdout", "2",
                 "--out", str(root / "s.json")]) == 0
    assert main(["run", "seqmem", str(root / "s.json"), "--system", "full", "--out",
                 str(root / "res"), "--no-progress"]) == 0
    return root


def test_export_names_what_tells_runs_apart(results: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    res, out = results / "res", str(tmp_path / "p.jsonl")
    capsys.readouterr()
    assert main(["export", str(res), "--system", "full", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "(oaks, oaks1.json, builtin)" in err and "(seqmem, s.json, builtin)" in err
    assert "pass --protocol, --dataset or a run id" in err
    assert main(["export", str(res), "--system", "full", "--model", "builtin", "--out", out]) == 2
    assert main(["export", str(res), "--system", "full", "--protocol", "oaks", "--out", out]) == 2
    assert "pass --dataset or a run id" in capsys.readouterr().err
    assert main(["export", str(res), "--system", "full", "--protocol", "oaks", "--dataset",
                 str(results / "oaks2.json"), "--out", out]) == 0
    assert main(["export", str(res), "--system", "full", "--protocol", "seqmem",
                 "--out", out]) == 0
    assert main(["export", str(res), "--system", "full", "--dataset", "oaks1.json",
                 "--out", out]) == 0


def test_summary_shows_datasets_and_filters_by_protocol_and_dataset(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = str(results / "res")
    capsys.readouterr()
    assert main(["summary", res]) == 0
    text = capsys.readouterr().out
    headers = [line for line in text.splitlines() if line.startswith("[")]
    assert [h.split(" (")[0] for h in headers] == [
        "[oaks] oaks1.json", "[oaks] oaks2.json", "[seqmem] s.json"]
    assert main(["summary", res, "--json", "--protocol", "oaks", "--dataset", "oaks2.json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["protocol"] == "oaks" and run["dataset"]["path"].endswith("oaks2.json")
    digest = run["meta"]["spec"]["dataset_hash"][:8]
    assert main(["summary", res, "--json", "--dataset", digest]) == 0
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 1
    assert main(["summary", res, "--protocol", "clbench"]) == 2
    assert "no run matches clbench" in capsys.readouterr().err
    report = results / "seqmem.html"
    assert main(["report", res, "--protocol", "seqmem", "--out", str(report)]) == 0
    assert "SeqMem" in report.read_text() and "OAKS" not in report.read_text()


@pytest.mark.parametrize(("original", "protocol"), [("oaks2.json", "oaks"), ("s.json", "seqmem")])
def test_a_copy_of_a_dataset_elsewhere_selects_the_runs_over_its_content(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], original: str,
    protocol: str,
) -> None:
    copy = tmp_path / "moved" / "renamed.json"
    copy.parent.mkdir()
    copy.write_bytes((results / original).read_bytes())
    capsys.readouterr()
    assert main(["summary", str(results / "res"), "--json", "--dataset", str(copy)]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["protocol"] == protocol and run["dataset"]["path"].endswith(original)
    copy.write_bytes(copy.read_bytes() + b"\n")  # other content: no run is over it
    assert main(["summary", str(results / "res"), "--json", "--dataset", str(copy)]) == 2
