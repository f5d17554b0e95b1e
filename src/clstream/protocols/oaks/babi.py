"""OAKS-BABI: procedural generation of streaming-knowledge documents (docs/oaks.md §6).

Why: the paper's OAKS-B (Appendix B.1.2, Algorithm 1) interleaves bAbI world facts into long
distractor text, cuts it into 2k-token chunks and asks, at every chunk, questions whose answers
change along the stream. This module rebuilds that pipeline from a seed, offline: a world is
simulated (:mod:`oaks_babi_world`), its facts are spread over the chunks (about 1.4 per chunk,
some chunks with none, matching the paper's ~87 facts over 65 chunks), every Table 8 template is
filled over the world's entities and its gold computed after each chunk
(:mod:`oaks_babi_questions`), and only questions with at least two answer phases are kept
(Algorithm 1 keeps CountChanges(T) > 0: one change, e.g. Unknown -> kitchen, is enough).

Every question family (tracking, counting, bridge, comparison) should appear however small the
stream. A document whose facts leave a family without a changing question is simulated again
with more facts per chunk (no empty chunks, up to a few more facts each, within the chunk's
token budget); if a family is still absent from the whole stream, or ``max_questions`` leaves
no room for it, a warning on stderr names the family and the reason.

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
import sys
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
    count_phases,
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
MIN_PHASES = 2  # keep questions whose answer changes at least once (docs/oaks.md §6)
DENSER_PLANS = 6  # fact plans tried after the paper's density when a family is missing
_FACT_TOKENS = 21  # a fact sentence costs at most about this many approx-v1 tokens
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
    if chunks < MIN_PHASES:
        raise SpecError(f"oaks-babi: chunks must be >= {MIN_PHASES} so that an answer can "
                        f"change, got {chunks}")
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
    """docs/oaks.md §5.7 OAKS-B subsets by phases: 0 = sparse (<= 3), 1 = moderate (4-5), 2 = frequent."""
    phases = count_phases(golds)
    return 0 if phases <= 3 else 1 if phases <= 5 else 2


def _select(kept: list[tuple[Question, list[Gold]]], cap: int, rng: random.Random,
            first_family: int = 0) -> list[tuple[Question, list[Gold]]]:
    """Up to ``cap`` questions, round-robin over the four types, then templates, then subsets.

    Interleaving the change-frequency subsets keeps frequent-change questions from being
    crowded out by the more numerous sparse ones. The round starts at family ``first_family``
    (documents rotate it when ``cap`` is smaller than the number of families).
    """
    queues = []
    start = first_family % len(QUESTION_TYPES)
    for family in QUESTION_TYPES[start:] + QUESTION_TYPES[:start]:
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


def _plan(chunks: int, level: int, chunk_tokens: int, rng: random.Random) -> list[int]:
    """Facts per chunk. Level 0 is the paper's density (30% of chunks empty, else 1-3 facts);
    level k > 0 leaves no chunk empty and allows up to 3 + k facts, within the token budget."""
    if level == 0:
        return [0 if rng.random() < 0.3 else rng.randint(1, 3) for _ in range(chunks)]
    most = max(3, min(3 + level, chunk_tokens // _FACT_TOKENS))
    return [rng.randint(1, most) for _ in range(chunks)]


Timeline = list[tuple[Question, list[Gold]]]


def _facts_and_questions(seed: int, index: int, chunks: int, chunk_tokens: int
                         ) -> tuple[list[list[Event]], Timeline]:
    """The document's events per chunk and its kept questions with their golds.

    The paper's fact density comes first; while a family has no question with two phases, a
    denser plan (its own seeded generator, same world) is tried, and the attempt missing the
    fewest families is kept (the earliest on a tie), so streams that need no help are unchanged.
    """
    world_rng = _rng(seed, index, "world")
    world = build_world(world_rng, filler_vocabulary())
    candidates = enumerate_questions(world)
    best: tuple[int, list[list[Event]], Timeline] | None = None
    for level in range(DENSER_PLANS + 1):
        rng = world_rng if level == 0 else _rng(seed, index, f"world/denser{level}")
        plan = _plan(chunks, level, chunk_tokens, rng)
        events = simulate(world, sum(plan), rng)
        by_chunk: list[list[Event]] = []
        start = 0
        for n in plan:
            by_chunk.append(events[start:start + n])
            start += n
        kept = [(q, g) for q, g in zip(candidates, timelines(candidates, by_chunk), strict=True)
                if count_phases(g) >= MIN_PHASES]
        missing = len(set(QUESTION_TYPES) - {q.family for q, _ in kept})
        if best is None or missing < best[0]:
            best = (missing, by_chunk, kept)
        if not missing:
            break
    assert best is not None
    return best[1], best[2]


def _document(seed: int, index: int, chunks: int, chunk_tokens: int, max_questions: int,
              shared_source: _Source | None) -> tuple[dict[str, Any], set[str]]:
    """One document in JSON shape, and the families that had a question before the cap."""
    by_chunk, kept = _facts_and_questions(seed, index, chunks, chunk_tokens)
    surface_rng = _rng(seed, index, "surface")
    facts = [[render_fact(e, surface_rng) for e in evs] for evs in by_chunk]

    # A cap below the number of families: document i starts where document i-1 stopped.
    rotate = index * max_questions if max_questions < len(QUESTION_TYPES) else 0
    chosen = _select(kept, max_questions, _rng(seed, index, "questions"), rotate)
    bid = f"babi-s{seed}-d{index}"
    if not chosen:
        raise SpecError(f"oaks-babi: document {bid} has no question whose answer changes "
                        f"over {chunks} chunks; use more chunks")

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
    }, {q.family for q, _ in kept}


def missing_families(documents: Sequence[Mapping[str, Any]], available: set[str], chunks: int,
                     max_questions: int) -> list[str]:
    """One line per question family absent from the generated stream, with the reason."""
    present = {entry.get("question_type") for doc in documents
               for entry in doc["data"]["qas"].values()}
    lines = []
    for family in QUESTION_TYPES:
        if family in present:
            continue
        if family in available:
            why = (f"a cap of {max_questions} questions per document (--max-questions) "
                   f"leaves no room for it; the {len(QUESTION_TYPES)} families need "
                   f"{len(QUESTION_TYPES)}, or more documents")
        else:
            why = (f"no {family} question's answer changes over {chunks} chunks, even with "
                   f"more facts per chunk; use more chunks")
        lines.append(f"oaks-babi: the stream has no {family} question: {why}")
    return lines


def generate_oaks_babi(seed: int, docs: int = 2, chunks: int = 20, chunk_tokens: int = 2000,
                       haystack_files: Sequence[str | Path] | None = None,
                       max_questions: int = 40) -> list[dict[str, Any]]:
    """OAKS-BABI documents in the published JSON shape (docs/oaks.md §3.1), reproducible from ``seed``.

    ``haystack_files``: UTF-8 text files whose sentences replace the procedural distractor
    prose, used in order across all documents and cycled when exhausted.
    Raises SpecError for invalid arguments or a document with no question whose answer
    changes. A question family absent from the whole stream is named on stderr with the reason.
    """
    _check_args(seed, docs, chunks, chunk_tokens, max_questions)
    shared: _Source | None = FileSource(read_haystack(haystack_files)) if haystack_files else None
    documents: list[dict[str, Any]] = []
    available: set[str] = set()
    for i in range(docs):
        document, families = _document(seed, i, chunks, chunk_tokens, max_questions, shared)
        documents.append(document)
        available |= families
    for line in missing_families(documents, available, chunks, max_questions):
        print(f"clstream: warning: {line}", file=sys.stderr)
    return documents


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
