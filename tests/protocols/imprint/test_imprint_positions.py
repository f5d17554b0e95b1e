"""Items placed inside the stream (``Item.after_doc``; PersonaMem's end index) are asked of the
memory at their place: it has seen no later document, a method that builds memory at
finalize is finalized there, and the probe leaves the memory as it was; ingestion stays one
pass, and a rerun makes no model call again (runner module docstring)."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.protocols.imprint.runner import event_cuts
from clstream.protocols.imprint.schema import load_dataset
from clstream.store.db import ResultsStore

MESSAGES = [
    ("user", "My favourite drink is green tea."),
    ("assistant", "Noted, green tea it is."),
    ("user", "I walk to the office every morning."),
    ("assistant", "A good habit."),
    ("user", "Update: my favourite drink is black coffee now."),
    ("assistant", "Got it."),
]
QUESTION = "What is my favourite drink?"
OPTIONS = "['(a) green tea', '(b) black coffee']"


def _personamem(root: Path) -> Path:
    root.mkdir(parents=True)
    with open(root / "questions_32k.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question_id", "question_type", "user_question_or_message",
                         "correct_answer", "all_options", "shared_context_id",
                         "end_index_in_shared_context"])
        writer.writerow(["early", "acknowledge_latest_user_preferences", QUESTION, "(a)",
                         OPTIONS, "ctx", "2"])
        writer.writerow(["late", "acknowledge_latest_user_preferences", QUESTION, "(b)",
                         OPTIONS, "ctx", "6"])
    context = [{"role": r, "content": c} for r, c in MESSAGES]
    (root / "shared_contexts_32k.jsonl").write_text(json.dumps({"ctx": context}) + "\n")
    return root


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("positions")
    out = root / "data"
    assert main(["generate", "imprint", "--setting", "persona", "--personamem",
                 str(_personamem(root / "pm")), "--out", str(out)]) == 0
    return out


def _answers(out: Path) -> dict[str, str]:
    with ResultsStore(out) as store:
        run = store.runs()[0]
        return {r.key: r.payload["samples"][0].rsplit("\n", 1)[-1]
                for r in store.read_records(run.run_id, "item")}


def _count(out: Path, kind: str) -> int:
    with sqlite3.connect(out / "results.sqlite") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM records WHERE kind=?",
                                (kind,)).fetchone()[0])


def test_items_carry_their_place_and_it_maps_to_events(data_dir: Path) -> None:
    data = load_dataset(data_dir)
    by_id = {i.item_id: i for i in data.items}
    assert (by_id["early"].after_doc, by_id["late"].after_doc) == (1, 2)
    assert "black coffee" not in data.corpus[0].text
    assert event_cuts(data, "ctx", "C") == [0, 1, 2]


@pytest.mark.parametrize("system", ["oracle", "full"])
def test_an_early_question_is_answered_before_the_later_history(
        data_dir: Path, tmp_path: Path, system: str) -> None:
    argv = ["run", "imprint", "--model", "builtin", "--system", system, "--samples", "1",
            "--no-progress"]
    out = tmp_path / "placed"
    assert main([*argv[:2], str(data_dir), *argv[2:], "--out", str(out)]) == 0
    answers = _answers(out)
    assert answers["early"].endswith("A") and answers["late"].endswith("B"), answers
    if system == "oracle":  # the oracle shows the item's sources only, wherever it is asked
        return
    # Asked after the whole history, the same item reads the update (the place matters).
    unplaced = tmp_path / "unplaced"
    unplaced.mkdir()
    for name in ("manifest.json", "corpus.jsonl"):
        (unplaced / name).write_bytes((data_dir / name).read_bytes())
    with open(data_dir / "items.jsonl", encoding="utf-8") as src:
        rows = [{k: v for k, v in json.loads(line).items() if k != "after_doc"} for line in src]
    (unplaced / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "after-all"
    assert main([*argv[:2], str(unplaced), *argv[2:], "--out", str(out)]) == 0
    assert _answers(out)["early"].endswith("B")


def test_a_finalizing_method_is_probed_without_changing_its_memory(
        data_dir: Path, tmp_path: Path) -> None:
    argv = ["--model", "builtin", "--system", "summary:tokens=64,chunk=512", "--samples", "1",
            "--no-progress"]
    out = tmp_path / "summary"
    assert main(["run", "imprint", str(data_dir), *argv, "--out", str(out)]) == 0
    answers = _answers(out)
    with ResultsStore(out) as store:
        run = store.runs()[0]
        assert store.load_state(run.run_id, "ctx/at/1") is not None  # finalized at the place
        ingest = store.load_state(run.run_id, "ctx/ingest")
    assert ingest is not None and ingest[0] == 3  # one pass: two documents, then finalize
    # The late item alone, with no probe before it, gets the same answer.
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in ("manifest.json", "corpus.jsonl"):
        (alone / name).write_bytes((data_dir / name).read_bytes())
    late = [line for line in (data_dir / "items.jsonl").read_text().splitlines()
            if '"item_id": "late"' in line]
    (alone / "items.jsonl").write_text(late[0] + "\n")
    out_alone = tmp_path / "alone-run"
    assert main(["run", "imprint", str(alone), *argv, "--out", str(out_alone)]) == 0
    assert _answers(out_alone)["late"] == answers["late"]

    # A rerun that finds the early item missing asks it again without any model call but
    # the answer's own (the finalized memory at its place is stored).
    calls = _count(out, "call")
    assert calls == 2  # the summary is built once at the early item's place, once at the end
    with sqlite3.connect(out / "results.sqlite") as conn:
        conn.execute("DELETE FROM records WHERE kind='item' AND key='early'")
    assert main(["run", "imprint", str(data_dir), *argv, "--out", str(out)]) == 0
    assert _count(out, "call") == calls
    assert _answers(out) == answers
