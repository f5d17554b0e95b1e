import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import clstream.protocols.oaks.babi as oaks_babi
from clstream.core.errors import DataError, SpecError
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks.babi import generate_oaks_babi, rederive_golds, write_oaks_babi
from clstream.protocols.oaks.babi_questions import count_changes
from clstream.protocols.oaks.babi_world import parse_fact
from clstream.protocols.oaks.loader import load_oaks

SMALL = {"docs": 2, "chunks": 24, "chunk_tokens": 300}


def _golds(entry: dict[str, Any], n: int) -> list[list[str]]:
    return [entry["chunk_to_answer"][str(k)] for k in range(n)]


@pytest.fixture(scope="module")
def small() -> list[dict[str, Any]]:
    return generate_oaks_babi(5, **SMALL)


def test_output_is_a_valid_oaks_file(tmp_path: Path, small: list[dict[str, Any]]) -> None:
    path = tmp_path / "babi.json"
    digest = write_oaks_babi(path, 5, **SMALL)
    ds = load_oaks(path)
    assert ds.sha256 == digest
    assert json.loads(path.read_text(encoding="utf-8")) == small
    assert [d.bid for d in ds.documents] == ["babi-s5-d0", "babi-s5-d1"]
    for doc in ds.documents:
        assert doc.num_chunks == 24
        assert doc.facts is not None and len(doc.facts) == 24
        assert sum(len(f) for f in doc.facts) > 10
        assert any(not f for f in doc.facts)  # some chunks carry no fact
        assert [q.question_id for q in doc.questions] == [
            f"{doc.bid}_q{i}" for i in range(len(doc.questions))
        ]
        for q in doc.questions:
            assert q.question_type in {"tracking", "counting", "bridge", "comparison"}
            assert count_changes(q.golds) >= 2


def test_same_arguments_give_identical_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert write_oaks_babi(a, 11, **SMALL) == write_oaks_babi(b, 11, **SMALL)
    assert a.read_bytes() == b.read_bytes()
    # A fresh interpreter with another string-hash seed writes the same bytes.
    c = tmp_path / "c.json"
    code = ("import sys; from clstream.protocols.oaks.babi import write_oaks_babi; "
            "write_oaks_babi(sys.argv[1], 11, docs=2, chunks=24, chunk_tokens=300)")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(c)], check=True, env=env)
    assert c.read_bytes() == a.read_bytes()


def test_different_seeds_differ(small: list[dict[str, Any]]) -> None:
    other = generate_oaks_babi(6, **SMALL)
    assert other[0]["data"]["facts"] != small[0]["data"]["facts"]
    assert other[0]["data"]["chunks"]["0"] != small[0]["data"]["chunks"]["0"]
    assert list(other[0]["data"]["qas"]) != list(small[0]["data"]["qas"])


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 42])
def test_every_gold_rederives_from_recorded_facts(seed: int) -> None:
    for doc in generate_oaks_babi(seed, docs=2, chunks=30, chunk_tokens=200):
        n = doc["meta"]["num_chunks"]
        stored = {e["question_id"]: _golds(e, n) for e in doc["data"]["qas"].values()}
        assert rederive_golds(doc) == stored


def test_rederive_rejects_unreadable_facts(small: list[dict[str, Any]]) -> None:
    doc = json.loads(json.dumps(small[0]))
    doc["data"]["facts"]["3"] = ["The kite flew away."]
    with pytest.raises(DataError) as info:
        rederive_golds(doc, "babi.json")
    assert (info.value.record, info.value.field) == ("doc babi-s5-d0", "facts")
    assert "chunk 3: not a fact sentence" in info.value.problem


def test_rederive_rejects_unknown_questions_and_missing_facts(
    small: list[dict[str, Any]],
) -> None:
    doc = json.loads(json.dumps(small[0]))
    doc["data"]["qas"]["What is the weather like?"] = {"question_id": "x_q9"}
    with pytest.raises(DataError, match="record doc babi-s5-d0 question x_q9, field 'qas'"):
        rederive_golds(doc)
    del doc["data"]["facts"]
    with pytest.raises(DataError, match="field 'facts': missing or not an object"):
        rederive_golds(doc)


def test_rederive_detects_a_tampered_gold(small: list[dict[str, Any]]) -> None:
    doc = json.loads(json.dumps(small[0]))
    entry = next(iter(doc["data"]["qas"].values()))
    entry["chunk_to_answer"]["23"] = ["Somewhere else"]
    assert rederive_golds(doc)[entry["question_id"]] != _golds(entry, 24)


def test_chunks_fill_the_token_budget(small: list[dict[str, Any]]) -> None:
    tok = approx_tokenizer()
    for budget in (300, 2000):
        docs = small if budget == 300 else generate_oaks_babi(8, docs=1, chunks=12,
                                                              chunk_tokens=budget)
        for doc in docs:
            for text in doc["data"]["chunks"].values():
                assert budget - 40 <= tok.count(text) <= budget


def test_facts_are_placed_in_their_chunk_in_order(small: list[dict[str, Any]]) -> None:
    for doc in small:
        chunks, facts = doc["data"]["chunks"], doc["data"]["facts"]
        for k, text in chunks.items():
            pos = 0
            for fact in facts[k]:
                assert parse_fact(fact) is not None
                pos = text.index(fact, pos) + len(fact)
            # no other sentence of the chunk reads as a fact
            assert sum(parse_fact(s) is not None for s in _sentences(text)) == len(facts[k])


def _sentences(text: str) -> list[str]:
    out = []
    for para in text.split("\n\n"):
        out.extend(s if s.endswith(".") else s + "." for s in para.split(". "))
    return out


def test_distractor_text_never_names_world_entities(small: list[dict[str, Any]]) -> None:
    for doc in small:
        facts = [f for fs in doc["data"]["facts"].values() for f in fs]
        entities: set[str] = set()
        for f in facts:
            ev = parse_fact(f)
            assert ev is not None
            entities.update(x for x in (ev.actor, ev.place, ev.obj, ev.recipient) if x)
        for k, text in doc["data"]["chunks"].items():
            rest = text
            for f in doc["data"]["facts"][k]:
                rest = rest.replace(f, "", 1)
            assert not [e for e in entities if e in rest]


def test_question_types_are_balanced_and_capped() -> None:
    docs = generate_oaks_babi(9, docs=2, chunks=40, chunk_tokens=150, max_questions=12)
    for doc in docs:
        types = Counter(e["question_type"] for e in doc["data"]["qas"].values())
        assert sum(types.values()) == 12 == doc["meta"]["num_qas"]
        assert types == {"tracking": 3, "counting": 3, "bridge": 3, "comparison": 3}


def test_paper_sized_stream() -> None:
    docs = generate_oaks_babi(1, docs=4, chunks=65, chunk_tokens=2000)
    assert len(docs) == 4
    for doc in docs:
        assert len(doc["data"]["chunks"]) == 65 == doc["meta"]["num_chunks"]
        assert doc["meta"]["num_qas"] == 40
        assert sum(len(f) for f in doc["data"]["facts"].values()) >= 60


def test_haystack_files_replace_the_prose(tmp_path: Path, small: list[dict[str, Any]]) -> None:
    long = "The " + " ".join(["very"] * 400) + " long sentence stands alone."
    hay = tmp_path / "hay.txt"
    hay.write_text("First line of the story. Second line, with a comma!\n" + long +
                   "\nA question? The end.", encoding="utf-8")
    user = ["First line of the story.", "Second line, with a comma!", long, "A question?",
            "The end."]
    docs = generate_oaks_babi(5, haystack_files=[hay], **SMALL)
    tok = approx_tokenizer()
    expected_next = 0
    alone = 0
    for doc, proc in zip(docs, small, strict=True):
        # world, facts and questions do not depend on the haystack
        assert doc["data"]["facts"] == proc["data"]["facts"]
        assert doc["data"]["qas"] == proc["data"]["qas"]
        for k, text in doc["data"]["chunks"].items():
            rest = text
            for f in doc["data"]["facts"][k]:
                rest = rest.replace(f, "", 1)
            used = " ".join(rest.split())
            # the user's sentences, in order, cycling across chunks and documents
            pieces = []
            while used:
                s = user[expected_next]
                assert used.startswith(s), (used[:80], s)
                pieces.append(s)
                used = used[len(s):].strip()
                expected_next = (expected_next + 1) % len(user)
            if long in pieces:
                assert pieces == [long]  # longer than a chunk: it stands alone
                alone += 1
            else:
                assert tok.count(text) <= 300
    assert alone >= 2


def test_invalid_arguments_raise_spec_errors() -> None:
    with pytest.raises(SpecError, match="chunks must be >= 3"):
        generate_oaks_babi(1, chunks=2)
    with pytest.raises(SpecError, match="chunk_tokens must be >= 64"):
        generate_oaks_babi(1, chunk_tokens=10)
    with pytest.raises(SpecError, match="docs must be >= 1"):
        generate_oaks_babi(1, docs=0)
    with pytest.raises(SpecError, match="seed must be an integer"):
        generate_oaks_babi("1")  # type: ignore[arg-type]


def test_a_world_without_changing_questions_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oaks_babi, "simulate", lambda world, n, rng: [])
    with pytest.raises(SpecError, match="babi-s1-d0 has no question.*use more chunks"):
        generate_oaks_babi(1, docs=1, chunks=5, chunk_tokens=100)
