import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.protocols.oaks.loader import (
    dump_oaks,
    load_oaks,
    serialize,
    to_json,
    write_oaks_json,
)


def _valid_docs() -> list[dict[str, Any]]:
    open_ended = {
        "meta": {"bid": "b1", "num_chunks": 3, "num_qas": 2},
        "data": {
            "chunks": {"0": "Tova went to Arn Quay.", "1": "Some filler.", "2": "Tova left."},
            "facts": {"0": ["Tova went to Arn Quay."], "1": [], "2": ["Tova left the tin kite."]},
            "qas": {
                "Where is Tova?": {
                    "question_id": "b1_q0",
                    "chunk_to_answer": {"0": ["Arn Quay"], "1": ["Arn Quay"], "2": ["Arn Quay"]},
                    "question_type": "tracking",
                },
                "How many times has Tova moved?": {
                    "question_id": "b1_q1",
                    "chunk_to_answer": {"0": ["1"], "1": ["1"], "2": ["1", "one"]},
                    "question_type": "counting",
                },
            },
        },
    }
    mc = {
        "meta": {"bid": "n1", "num_chunks": 2, "num_qas": 1, "title": "A Book", "author": "Someone"},
        "data": {
            "chunks": {"0": "First part.", "1": "Second part."},
            "qas": {
                "Who owns the boat?": {
                    "question_id": "n1_q0",
                    "chunk_to_answer": {"0": "We cannot answer this question at this point",
                                        "1": "The ferryman"},
                    "options": ["The miller", "We cannot answer this question at this point",
                                "The ferryman"],
                    "option_sources": {"The ferryman": {"1": ["Second part."]}},
                },
            },
        },
    }
    return [open_ended, mc]


def _write(tmp_path: Path, docs: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_bytes(serialize(docs))
    return path


def test_loads_open_ended_and_multiple_choice(tmp_path: Path) -> None:
    path = _write(tmp_path, _valid_docs())
    ds = load_oaks(path)
    assert ds.path == str(path)
    assert ds.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    b1, n1 = ds.documents
    assert b1.bid == "b1" and b1.num_chunks == 3
    assert b1.chunks[2] == "Tova left."
    assert b1.facts == (("Tova went to Arn Quay.",), (), ("Tova left the tin kite.",))
    assert [q.text for q in b1.questions] == ["Where is Tova?", "How many times has Tova moved?"]
    assert b1.questions[1].golds[2] == ("1", "one")
    assert b1.questions[0].gold(1) == ("Arn Quay",)
    assert b1.questions[0].question_type == "tracking" and not b1.questions[0].is_mc
    q = n1.questions[0]
    assert n1.title == "A Book" and n1.author == "Someone" and n1.facts is None
    assert q.is_mc and q.question_type is None
    assert q.gold_letter(1) == "B" and q.gold_letter(2) == "C"
    assert q.option_sources == {"The ferryman": {"1": ["Second part."]}}
    assert set(ds.question_index()) == {"b1_q0", "b1_q1", "n1_q0"}


def test_question_order_follows_the_file(tmp_path: Path) -> None:
    docs = _valid_docs()
    qas = docs[0]["data"]["qas"]
    docs[0]["data"]["qas"] = dict(reversed(list(qas.items())))
    ds = load_oaks(_write(tmp_path, docs))
    assert [q.question_id for q in ds.documents[0].questions] == ["b1_q1", "b1_q0"]


def test_single_string_open_gold_is_a_list_of_one(tmp_path: Path) -> None:
    docs = _valid_docs()
    docs[0]["data"]["qas"]["Where is Tova?"]["chunk_to_answer"]["0"] = "Arn Quay"
    ds = load_oaks(_write(tmp_path, docs))
    assert ds.documents[0].questions[0].golds[0] == ("Arn Quay",)


def test_round_trip_is_byte_identical(tmp_path: Path) -> None:
    docs = _valid_docs()
    path = _write(tmp_path, docs)
    ds = load_oaks(path)
    assert to_json(ds) == docs
    out = tmp_path / "again.json"
    digest = dump_oaks(ds, out)
    assert out.read_bytes() == path.read_bytes()
    assert digest == ds.sha256
    again = load_oaks(out)
    assert again.documents == ds.documents
    assert again.documents[1].questions[0].option_sources == {
        "The ferryman": {"1": ["Second part."]}
    }


def test_dump_accepts_a_document_sequence(tmp_path: Path) -> None:
    ds = load_oaks(_write(tmp_path, _valid_docs()))
    dump_oaks(list(ds.documents[:1]), tmp_path / "one.json")
    assert load_oaks(tmp_path / "one.json").documents == ds.documents[:1]


def _del_gold(d: list[dict[str, Any]]) -> None:
    del d[0]["data"]["qas"]["How many times has Tova moved?"]["chunk_to_answer"]["1"]


def _set(path: tuple[Any, ...], value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def apply(d: list[dict[str, Any]]) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return apply


def _drop(path: tuple[Any, ...]) -> Callable[[list[dict[str, Any]]], None]:
    def apply(d: list[dict[str, Any]]) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return apply


def _rename_chunk(d: list[dict[str, Any]]) -> None:
    chunks = d[0]["data"]["chunks"]
    chunks["7"] = chunks.pop("1")


def _dup_qid(d: list[dict[str, Any]]) -> None:
    d[1]["data"]["qas"]["Who owns the boat?"]["question_id"] = "b1_q1"


Q0 = (0, "data", "qas", "Where is Tova?")
QMC = (1, "data", "qas", "Who owns the boat?")

BAD_CASES = [
    # (id, mutation, record, field, problem fragment)
    ("bid-missing", _drop((0, "meta", "bid")), "doc #0", "bid", "must be a string"),
    ("bid-dup", _set((1, "meta", "bid"), "b1"), "doc b1", "bid", "duplicate document bid"),
    ("meta-not-object", _set((0, "meta"), [1]), "doc #0", "meta", "must be an object"),
    ("num-chunks-type", _set((0, "meta", "num_chunks"), "3"), "doc b1", "num_chunks",
     "positive integer"),
    ("num-chunks-mismatch", _set((0, "meta", "num_chunks"), 4), "doc b1", "num_chunks",
     "is 4 but chunks holds 3 entries"),
    ("num-qas-type", _set((0, "meta", "num_qas"), -1), "doc b1", "num_qas", "non-negative"),
    ("title-type", _set((1, "meta", "title"), 5), "doc n1", "title", "must be a string"),
    ("data-missing", _drop((0, "data")), "doc b1", "data", "must be an object"),
    ("chunk-missing", _rename_chunk, "doc b1", "chunks", "unexpected chunk key '7'"),
    ("chunk-text-type", _set((0, "data", "chunks", "2"), ["x"]), "doc b1", "chunks",
     "must be a string"),
    ("facts-shape", _set((0, "data", "facts", "1"), "one fact"), "doc b1", "facts",
     "facts of chunk 1 must be an array of strings"),
    ("facts-extra-key", _set((0, "data", "facts", "3"), []), "doc b1", "facts",
     "unexpected chunk key '3'"),
    ("qas-missing", _drop((0, "data", "qas")), "doc b1", "qas", "must be an object"),
    ("qid-missing", _drop((*Q0, "question_id")), "doc b1 question 'Where is Tova?'",
     "question_id", "must be a string"),
    ("qid-dup", _dup_qid, "doc n1 question b1_q1", "question_id",
     "duplicate question id (also in doc b1)"),
    ("gold-missing", _del_gold, "doc b1 question b1_q1", "chunk_to_answer",
     "missing gold for chunk 1"),
    ("gold-extra", _set((*Q0, "chunk_to_answer", "3"), ["x"]), "doc b1 question b1_q0",
     "chunk_to_answer", "unexpected chunk key '3'"),
    ("gold-empty-list", _set((*Q0, "chunk_to_answer", "1"), []), "doc b1 question b1_q0",
     "chunk_to_answer", "gold for chunk 1 must be a non-empty string"),
    ("gold-number", _set((*Q0, "chunk_to_answer", "0"), 3), "doc b1 question b1_q0",
     "chunk_to_answer", "got a number"),
    ("gold-blank", _set((*Q0, "chunk_to_answer", "2"), ["Arn Quay", " "]),
     "doc b1 question b1_q0", "chunk_to_answer", "gold for chunk 2 has an empty string"),
    ("answers-missing", _drop((*Q0, "chunk_to_answer")), "doc b1 question b1_q0",
     "chunk_to_answer", "missing"),
    ("qtype-type", _set((*Q0, "question_type"), 1), "doc b1 question b1_q0", "question_type",
     "must be a string"),
    ("mc-gold-not-option", _set((*QMC, "chunk_to_answer", "1"), "The baker"),
     "doc n1 question n1_q0", "chunk_to_answer", "gold for chunk 1 'The baker' is not one"),
    ("mc-gold-two", _set((*QMC, "chunk_to_answer", "0"), ["The miller", "The ferryman"]),
     "doc n1 question n1_q0", "chunk_to_answer", "must be one option text"),
    ("options-type", _set((*QMC, "options"), "The miller"), "doc n1 question n1_q0", "options",
     "must be an array of strings"),
    ("options-dup", _set((*QMC, "options"), ["The ferryman", "The ferryman", "x"]),
     "doc n1 question n1_q0", "options", "appears twice"),
    ("options-empty", _set((*QMC, "options"), []), "doc n1 question n1_q0", "options",
     "must hold 1 to 26 options"),
    ("sources-shape", _set((*QMC, "option_sources"), {"The ferryman": {"1": "Second."}}),
     "doc n1 question n1_q0", "option_sources", "evidence of option 'The ferryman'"),
    ("sources-chunk", _set((*QMC, "option_sources"), {"The ferryman": {"9": ["x"]}}),
     "doc n1 question n1_q0", "option_sources", "unexpected chunk key '9'"),
]


@pytest.mark.parametrize(
    ("mutate", "record", "field", "problem"),
    [c[1:] for c in BAD_CASES],
    ids=[c[0] for c in BAD_CASES],
)
def test_rejects_malformed_documents(tmp_path: Path, mutate: Callable[..., None], record: str,
                                     field: str, problem: str) -> None:
    docs = copy.deepcopy(_valid_docs())
    mutate(docs)
    path = _write(tmp_path, docs)
    with pytest.raises(DataError) as info:
        load_oaks(path)
    err = info.value
    assert (err.path, err.record, err.field) == (str(path), record, field)
    assert problem in err.problem
    assert "\n" not in str(err)


def test_error_message_names_file_record_and_field(tmp_path: Path) -> None:
    docs = _valid_docs()
    _del_gold(docs)
    path = _write(tmp_path, docs)
    with pytest.raises(DataError) as info:
        load_oaks(path)
    assert str(info.value) == (f"{path}, record doc b1 question b1_q1, "
                               "field 'chunk_to_answer': missing gold for chunk 1")


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"meta": {"bid": "b1",}}\n]', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.json: invalid JSON at line 2 column 25"):
        load_oaks(path)


def test_duplicate_question_text_is_caught(tmp_path: Path) -> None:
    text = serialize(_valid_docs()).decode()
    first = text.index('"How many times has Tova moved?"')
    path = tmp_path / "dup.json"
    path.write_text(text[:first] + text[first:].replace(
        '"How many times has Tova moved?"', '"Where is Tova?"', 1), encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_oaks(path)
    assert (info.value.record, info.value.field) == ("doc b1", "qas")
    assert "duplicate key 'Where is Tova?'" in info.value.problem


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"meta": {}}', "top level must be an array of documents, got an object"),
        (b"[]", "the file holds no documents"),
        (b"[1]", "must be an object, got a number"),
        (b"\xff\xfe[]", "not UTF-8 text"),
    ],
)
def test_rejects_bad_files(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(DataError, match=problem):
        load_oaks(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        load_oaks(tmp_path / "absent.json")


def test_write_is_canonical(tmp_path: Path) -> None:
    docs = [{"meta": {"bid": "é"}, "data": {}}]
    digest = write_oaks_json(docs, tmp_path / "w.json")
    raw = (tmp_path / "w.json").read_bytes()
    assert raw == (json.dumps(docs, ensure_ascii=False, indent=1) + "\n").encode()
    assert digest == hashlib.sha256(raw).hexdigest()
    with pytest.raises(DataError, match="cannot write file"):
        write_oaks_json(docs, tmp_path / "no-such-dir" / "w.json")
