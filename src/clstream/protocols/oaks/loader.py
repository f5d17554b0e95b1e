"""Read, validate and write OAKS data files (the published JSON, docs/oaks.md §3.1).

Why: every OAKS number depends on the per-chunk golds in this file. A malformed file must
fail before a run starts, with one line naming the file, the document bid, the question id
and the field (docs/oaks.md §3.1), never score against a missing gold.

Checked: JSON syntax (line and column), duplicate keys in any object (a repeated question
text would otherwise silently replace another question), the top-level array, each document's
meta and chunks 0..num_chunks-1, the optional per-chunk facts, and for every question its id
(unique in the file), a gold for every chunk, and for multiple choice that each gold is one of
the options. ``num_qas`` must be a non-negative integer when present but is not compared with
the number of questions: nothing reads it, and the loader takes the questions themselves.

Reading goes through :mod:`clstream.core.jsonio` (strict UTF-8, no NaN or Infinity, bounded
nesting and integer size). Writing uses one fixed serialization (UTF-8, ``indent=1``, keys in
insertion order), so the same documents always give the same bytes and the same sha256, and
is atomic (:func:`clstream.core.files.write_atomic`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError
from clstream.core.files import write_atomic
from clstream.core.jsonio import decode_utf8, loads_json_bytes, plain_json, read_file_bytes
from clstream.protocols.oaks.data import OaksDataset, OaksDocument, OaksQuestion

MAX_OPTIONS = 26  # one capital letter per option


class _JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers keys it saw more than once, in the order of
    their repeats (none, for nearly every object: the class's empty tuple)."""

    duplicates: tuple[str, ...] = ()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject(pairs)  # built in C; the pairs are walked only when a key repeats
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeats: list[str] = []
        for key, _ in pairs:
            if key in seen:
                repeats.append(key)
            seen.add(key)
        obj.duplicates = tuple(repeats)
    return obj


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


def _plain(value: Any) -> Any:
    """The same JSON value with plain dicts (for objects kept as given)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _valid_golds(values: list[Any], options: tuple[str, ...]) -> tuple[tuple[str, ...], ...] | None:
    """The golds of one question when every one passes :meth:`_Checker.gold` (checked in
    bulk: a dataset has a gold per question and chunk), else None."""
    if options:
        if all(type(v) is str for v in values) and set(values) <= set(options) \
                and all(map(str.strip, values)):
            return tuple((v,) for v in values)
        return None
    if not (set(map(type, values)) <= {list} and all(values)):  # non-empty arrays
        return None
    flat = list(chain.from_iterable(values))
    if set(map(type, flat)) <= {str} and all(map(str.strip, flat)):
        return tuple(map(tuple, values))
    return None


@lru_cache(maxsize=64)
def _chunk_keys(n: int) -> tuple[str, ...]:
    """The keys of chunks 0..n-1 (``"0"``, ``"1"``, ...): made once per chunk count, not
    once per question and chunk."""
    return tuple(map(str, range(n)))


@lru_cache(maxsize=64)
def _chunk_key_set(n: int) -> frozenset[str]:
    return frozenset(_chunk_keys(n))


class _Checker:
    def __init__(self, path: str):
        self.path = path
        self.qid_owner: dict[str, str] = {}

    def fail(self, record: str | None, field: str | None, problem: str) -> DataError:
        return DataError(self.path, record, field, problem)

    def obj(self, value: Any, record: str | None, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(record, field, f"must be an object, got {_kind(value)}")
        dups = getattr(value, "duplicates", None)
        if dups:
            raise self.fail(record, field, f"duplicate key {dups[0]!r}")
        return value

    def string(self, value: Any, record: str, field: str, allow_empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(record, field, f"must be a string, got {_kind(value)}")
        if not allow_empty and not value.strip():
            raise self.fail(record, field, "must not be empty")
        return value

    def string_list(self, value: Any, record: str, field: str, what: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(record, field, f"{what} must be an array of strings")
        return tuple(value)

    def chunk_keys(self, value: dict[str, Any], n: int, record: str, field: str,
                   what: str, complete: bool) -> None:
        expected = _chunk_key_set(n)
        if value.keys() <= expected and (not complete or len(value) == n):
            return  # the usual object: checked in C, searched below only for the error
        for key in value:
            if key not in expected:
                raise self.fail(record, field, f"unexpected chunk key {key!r} "
                                               f"(chunks are 0..{n - 1})")
        for k in range(n):
            if str(k) not in value:
                raise self.fail(record, field, f"missing {what} for chunk {k}")

    def gold(self, value: Any, k: int, record: str, options: tuple[str, ...]) -> tuple[str, ...]:
        if isinstance(value, str):
            gold: tuple[str, ...] = (value,)
        elif isinstance(value, list) and value and all(isinstance(g, str) for g in value):
            gold = tuple(value)
        else:
            raise self.fail(record, "chunk_to_answer", f"gold for chunk {k} must be a non-empty "
                            f"string or a non-empty array of strings, got {_kind(value)}")
        if any(not g.strip() for g in gold):
            raise self.fail(record, "chunk_to_answer", f"gold for chunk {k} has an empty string")
        if options:
            if len(gold) != 1:
                raise self.fail(record, "chunk_to_answer",
                                f"gold for chunk {k} must be one option text, got {len(gold)}")
            if gold[0] not in options:
                raise self.fail(record, "chunk_to_answer",
                                f"gold for chunk {k} {gold[0]!r} is not one of the options")
        return gold

    def question(self, text: str, entry: Any, bid: str, n: int) -> OaksQuestion:
        record = f"doc {bid} question {text[:60]!r}"
        if not text.strip():
            raise self.fail(f"doc {bid}", "qas", "empty question text")
        entry = self.obj(entry, record, "qas")
        qid = self.string(entry.get("question_id"), record, "question_id")
        record = f"doc {bid} question {qid}"
        if qid in self.qid_owner:
            raise self.fail(record, "question_id",
                            f"duplicate question id (also in doc {self.qid_owner[qid]})")
        self.qid_owner[qid] = bid
        qtype = entry.get("question_type")
        if qtype is not None:
            qtype = self.string(qtype, record, "question_type")
        options: tuple[str, ...] = ()
        if "options" in entry:
            options = self.string_list(entry["options"], record, "options", "options")
            if not options or len(options) > MAX_OPTIONS:
                raise self.fail(record, "options", f"must hold 1 to {MAX_OPTIONS} options, "
                                                   f"got {len(options)}")
            if any(not o.strip() for o in options):
                raise self.fail(record, "options", "an option is empty")
            if len(set(options)) != len(options):
                dup = next(o for o in options if options.count(o) > 1)
                raise self.fail(record, "options", f"option {dup!r} appears twice")
        if "chunk_to_answer" not in entry:
            raise self.fail(record, "chunk_to_answer", "missing")
        answers = self.obj(entry["chunk_to_answer"], record, "chunk_to_answer")
        self.chunk_keys(answers, n, record, "chunk_to_answer", "gold", complete=True)
        golds = _valid_golds(list(map(answers.__getitem__, _chunk_keys(n))), options)
        if golds is None:  # some gold is wrong: find which, with its error
            golds = tuple(self.gold(answers[str(k)], k, record, options) for k in range(n))
        sources = entry.get("option_sources")
        if sources is not None:
            for option, by_chunk in self.obj(sources, record, "option_sources").items():
                by_chunk = self.obj(by_chunk, record, "option_sources")
                self.chunk_keys(by_chunk, n, record, "option_sources", "evidence", False)
                for ev in by_chunk.values():
                    self.string_list(ev, record, "option_sources",
                                     f"evidence of option {option!r}")
            sources = _plain(sources)
        return OaksQuestion(question_id=qid, text=text, golds=golds, question_type=qtype,
                            options=options, option_sources=sources)

    def document(self, doc: Any, index: int, seen_bids: set[str]) -> OaksDocument:
        record = f"doc #{index}"
        doc = self.obj(doc, record, "document")
        meta = self.obj(doc.get("meta"), record, "meta")
        bid = self.string(meta.get("bid"), record, "bid")
        record = f"doc {bid}"
        if bid in seen_bids:
            raise self.fail(record, "bid", "duplicate document bid")
        seen_bids.add(bid)
        n = meta.get("num_chunks")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise self.fail(record, "num_chunks", f"must be a positive integer, got {n!r}")
        num_qas = meta.get("num_qas")
        if num_qas is not None and (not isinstance(num_qas, int) or isinstance(num_qas, bool)
                                    or num_qas < 0):
            raise self.fail(record, "num_qas", f"must be a non-negative integer, got {num_qas!r}")
        title = meta.get("title")
        author = meta.get("author")
        if title is not None:
            title = self.string(title, record, "title", allow_empty=True)
        if author is not None:
            author = self.string(author, record, "author", allow_empty=True)
        data = self.obj(doc.get("data"), record, "data")
        chunks = self.obj(data.get("chunks"), record, "chunks")
        if len(chunks) != n:
            raise self.fail(record, "num_chunks", f"is {n} but chunks holds {len(chunks)} entries")
        self.chunk_keys(chunks, n, record, "chunks", "text", complete=True)
        texts = tuple(self.string(chunks[str(k)], record, "chunks", allow_empty=True)
                      for k in range(n))
        facts: tuple[tuple[str, ...], ...] | None = None
        if "facts" in data:
            raw = self.obj(data["facts"], record, "facts")
            self.chunk_keys(raw, n, record, "facts", "facts", complete=False)
            facts = tuple(self.string_list(raw[str(k)], record, "facts", f"facts of chunk {k}")
                          if str(k) in raw else () for k in range(n))
        qas = self.obj(data.get("qas"), record, "qas")
        questions = tuple(self.question(text, entry, bid, n) for text, entry in qas.items())
        return OaksDocument(bid=bid, chunks=texts, questions=questions, facts=facts,
                            title=title, author=author)


def _reject(constant: str) -> Any:
    raise ValueError(constant)


def _parse(raw: bytes, name: str) -> Any:
    """The file's JSON as :func:`clstream.core.jsonio.loads_json_bytes` reads it. The common
    case (valid, finite, shallow) takes one parse and one walk in C over flat containers; any
    doubt (a parse error, a rejected constant, a float of 2**63 or more, deep nesting) reads
    the file again through the strict reader, which raises its own error."""
    text = decode_utf8(raw, name)
    if text.strip():
        try:
            value = json.loads(text, object_pairs_hook=_pairs_hook, parse_constant=_reject)
        except (ValueError, RecursionError):
            pass
        else:
            if isinstance(value, dict | list) and plain_json(value):
                return value
    return loads_json_bytes(raw, name, object_pairs_hook=_pairs_hook)


def load_oaks(path: str | Path) -> OaksDataset:
    """Read and validate an OAKS file; raises DataError naming file, record and field."""
    name = str(path)
    raw = read_file_bytes(path, name)
    top = _parse(raw, name)
    checker = _Checker(name)
    if not isinstance(top, list):
        raise checker.fail(None, None, f"top level must be an array of documents, "
                                       f"got {_kind(top)}")
    if not top:
        raise checker.fail(None, None, "the file holds no documents")
    seen: set[str] = set()
    documents = tuple(checker.document(doc, i, seen) for i, doc in enumerate(top))
    return OaksDataset(path=name, sha256=hashlib.sha256(raw).hexdigest(), documents=documents)


def to_json(docs: OaksDataset | Sequence[OaksDocument]) -> list[dict[str, Any]]:
    """Documents in the published JSON shape; MC golds as the option text, others as lists."""
    documents = docs.documents if isinstance(docs, OaksDataset) else docs
    out: list[dict[str, Any]] = []
    for d in documents:
        meta: dict[str, Any] = {"bid": d.bid, "num_chunks": d.num_chunks,
                                "num_qas": len(d.questions)}
        if d.title is not None:
            meta["title"] = d.title
        if d.author is not None:
            meta["author"] = d.author
        data: dict[str, Any] = {"chunks": {str(k): c for k, c in enumerate(d.chunks)}}
        if d.facts is not None:
            data["facts"] = {str(k): list(f) for k, f in enumerate(d.facts)}
        qas: dict[str, Any] = {}
        for q in d.questions:
            if q.text in qas:
                raise ValueError(f"document {d.bid} has the question text {q.text!r} twice")
            entry: dict[str, Any] = {
                "question_id": q.question_id,
                "chunk_to_answer": {str(k): (g[0] if q.is_mc else list(g))
                                    for k, g in enumerate(q.golds)},
            }
            if q.question_type is not None:
                entry["question_type"] = q.question_type
            if q.options:
                entry["options"] = list(q.options)
            if q.option_sources is not None:
                entry["option_sources"] = _plain(q.option_sources)
            qas[q.text] = entry
        data["qas"] = qas
        out.append({"meta": meta, "data": data})
    return out


def serialize(docs_json: list[dict[str, Any]]) -> bytes:
    """The canonical bytes of a JSON document list."""
    return (json.dumps(docs_json, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_oaks_json(docs_json: list[dict[str, Any]], path: str | Path) -> str:
    """Write documents already in JSON shape, atomically (a failure leaves no partial file and
    raises a one-line :class:`WriteError`); returns the sha256 of the bytes written."""
    raw = serialize(docs_json)
    write_atomic(path, raw)
    return hashlib.sha256(raw).hexdigest()


def dump_oaks(docs: OaksDataset | Sequence[OaksDocument], path: str | Path) -> str:
    """Write documents in the published format; returns the sha256 of the bytes written."""
    return write_oaks_json(to_json(docs), path)
