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
from clstream.protocols.oaks.babi_questions import QUESTION_TYPES, count_phases
from clstream.protocols.oaks.babi_world import parse_fact
from clstream.protocols.oaks.loader import load_oaks

SMALL: dict[str, Any] = {"docs": 2, "chunks": 24, "chunk_tokens": 300}


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
            assert count_phases(q.golds) >= 2  # SPECS §1.5: at least two phases


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
    out: list[str] = []
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
    with pytest.raises(SpecError, match="chunks must be >= 2"):
        generate_oaks_babi(1, chunks=1)
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



def _families(doc: dict[str, Any]) -> set[str]:
    return {e["question_type"] for e in doc["data"]["qas"].values()}


def _phases(doc: dict[str, Any]) -> Counter[int]:
    n = doc["meta"]["num_chunks"]
    return Counter(count_phases([tuple(g) for g in _golds(e, n)])
                   for e in doc["data"]["qas"].values())


def test_single_change_questions_are_kept(small: list[dict[str, Any]]) -> None:
    # SPECS §1.5 / Algorithm 1 keeps CountChanges(T) > 0: two phases (e.g. Unknown -> X) are
    # enough, one phase is never kept.
    for doc in small:
        phases = _phases(doc)
        assert phases[2] > 0 and min(phases) == 2


def test_every_candidate_with_two_phases_is_eligible() -> None:
    from clstream.protocols.oaks.babi_questions import enumerate_questions, timelines
    from clstream.protocols.oaks.babi_world import build_world
    from clstream.protocols.oaks.haystack import filler_vocabulary

    world = build_world(oaks_babi._rng(5, 0, "world"), filler_vocabulary())
    doc = generate_oaks_babi(5, docs=1, chunks=24, chunk_tokens=300, max_questions=10_000)[0]
    events = [[parse_fact(f) for f in doc["data"]["facts"][str(k)]] for k in range(24)]
    candidates = enumerate_questions(world)
    golds = timelines(candidates, events)  # type: ignore[arg-type]
    eligible = {q.text for q, g in zip(candidates, golds, strict=True) if count_phases(g) >= 2}
    assert set(doc["data"]["qas"]) == eligible
    assert _phases(doc)[2] > 0


@pytest.mark.parametrize("seed", range(6))
def test_every_family_in_a_two_by_twelve_stream(seed: int) -> None:
    # `clstream generate oaks-babi --docs 2 --chunks 12`: no family is silently dropped.
    for doc in generate_oaks_babi(seed, docs=2, chunks=12, chunk_tokens=200):
        assert _families(doc) == set(QUESTION_TYPES)


@pytest.mark.parametrize("seed", range(10))
def test_every_family_in_a_tiny_stream(seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    # 1 document x 4 chunks (and x 2 chunks): denser facts bring every family, no warning.
    for chunks in (4, 2):
        doc = generate_oaks_babi(seed, docs=1, chunks=chunks, chunk_tokens=100)[0]
        assert _families(doc) == set(QUESTION_TYPES)
    assert capsys.readouterr().err == ""


def test_short_streams_get_denser_facts() -> None:
    # Some 2-chunk documents lack a family at the paper's density (30% empty chunks, 1-3
    # facts); they are simulated again with no empty chunk and more facts per chunk.
    denser = 0
    for seed in range(30):
        doc = generate_oaks_babi(seed, docs=1, chunks=2, chunk_tokens=100)[0]
        facts = [doc["data"]["facts"][k] for k in ("0", "1")]
        assert _families(doc) == set(QUESTION_TYPES)
        denser += all(facts) and max(map(len, facts)) > 3
    assert denser > 0


def test_a_capped_family_is_named_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    docs = generate_oaks_babi(1, docs=1, chunks=8, chunk_tokens=100, max_questions=2)
    assert _families(docs[0]) == {"tracking", "counting"}
    err = capsys.readouterr().err
    for family in ("bridge", "comparison"):
        assert f"warning: oaks-babi: the stream has no {family} question" in err
    assert err.count("--max-questions") == 2
    # with a small cap, documents rotate the first family: the stream covers all four
    docs = generate_oaks_babi(1, docs=2, chunks=8, chunk_tokens=100, max_questions=2)
    assert _families(docs[0]) | _families(docs[1]) == set(QUESTION_TYPES)
    assert capsys.readouterr().err == ""


def test_a_family_no_fact_can_change_is_named_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # A world where one actor only picks up and drops one object, never moving: no bridge
    # answer (all about places) ever leaves Unknown, however dense the facts.
    from clstream.protocols.oaks.babi_world import ACQUIRE, DISCARD, Event

    def pick_and_drop(world: Any, n: int, rng: Any) -> list[Event]:
        a, o = world.actors[0], world.objects[0]
        return [Event(DISCARD if i % 2 else ACQUIRE, a, obj=o) for i in range(n)]

    monkeypatch.setattr(oaks_babi, "simulate", pick_and_drop)
    docs = generate_oaks_babi(1, docs=1, chunks=6, chunk_tokens=100)
    assert "bridge" not in _families(docs[0])
    err = capsys.readouterr().err
    assert ("the stream has no bridge question: no bridge question's answer changes over 6 "
            "chunks") in err
