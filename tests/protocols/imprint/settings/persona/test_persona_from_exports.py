"""Local personalization adapters (brief §3.3(b)): PersonaMem v1 files and a HorizonBench-style
export become chunks, a ledger and choice items; bad files are one-line DataErrors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from clstream.core.errors import DataError
from clstream.protocols.imprint.schema import load_dataset, write_dataset
from clstream.protocols.imprint.settings.persona.from_exports import load_horizon, load_personamem
from clstream.protocols.imprint.settings.persona.synthetic import state_at

COLUMNS = ["persona_id", "question_id", "question_type", "user_question_or_message",
           "correct_answer", "all_options", "shared_context_id", "end_index_in_shared_context"]


def _messages(n: int, tag: str) -> list[dict[str, str]]:
    return [{"role": "user" if k % 2 == 0 else "assistant", "content": f"{tag} message {k}."}
            for k in range(n)]


def _personamem(root: Path, rows: list[dict[str, str]] | None = None,
                contexts: dict[str, list[dict[str, str]]] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = rows if rows is not None else [
        {"persona_id": "7", "question_id": "q1",
         "question_type": "acknowledge_latest_user_preferences",
         "user_question_or_message": "What should I cook tonight?\n(keep it short)",
         "correct_answer": "(b)",
         "all_options": "['(a) A steak', '(b) A lentil soup', '(c) Ribs', '(d) Wings']",
         "shared_context_id": "ctx1", "end_index_in_shared_context": "4"},
        {"persona_id": "7", "question_id": "q2", "question_type": "suggest_new_ideas",
         "user_question_or_message": "Any hobby idea?", "correct_answer": "c",
         "all_options": json.dumps(["Chess", "Darts", "Pottery"]),
         "shared_context_id": "ctx1", "end_index_in_shared_context": "10"},
        {"persona_id": "8", "question_id": "q3", "question_type": "",
         "user_question_or_message": "Which trip fits me?", "correct_answer": "(a)",
         "all_options": "['(a) Hiking', '(b) Cruise']",
         "shared_context_id": "ctx2", "end_index_in_shared_context": "3"},
    ]
    contexts = contexts if contexts is not None else {"ctx1": _messages(12, "alpha"),
                                                      "ctx2": _messages(6, "beta")}
    with open(root / "questions_32k.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    (root / "shared_contexts_32k.jsonl").write_text(
        "".join(json.dumps({k: v}) + "\n" for k, v in contexts.items()), encoding="utf-8")
    return root


def test_personamem_to_chunks_and_choice_items(tmp_path: Path) -> None:
    data = load_personamem(_personamem(tmp_path / "pm"), chunks=2)
    assert data.setting == "persona"
    # ctx1 is read up to the largest end index (10) in two chunks, also cut at q1's end (4);
    # ctx2 up to 3
    assert [d.doc_id for d in data.corpus] == ["ctx1-c1", "ctx1-c2", "ctx1-c3", "ctx2-c1",
                                               "ctx2-c2"]
    assert [d.meta["messages"] for d in data.corpus[:3]] == [[0, 4], [4, 5], [5, 10]]
    assert "alpha message 3." in data.corpus[0].text
    assert "alpha message 4." not in data.corpus[0].text
    assert "alpha message 9." in data.corpus[2].text
    assert "alpha message 10." not in data.corpus[2].text
    assert "beta message 3." not in data.corpus[4].text
    by_id = {i.item_id: i for i in data.items}
    q1, q2, q3 = by_id["q1"], by_id["q2"], by_id["q3"]
    assert q1.gold == "B" and q1.options[1] == "A lentil soup" and q1.judge == "choice"
    assert (q1.family, q1.axis) == ("TempUpd", "latest")
    assert q1.question.startswith("What should I cook tonight?\n")
    assert q1.source_doc_ids == ["ctx1-c1"]  # history ends at message 4: the first document
    assert q1.after_doc == 1
    assert q2.gold == "C" and q2.family == "ImpRel"
    assert q2.source_doc_ids == ["ctx1-c1", "ctx1-c2", "ctx1-c3"] and q2.after_doc == 3
    assert q3.family == "ImpRel" and q3.instance_id == "ctx2" and q3.persona == "8"
    assert q3.after_doc == 2
    written = write_dataset(tmp_path / "out", data)
    assert len(load_dataset(written).items) == 3


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ({"correct_answer": "(z)"}, "correct_answer", "outside the 4 options"),
        ({"all_options": "not a list ["}, "all_options", "list of option strings"),
        ({"shared_context_id": "nope"}, "shared_context_id", "no shared context"),
        ({"end_index_in_shared_context": "-1"}, "end_index_in_shared_context", "integer"),
        ({"question_type": "mystery"}, "question_type", "unknown question type"),
        ({"user_question_or_message": " "}, "user_question_or_message", "empty"),
    ],
)
def test_personamem_bad_rows_name_row_and_field(tmp_path: Path, change: dict[str, str],
                                                field: str, fragment: str) -> None:
    row = {"persona_id": "1", "question_id": "q1", "question_type": "suggest_new_ideas",
           "user_question_or_message": "Q?", "correct_answer": "a",
           "all_options": "['(a) x', '(b) y', '(c) z', '(d) w']",
           "shared_context_id": "ctx1", "end_index_in_shared_context": "2"}
    good = dict(row, question_id="q0")
    root = _personamem(tmp_path / "pm", rows=[good, {**row, **change}],
                       contexts={"ctx1": _messages(4, "a")})
    with pytest.raises(DataError) as info:
        load_personamem(root)
    assert info.value.field == field
    assert "row 2" in str(info.value.record)
    assert "questions_32k.csv" in str(info.value)
    assert fragment in info.value.problem


def test_personamem_bad_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a directory"):
        load_personamem(tmp_path / "missing")
    root = _personamem(tmp_path / "pm")
    (root / "shared_contexts_32k.jsonl").write_text('{"ctx1": [{"role": "user"}]}\n')
    with pytest.raises(DataError) as info:
        load_personamem(root)
    assert info.value.record == "line 1" and info.value.field == "ctx1[0]"
    (root / "questions_128k.csv").write_text("x\n")
    with pytest.raises(DataError, match="exactly one"):
        load_personamem(root)
    (root / "questions_32k.csv").write_text("user_question_or_message,correct_answer\n")
    with pytest.raises(DataError) as info:
        load_personamem(root, size="32k")
    assert info.value.record == "header" and info.value.field == "all_options"


def _horizon_line(persona: str = "u1") -> dict[str, object]:
    return {
        "persona_id": persona,
        "sessions": [
            {"session_id": f"s{k}", "date": f"2025-03-{k + 1:02d}",
             "turns": [{"role": "user", "content": f"Chat {k} from {persona}."},
                       {"role": "assistant", "content": "Sure."}]}
            for k in (3, 0, 1, 2)  # out of order on purpose
        ],
        "changes": [
            {"attribute": "diet", "old_value": None, "new_value": "vegetarian",
             "session_id": "s0"},
            {"attribute": "diet", "old_value": "vegetarian", "new_value": "vegan",
             "session_id": "s3", "cause": "life_event:doctor", "affordances": ["meal"]},
        ],
        "items": [
            {"item_id": f"{persona}-i1", "question": "What should I order?",
             "options": ["Cheese pizza", "Tofu bowl", "Steak"], "answer": "B",
             "stale_answer": 0, "attribute": "diet", "axis": "changed_info"},
            {"question": "Which gift?", "options": ["Book", "Mug"], "answer": 1,
             "family": "ImpRel"},
        ],
    }


def test_horizon_export_to_chunks_ledger_items(tmp_path: Path) -> None:
    path = tmp_path / "horizon.jsonl"
    path.write_text("".join(json.dumps(_horizon_line(p)) + "\n" for p in ("u1", "u2")))
    data = load_horizon(path, chunks=2)
    u1 = [d for d in data.corpus if d.instance_id == "u1"]
    assert [d.doc_id for d in u1] == ["u1-c1", "u1-c2"]
    assert u1[0].text.index("Chat 0") < u1[0].text.index("Chat 1")
    assert "Chat 3" in u1[1].text and u1[1].date == "2025-03-04"
    entries = [e for e in data.ledger if e["persona"] == "u1"]
    assert [e["seq"] for e in entries] == [1, 2]
    now = state_at(data.ledger, "u1")["diet"]
    assert now["value"] == "vegan" and now["previous_value"] == "vegetarian"
    assert now["chunk"] == 1 and now["cause"] == "life_event:doctor"
    assert state_at(data.ledger, "u1", until="2025-03-02")["diet"]["value"] == "vegetarian"
    first = next(i for i in data.items if i.item_id == "u1-i1")
    assert (first.family, first.gold, first.gold_before) == ("TempUpd", "B", "A")
    assert first.source_doc_ids == ["u1-c1", "u1-c2"]
    second = next(i for i in data.items if i.item_id == "u1-item002")
    assert second.family == "ImpRel" and second.gold == "B"
    assert load_dataset(write_dataset(tmp_path / "out", data)).ledger == data.ledger


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("persona_id"), "persona_id"),
        (lambda d: d["sessions"][1].update(date="March 1"), "date"),
        (lambda d: d["changes"][0].update(session_id="s9"), "session_id"),
        (lambda d: d["items"][0].update(answer="Z"), "answer"),
        (lambda d: d["items"][1].update(family="Trivia"), "family"),
        (lambda d: d["items"][0].update(options=["only one"]), "options"),
        (lambda d: d.update(sessions=[]), "sessions"),
    ],
)
def test_horizon_bad_records_name_line_and_field(tmp_path: Path, mutate: object,
                                                 field: str) -> None:
    bad = _horizon_line("u2")
    mutate(bad)  # type: ignore[operator]
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(_horizon_line("u1")) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError) as info:
        load_horizon(path)
    assert info.value.field == field
    assert str(info.value.record).startswith("line 2")
    assert "h.jsonl" in str(info.value)


def test_horizon_duplicate_persona_and_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(_horizon_line("u1")) + "\n" + json.dumps(_horizon_line("u1"))
                    + "\n")
    with pytest.raises(DataError, match="duplicate persona"):
        load_horizon(path)
    path.write_text("")
    with pytest.raises(DataError, match="no personas"):
        load_horizon(path)
