"""Every command that writes refuses to destroy results or a dataset (core/outputs.py).

For each writing command: a target inside the results store, the store's directory, a dataset
the runs were made from, and a file clstream did not write; each is one line, exit 2, and the
store and dataset are unchanged byte for byte. Rewriting the command's own output needs no flag.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from clstream.cli import main


def _fingerprint(*roots: Path) -> dict[str, str]:
    """Every file's hash; a database by its content (its SQL dump), since a reader may leave
    empty journal files (-wal, -shm) behind without changing anything stored."""
    out: dict[str, str] = {}
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if f.name.endswith(("-wal", "-shm")):
                continue
            if f.name == "results.sqlite":
                with contextlib.closing(sqlite3.connect(f"file:{f}?mode=ro", uri=True)) as db:
                    text = "\n".join(db.iterdump()).encode()
                out[str(f)] = hashlib.sha256(text).hexdigest()
            else:
                out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guards")
    assert main(["generate", "oaks-babi", "--seed", "1", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "200", "--out", str(root / "data.json")]) == 0
    assert main(["run", "oaks", str(root / "data.json"), "--system", "full", "--out",
                 str(root / "res"), "--no-progress"]) == 0
    return root


# Each writing command, as a function of (results dir, target path) -> argv.
WRITERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "export": lambda res, out: ["export", str(res), "--system", "full", "--out", str(out)],
    "report": lambda res, out: ["report", str(res), "--out", str(out)],
    "report-export": lambda res, out: ["report", str(res), "--out", str(res.parent / "r.html"),
                                       "--export", str(out)],
    "summary-cross-csv": lambda res, out: ["summary", str(res), "--cross-csv", str(out)],
    "check-save": lambda res, out: ["check", "--base-url", "http://127.0.0.1:9/v1", "--model",
                                    "m", "--save", str(out)],
    "merge": lambda res, out: ["merge", str(out), str(res)],
    "generate-oaks": lambda res, out: ["generate", "oaks-babi", "--docs", "1", "--chunks", "2",
                                       "--out", str(out)],
    "generate-seqmem": lambda res, out: ["generate", "seqmem-synthetic", "--tasks", "8",
                                         "--holdout", "1", "--out", str(out)],
    "generate-imprint": lambda res, out: ["generate", "imprint", "--setting", "news",
                                          "--out", str(out)],
    "generate-clbench": lambda res, out: ["generate", "clbench", "--task", "sales_prediction",
                                          "--out", str(out)],
    "view-static": lambda res, out: ["view", str(res), "--static", str(out)],
    "run-cache": lambda res, out: ["run", "oaks", str(res.parent / "data.json"), "--system",
                                   "full", "--no-progress", "--out", str(res.parent / "other"),
                                   "--cache", str(out)],
}
FILE_WRITERS = ("export", "report", "summary-cross-csv", "check-save")


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("inside", ["results.sqlite", "results.sqlite-wal", "artifacts", "."])
def test_no_writer_touches_the_store(work: Path, capsys: pytest.CaptureFixture[str],
                                     writer: str, inside: str) -> None:
    res = work / "res"
    before = _fingerprint(res, work / "data.json")
    target = res if inside == "." else res / inside
    _refused(capsys, WRITERS[writer](res, target), str(target))
    assert _fingerprint(res, work / "data.json") == before


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_no_writer_replaces_the_dataset(work: Path, capsys: pytest.CaptureFixture[str],
                                        writer: str) -> None:
    data = work / "data.json"
    before = _fingerprint(work / "res", data)
    _refused(capsys, WRITERS[writer](work / "res", data), str(data))
    assert _fingerprint(work / "res", data) == before


@pytest.mark.parametrize("writer", FILE_WRITERS)
def test_a_users_file_needs_force(work: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str], writer: str) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("keep me")
    _refused(capsys, WRITERS[writer](work / "res", mine), "--force")
    assert mine.read_text() == "keep me"


@pytest.mark.parametrize("writer", ["export", "report", "summary-cross-csv"])
def test_own_outputs_are_rewritten_and_force_replaces(
        work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: str) -> None:
    out = tmp_path / "out.file"
    argv = WRITERS[writer](work / "res", out)
    assert main(argv) == 0
    assert main(argv) == 0  # its own output again: no flag
    capsys.readouterr()
    out.write_text("mine now")
    _refused(capsys, argv, "--force")
    assert main([*argv, "--force"]) == 0
    assert out.read_text() != "mine now"


def test_report_by_default_writes_beside_the_store(work: Path) -> None:
    before = _fingerprint(work / "res" / "results.sqlite")
    assert main(["report", str(work / "res")]) == 0
    assert main(["report", str(work / "res")]) == 0
    assert (work / "res" / "report.html").is_file()
    assert _fingerprint(work / "res" / "results.sqlite") == before


@pytest.mark.parametrize("writer", ["generate-imprint", "generate-clbench"])
def test_generators_refuse_a_non_empty_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: str) -> None:
    out = tmp_path / "ds"
    out.mkdir()
    (out / "corpus.jsonl").write_text("{}\n")
    _refused(capsys, [*WRITERS[writer](tmp_path, out)], "not empty")
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl"]


def test_a_generated_dataset_is_not_regenerated_over(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = WRITERS["generate-seqmem"](tmp_path, tmp_path / "t.json")
    assert main(argv) == 0
    first = (tmp_path / "t.json").read_bytes()
    _refused(capsys, argv, "runs may have been made")
    assert main([*argv, "--force"]) == 0
    assert (tmp_path / "t.json").read_bytes() == first


@pytest.mark.parametrize(("flag", "inside"), [("--out", "."), ("--out", "results"),
                                               ("--cache", "cache.sqlite")])
def test_run_never_writes_into_the_data_it_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, inside: str) -> None:
    """Neither the results directory nor the response cache lies in the dataset a run reads
    (a new file there would change the dataset later runs read)."""
    data = tmp_path / "news"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--out",
                 str(data)]) == 0
    capsys.readouterr()
    before = _fingerprint(data)
    argv = ["run", "imprint", str(data), "--system", "memory-free", "--no-progress",
            "--out", str(tmp_path / "res"), flag, str(data / inside)]
    _refused(capsys, argv, "dataset", "this run reads")
    assert _fingerprint(data) == before and not (data / "results.sqlite").exists()
    assert not (data / "results").exists() and not (tmp_path / "res").exists()


def test_a_response_cache_is_never_another_database(
        work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of a results store named as ``--cache`` is refused before anything is added to
    it; a cache of clstream's own is reopened and reused."""
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes((work / "res" / "results.sqlite").read_bytes())
    before = _fingerprint(copy)
    argv = WRITERS["run-cache"](work / "res", copy)
    _refused(capsys, argv, "not a response cache")
    with contextlib.closing(sqlite3.connect(f"file:{copy}?mode=ro", uri=True)) as db:
        dump = hashlib.sha256("\n".join(db.iterdump()).encode()).hexdigest()
    assert dump == _fingerprint(work / "res" / "results.sqlite")[
        str(work / "res" / "results.sqlite")] and before == {str(copy): before[str(copy)]}
    cache = tmp_path / "cache.sqlite"
    ok = WRITERS["run-cache"](work / "res", cache)
    ok[ok.index("--out") + 1] = str(tmp_path / "fresh")
    assert main(ok) == 0
    ok[ok.index("--out") + 1] = str(tmp_path / "fresh-again")
    assert main(ok) == 0
