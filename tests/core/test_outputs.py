"""The output guard: stores, datasets and files clstream did not write are never replaced."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clstream.core.outputs import (
    LEDGER,
    RESULTS_DB,
    OutputRefused,
    claim_directory,
    claim_file,
    note_written,
    output_writer,
    replacing,
    store_root,
    write_output,
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A directory that looks like a results store (the guard looks for its database)."""
    root = tmp_path / "res"
    (root / "artifacts" / "w").mkdir(parents=True)
    (root / RESULTS_DB).write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    return root


@pytest.mark.parametrize("inside", [RESULTS_DB, f"{RESULTS_DB}-wal", ".writer.lock",
                                    "artifacts", "artifacts/w/adapter.bin"])
def test_a_store_file_is_refused_even_with_force(store: Path, inside: str) -> None:
    with pytest.raises(OutputRefused, match="belongs to the results store"):
        claim_file(store / inside, force=True)


def test_the_store_directory_itself_is_refused(store: Path) -> None:
    with pytest.raises(OutputRefused, match="results directory itself"):
        claim_file(store, force=True)
    with pytest.raises(OutputRefused, match="results directory itself"):
        claim_directory(store, force=True)


def test_a_symlink_into_a_store_is_refused(store: Path, tmp_path: Path) -> None:
    link = tmp_path / "innocent.jsonl"
    link.symlink_to(store / RESULTS_DB)
    with pytest.raises(OutputRefused, match="results store"):
        claim_file(link, force=True)


def test_any_sqlite_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    db.write_bytes(b"SQLite format 3\x00rest")
    with pytest.raises(OutputRefused, match="SQLite database"):
        claim_file(db, force=True)


def test_files_beside_a_store_are_ordinary_outputs(store: Path) -> None:
    assert store_root(store / "report.html") == store
    assert claim_file(store / "report.html") == (store / "report.html").resolve()
    write_output(store / "report.html", "<p>one</p>")
    write_output(store / "report.html", "<p>two</p>")  # its own output: no flag needed
    assert (store / "report.html").read_text() == "<p>two</p>"


def test_a_file_clstream_did_not_write_needs_force(tmp_path: Path) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    with pytest.raises(OutputRefused, match="not written by clstream; give --force"):
        write_output(mine, "export")
    assert mine.read_text() == "my notes"
    write_output(mine, "export", force=True)
    assert mine.read_text() == "export"


def test_force_comes_from_the_command(tmp_path: Path) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    with replacing(True):
        write_output(mine, "export")
    assert mine.read_text() == "export"
    mine.write_text("mine again")
    with pytest.raises(OutputRefused):
        write_output(mine, "x")


def test_an_output_changed_since_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    write_output(out, "a\n")
    with open(out, "a") as fh:
        fh.write("edited by hand\n")
    with pytest.raises(OutputRefused, match="changed since clstream wrote it"):
        write_output(out, "b\n")
    assert out.read_text() == "a\nedited by hand\n"


def test_streamed_outputs_are_noted(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    with output_writer(out) as fh:
        fh.write("x\n")
    ledger = json.loads((tmp_path / LEDGER).read_text())
    assert set(ledger["rows.jsonl"]) == {"sha256"}
    with output_writer(out) as fh:
        fh.write("y\n")
    assert out.read_text() == "y\n"


def test_an_old_clstream_report_is_recognized(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text('<!doctype html><meta name="generator" content="clstream 0.1.0">')
    write_output(page, "new")
    assert page.read_text() == "new"


def test_a_dataset_is_replaced_by_a_generator_only_with_force(tmp_path: Path) -> None:
    data = tmp_path / "stream.json"
    data.write_text("{}")
    with pytest.raises(OutputRefused, match="runs may have been made from it"):
        claim_file(data, role="dataset")
    assert claim_file(data, role="dataset", force=True) == data.resolve()
    with pytest.raises(OutputRefused, match="not written by clstream"):
        claim_file(data)


def test_a_generator_never_fills_a_non_empty_directory(tmp_path: Path) -> None:
    news = tmp_path / "news"
    news.mkdir()
    (news / "items.jsonl").write_text("{}\n")
    with pytest.raises(OutputRefused, match="not empty"):
        claim_directory(news, role="dataset", force=True)


def test_protected_dataset_paths(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    data.write_text("{}\n")
    with pytest.raises(OutputRefused, match="runs being read were made from"):
        claim_file(data, force=True, protected=[str(data)])


def test_directories(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    assert claim_directory(fresh) == fresh.resolve()
    full = tmp_path / "full"
    full.mkdir()
    (full / "thesis.tex").write_text("x")
    with pytest.raises(OutputRefused, match="not made by clstream; give --force"):
        claim_directory(full)
    claim_directory(full, force=True)
    note_written(full)
    claim_directory(full)  # an export folder clstream made is refreshed without a flag
    caches = tmp_path / "caches"
    caches.mkdir()
    (caches / "question_cache.json").write_text("{}")
    claim_directory(caches, role="dataset", reusable=["question_cache.json"])
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OutputRefused, match="not a directory"):
        claim_directory(tmp_path / "a-file")


def test_devices_are_written_in_place(tmp_path: Path) -> None:
    assert claim_file(os.devnull) == Path(os.devnull).resolve()


def test_the_ledger_is_not_a_target(tmp_path: Path) -> None:
    with pytest.raises(OutputRefused, match="list of the files it wrote"):
        claim_file(tmp_path / LEDGER, force=True)
