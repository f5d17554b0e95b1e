"""OAKS-BABI: procedural generation of streaming-knowledge documents (SPECS §1.5).

Why: the paper's OAKS-B (Appendix B.1.2, Algorithm 1) interleaves bAbI world facts into long
distractor text, cuts it into 2k-token chunks and asks, at every chunk, questions whose answers
change along the stream. This module rebuilds that pipeline from a seed, offline: a world is
simulated (:mod:`oaks_babi_world`), its facts are spread over the chunks (about 1.4 per chunk,
some chunks with none, matching the paper's ~87 facts over 65 chunks), every Table 8 template is
filled over the world's entities and its gold computed after each chunk
(:mod:`oaks_babi_questions`), and only questions whose gold changes at least twice are kept.

Each chunk is built to the token budget with ``approx-v1`` counts: its facts first, then
distractor sentences while they fit, with the facts placed at random points among them.
Reading chosen where the paper splits one long text: chunks are filled one by one, so the
document has exactly the requested number of chunks and each records the facts it introduced.

Everything derives from ``random.Random`` instances seeded from (seed, document, purpose) by
:func:`clstream.core.specs.derive_seed`, so the same arguments give byte-identical files and
changing the haystack does not change the world, facts or questions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from clstream.core.errors import DataError, SpecError
from clstream.core.specs import derive_seed
from clstream.models.tokenizers import ApproxTokenizer, approx_tokenizer
from clstream.protocols.oaks.babi_questions import (
    QUESTION_TYPES,
    TEMPLATES,
    Gold,
    Question,
    count_changes,
    enumerate_questions,
    parse_question,
    timelines,
)
from clstream.protocols.oaks.babi_world import (
    Event,
    build_world,
    parse_fact,
    render_fact,
    simulate,
)
from clstream.protocols.oaks.haystack import (
    FileSource,
    ProceduralSource,
    filler_vocabulary,
    read_haystack,
)
from clstream.protocols.oaks.loader import write_oaks_json

MIN_CHUNK_TOKENS = 64  # room for three fact sentences and some distractor text
MIN_CHANGES = 2
_SKIP_TRIES = 8  # fresh grammar sentences tried when the next one does not fit


class _Source(Protocol):
    """What chunk assembly needs from a haystack (see :mod:`haystack`)."""

    def peek(self) -> str: ...

    def advance(self) -> None: ...

    def skippable(self) -> bool: ...


def _rng(seed: int, doc: int, purpose: str) -> random.Random:
    return random.Random(derive_seed(seed, f"oaks-babi/doc{doc}/{purpose}"))


def _check_args(seed: int, docs: int, chunks: int, chunk_tokens: int, max_questions: int) -> None:
    for name, value in (("seed", seed), ("docs", docs), ("chunks", chunks),
                        ("chunk_tokens", chunk_tokens), ("max_questions", max_questions)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise SpecError(f"oaks-babi: {name} must be an integer, got {value!r}")
    if docs < 1:
        raise SpecError(f"oaks-babi: docs must be >= 1, got {docs}")
    if chunks < MIN_CHANGES + 1:
        raise SpecError(f"oaks-babi: chunks must be >= {MIN_CHANGES + 1} so that answers can "
                        f"change {MIN_CHANGES} times, got {chunks}")
    if chunk_tokens < MIN_CHUNK_TOKENS:
        raise SpecError(f"oaks-babi: chunk_tokens must be >= {MIN_CHUNK_TOKENS}, "
                        f"got {chunk_tokens}")
    if max_questions < 1:
        raise SpecError(f"oaks-babi: max_questions must be >= 1, got {max_questions}")


def _interleave(lists: Sequence[Sequence[Any]]) -> list[Any]:
    out: list[Any] = []
    for i in range(max((len(x) for x in lists), default=0)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


def _change_bin(golds: list[Gold]) -> int:
    """SPECS §1.4 OAKS-B subsets: 0 = sparse (2-3 changes), 1 = moderate (4-5), 2 = frequent."""
    changes = count_changes(golds)
    return 0 if changes <= 3 else 1 if changes <= 5 else 2


def _select(kept: list[tuple[Question, list[Gold]]], cap: int, rng: random.Random
            ) -> list[tuple[Question, list[Gold]]]:
    """Up to ``cap`` questions, round-robin over the four types, then templates, then subsets.

    Interleaving the change-frequency subsets keeps frequent-change questions from being
    crowded out by the more numerous sparse ones.
    """
    queues = []
    for family in QUESTION_TYPES:
        groups = []
        for tpl in TEMPLATES:
            if tpl.family != family:
                continue
            bins: list[list[tuple[Question, list[Gold]]]] = [[], [], []]
            for qg in kept:
                if qg[0].template is tpl:
                    bins[_change_bin(qg[1])].append(qg)
            for b in bins:
                rng.shuffle(b)
            if any(bins):
                groups.append(_interleave([bins[2], bins[1], bins[0]]))
        rng.shuffle(groups)
        queues.append(_interleave(groups))
    return _interleave(queues)[:cap]


def _assemble_chunk(facts: Sequence[str], source: _Source, budget: int, rng: random.Random,
                    tok: ApproxTokenizer) -> str:
    """Facts plus distractor sentences up to ``budget`` tokens, laid out in paragraphs.

    Sentences are joined by whitespace, which costs no tokens, so the chunk's count is the sum
    of its sentences' counts. A distractor sentence longer than the whole budget stands alone
    (with the chunk's facts) rather than being cut.
    """
    used = sum(tok.count(f) for f in facts)
    filler: list[str] = []
    tries = 0
    while True:
        sentence = source.peek()
        cost = tok.count(sentence)
        if used + cost <= budget:
            filler.append(sentence)
            used += cost
            source.advance()
            tries = 0
        elif not filler and cost > budget:
            filler.append(sentence)  # longer than any chunk: it stands alone
            source.advance()
            break
        elif source.skippable() and tries < _SKIP_TRIES:
            source.advance()
            tries += 1
        else:
            break
    slots = sorted(rng.randint(0, len(filler)) for _ in facts)
    pieces: list[str] = []
    fi = 0
    for pos in range(len(filler) + 1):
        while fi < len(facts) and slots[fi] == pos:
            pieces.append(facts[fi])
            fi += 1
        if pos < len(filler):
            pieces.append(filler[pos])
    paragraphs: list[str] = []
    while pieces:
        size = rng.randint(3, 7)
        paragraphs.append(" ".join(pieces[:size]))
        pieces = pieces[size:]
    return "\n\n".join(paragraphs)


def _document(seed: int, index: int, chunks: int, chunk_tokens: int, max_questions: int,
              shared_source: _Source | None) -> dict[str, Any]:
    world_rng = _rng(seed, index, "world")
    world = build_world(world_rng, filler_vocabulary())
    plan = [0 if world_rng.random() < 0.3 else world_rng.randint(1, 3) for _ in range(chunks)]
    events = simulate(world, sum(plan), world_rng)
    by_chunk: list[list[Event]] = []
    start = 0
    for n in plan:
        by_chunk.append(events[start:start + n])
        start += n
    surface_rng = _rng(seed, index, "surface")
    facts = [[render_fact(e, surface_rng) for e in evs] for evs in by_chunk]

    candidates = enumerate_questions(world)
    kept = [(q, g) for q, g in zip(candidates, timelines(candidates, by_chunk), strict=True)
            if count_changes(g) >= MIN_CHANGES]
    chosen = _select(kept, max_questions, _rng(seed, index, "questions"))
    bid = f"babi-s{seed}-d{index}"
    if not chosen:
        raise SpecError(f"oaks-babi: document {bid} has no question whose answer changes "
                        f"{MIN_CHANGES} times over {chunks} chunks; use more chunks")

    text_rng = _rng(seed, index, "text")
    source = shared_source if shared_source is not None else ProceduralSource(text_rng)
    tok = approx_tokenizer()
    texts = [_assemble_chunk(f, source, chunk_tokens, text_rng, tok) for f in facts]
    qas: dict[str, Any] = {}
    for i, (q, golds) in enumerate(chosen):
        qas[q.text] = {
            "question_id": f"{bid}_q{i}",
            "question_type": q.family,
            "chunk_to_answer": {str(t): list(g) for t, g in enumerate(golds)},
        }
    return {
        "meta": {"bid": bid, "num_chunks": chunks, "num_qas": len(qas),
                 "title": f"OAKS-BABI world {index} (seed {seed})"},
        "data": {
            "chunks": {str(t): text for t, text in enumerate(texts)},
            "facts": {str(t): f for t, f in enumerate(facts)},
            "qas": qas,
        },
    }


def generate_oaks_babi(seed: int, docs: int = 2, chunks: int = 20, chunk_tokens: int = 2000,
                       haystack_files: Sequence[str | Path] | None = None,
                       max_questions: int = 40) -> list[dict[str, Any]]:
    """OAKS-BABI documents in the published JSON shape (SPECS §1.1), reproducible from ``seed``.

    ``haystack_files``: UTF-8 text files whose sentences replace the procedural distractor
    prose, used in order across all documents and cycled when exhausted.
    Raises SpecError for invalid arguments or a document with no question that changes twice.
    """
    _check_args(seed, docs, chunks, chunk_tokens, max_questions)
    shared: _Source | None = FileSource(read_haystack(haystack_files)) if haystack_files else None
    return [_document(seed, i, chunks, chunk_tokens, max_questions, shared) for i in range(docs)]


def write_oaks_babi(path: str | Path, seed: int, docs: int = 2, chunks: int = 20,
                    chunk_tokens: int = 2000, haystack_files: Sequence[str | Path] | None = None,
                    max_questions: int = 40) -> str:
    """Generate and write an OAKS-BABI file; returns the sha256 of the bytes written."""
    documents = generate_oaks_babi(seed, docs, chunks, chunk_tokens, haystack_files,
                                   max_questions)
    return write_oaks_json(documents, path)


def _field(obj: Any, key: str, kind: type, what: str, source: str, record: str) -> Any:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DataError(source, record, key, f"missing or not {what}")
    return value


def rederive_golds(doc_json: Mapping[str, Any], source: str = "<document>"
                   ) -> dict[str, list[list[str]]]:
    """Every question's gold at every chunk, recomputed from the recorded ``facts`` only.

    Facts are parsed back into events (any surface verb of the four groups), questions back
    into their template and entities; raises DataError naming the first sentence or question
    that cannot be read.
    """
    meta = _field(doc_json, "meta", Mapping, "an object", source, "doc ?")
    record = f"doc {meta.get('bid')}"
    data = _field(doc_json, "data", Mapping, "an object", source, record)
    n = _field(meta, "num_chunks", int, "an integer", source, record)
    facts = _field(data, "facts", Mapping, "an object", source, record)
    qas = _field(data, "qas", Mapping, "an object", source, record)
    by_chunk: list[list[Event]] = []
    for k in range(n):
        sentences = facts.get(str(k), [])
        if not isinstance(sentences, list):
            raise DataError(source, record, "facts", f"facts of chunk {k} must be an array")
        events = []
        for s in sentences:
            ev = parse_fact(s) if isinstance(s, str) else None
            if ev is None:
                raise DataError(source, record, "facts", f"chunk {k}: not a fact sentence: {s!r}")
            events.append(ev)
        by_chunk.append(events)
    ids: list[str] = []
    questions: list[Question] = []
    for text, entry in qas.items():
        qid = str(entry.get("question_id")) if isinstance(entry, Mapping) else "?"
        q = parse_question(text)
        if q is None:
            raise DataError(source, f"{record} question {qid}", "qas",
                            f"{text!r} matches no OAKS-BABI template")
        ids.append(qid)
        questions.append(q)
    golds = timelines(questions, by_chunk)
    return {qid: [list(g) for g in gs] for qid, gs in zip(ids, golds, strict=True)}
