"""Chunked summary (ImprintBench §3.1 "Summarization", Tables 1-3, 12, 13; docs/imprint.md §8 "Chunked
Summary"): the corpus is packed into chunks, each chunk summarised once, and the summaries,
oldest first, are the memory shown before every question.

* Packing: documents in the order observed (chronological, as the protocol feeds them) are
  packed greedily into chunks of at most ``chunk`` tokens (the paper: 32,768); a document
  larger than a chunk is cut into pieces at line (else word) boundaries first. Under
  supervision Q or C+Q the training pairs are packed and summarised the same way (the paper
  only labels those rows; this is the reading taken here).
* Summarising: each chunk becomes one request (stage ``summary``) asking for about ``tokens``
  tokens (the paper: 2048, 1024, 512), with at most 1.5 x target completion tokens; the reply
  is then cut to 1.25 x target tokens (its start kept). ``per_doc=true`` is the paper's
  per-document variant (Table 13): every document is its own chunk, summarised to the same
  nominal ratio ``chunk / target`` of its own length (at least :data:`MIN_DOC_TARGET` tokens,
  at most ``target``) -- the paper gives no per-document budget, so this is our reading.
* When: in :meth:`ChunkedSummary.finalize`, once the corpus is complete (the
  :class:`~clstream.core.contracts.Finalizing` part), all chunks in one ``generate`` call so a
  server can run them concurrently. Observing only packs. When a call fails, the summaries
  of the chunks before it are kept and the rest stays pending for the next finalize.
* Showing: the summaries as tagged passages (one per chunk, numbered in order) under a header.
  On protocols with no finalize step (OAKS, SeqMem, CL-Bench) nothing is ever summarised and
  the method shows nothing: the memory-free baseline there.

The summariser (``summarizer``): '' (default) is the system's own model; a model spec as
``--model`` takes it (``openai:gpt-4.1-mini``, ``vllm:/path``) builds that model through the
registry, with backend settings in ``summarizer_options`` (``base_url=...;api_key_env=...``) --
the paper summarises with an API model, not the backbone. Tokens are counted with the
summariser's tokenizer (it is the summariser that reads the chunk and writes the summary).
``summarizer=extractive`` is a deterministic stand-in, **not a faithful reproduction**: no model
is called, and each chunk's "summary" is sentences selected round-robin across its documents
(first sentences first) up to the target, each document's under its title and date. It exists
for offline tests and as a labelled lower reference; runs using it say so in ``describe()``.

The snapshot holds the summaries and the pending documents, so a resumed run never repeats a
summarising call.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.contracts import Model, Tokenizer
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.registry import canonical_component, resolve
from clstream.core.specs import ComponentSpec, parse_model_spec
from clstream.core.types import GenerationRequest, GenerationResult, Message, Query
from clstream.models.tokenizers import longest_prefix
from clstream.systems import corpus_prompts
from clstream.systems.base import SNAPSHOT, snapshot_error, staged
from clstream.systems.oracle import InContextMethod
from clstream.systems.passages import passage_of

EXTRACTIVE = "extractive"
COMPLETION_FACTOR = 1.5  # max completion tokens per summary, x target (Table 12)
CAP_FACTOR = 1.25  # hard cap on a kept summary, x target (Table 12)
MIN_DOC_TARGET = 32  # per-document variant: the smallest budget a summary gets

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_HEADER_LINE = re.compile(r"^(title|date):\s*(.*)$", re.IGNORECASE)


# --- helpers shared with the memory scaffold -----------------------------------------------


SAME_MODEL = "same"  # a helper-model param naming the system's own model


def helper_model(spec: str, options: str, own: Model, owner: str) -> Model:
    """The model a method uses for its own calls: ``own`` when ``spec`` is ``same``, else the model
    ``spec`` names (as ``--model`` writes it), built through the registry with the backend
    settings in ``options`` (``key=value`` pairs separated by ``;``)."""
    if spec == SAME_MODEL:
        if options:
            raise SpecError(f"{owner}: backend options given without a model spec")
        return own
    try:
        component = canonical_component("model", parse_model_spec(spec))
        settings = dict(ComponentSpec.parse(f"x:{options.replace(';', ',')}",
                                            f"{owner} options").args) if options else {}
    except SpecError as exc:
        raise SpecError(f"{owner}: {exc}") from None
    cls = resolve("model", component.name)
    try:
        return cls(**component.args, **settings)
    except TypeError as exc:
        raise SpecError(f"{owner}: model {spec!r}: {exc}") from None


def truncate_right(text: str, budget: int, tokenizer: Tokenizer) -> str:
    """The longest prefix of ``text`` (cut at whitespace when possible) with at most
    ``budget`` tokens."""
    if tokenizer.count(text) <= budget:
        return text
    lo = longest_prefix(text, budget, tokenizer.count)
    cut = text[:lo]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 and lo < len(text) and not text[lo].isspace() else cut
            ).rstrip()


def sentences_of(text: str) -> list[str]:
    """The sentences of a text's lines (blank lines skipped), in order."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def split_document(text: str, limit: int, tokenizer: Tokenizer) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` tokens at line boundaries, a line longer
    than that at word boundaries (one piece when it fits)."""
    if tokenizer.count(text) <= limit:
        return [text]
    units: list[str] = []
    for line in text.splitlines():
        if tokenizer.count(line) <= limit:
            units.append(line)
            continue
        words, current = line.split(), ""
        for word in words:
            joined = f"{current} {word}" if current else word
            if current and tokenizer.count(joined) > limit:
                units.append(current)
                joined = word
            current = joined
        if current:
            units.append(current)
    pieces: list[str] = []
    group: list[str] = []
    used = 0
    for unit in units:
        cost = tokenizer.count(unit) + 1
        if group and used + cost > limit:
            pieces.append("\n".join(group))
            group, used = [], 0
        group.append(unit)
        used += cost
    if group:
        pieces.append("\n".join(group))
    return [p for p in pieces if p.strip()]


# --- the method ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """A document (or a piece of one) observed and not summarised yet."""

    doc_id: str
    text: str


@dataclass(frozen=True)
class Summary:
    """One chunk's summary: the documents it covers, their tokens, its budget and text."""

    doc_ids: tuple[str, ...]
    source_tokens: int
    target: int
    text: str
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {"doc_ids": list(self.doc_ids), "source_tokens": self.source_tokens,
                "target": self.target, "text": self.text, "truncated": self.truncated}

    @classmethod
    def from_json(cls, item: Any, at: int) -> Summary:
        ok = (isinstance(item, dict) and isinstance(item.get("doc_ids"), list)
              and all(isinstance(d, str) for d in item["doc_ids"])
              and all(isinstance(item.get(k), int) and not isinstance(item.get(k), bool)
                      for k in ("source_tokens", "target"))
              and isinstance(item.get("text"), str) and isinstance(item.get("truncated"), bool))
        if not ok:
            raise DataError(SNAPSHOT, at, "summaries", "expected {doc_ids: [str], source_tokens: "
                            "int, target: int, text: str, truncated: bool}")
        return cls(tuple(item["doc_ids"]), item["source_tokens"], item["target"], item["text"],
                   item["truncated"])


@dataclass(frozen=True)
class Chunk:
    """Documents packed together for one summarising call."""

    docs: tuple[Pending, ...]
    tokens: int
    target: int

    @property
    def text(self) -> str:
        return "\n\n".join(d.text.strip() for d in self.docs)


class ChunkedSummary(InContextMethod):
    """Chronological chunks of the corpus, each summarised once; the summaries are memory."""

    name = "summary"
    summary = "chronological chunks of the corpus summarised once; the summaries shown"
    params: ClassVar[dict[str, Param]] = {
        "tokens": Param(2048, "summary budget per chunk in tokens (the paper's targets: 2048, "
                        "1024, 512)", minimum=1),
        "chunk": Param(32768, "tokens packed into one chunk", minimum=1),
        "per_doc": Param(False, "one summary per document (Table 13) instead of per chunk"),
        "summarizer": Param(SAME_MODEL, "model writing the summaries: 'same' = the system's model, a "
                            "model spec (openai:<name>), or 'extractive' (a non-faithful "
                            "offline stand-in)"),
        "summarizer_options": Param("", "backend settings of the summarizer model, "
                                    "key=value separated by ';'"),
    }
    replayable: ClassVar[bool] = False

    def _configure(self) -> None:
        spec = self.args["summarizer"]
        self.extractive = spec == EXTRACTIVE
        if self.extractive and self.args["summarizer_options"]:
            raise SpecError(f"system {self.name!r}: the extractive stand-in takes no options")
        self.summarizer = self.model if self.extractive else helper_model(
            spec, self.args["summarizer_options"], self.model,
            f"system {self.name!r} summarizer")

    @property
    def tokenizer(self) -> Tokenizer:
        return self.summarizer.tokenizer

    # --- memory ----------------------------------------------------------------------------

    def _empty(self) -> None:
        self._pending: list[Pending] = []
        self._summaries: list[Summary] = []

    async def observe(self, event: Event) -> list[GenerationResult]:
        passage = passage_of(event, len(self._pending))
        pieces = split_document(passage.text, self.args["chunk"], self.tokenizer)
        for n, piece in enumerate(pieces):
            doc_id = passage.source if len(pieces) == 1 else f"{passage.source}#{n + 1}"
            self._pending.append(Pending(doc_id, piece))
        return []

    def _target_of(self, tokens: int) -> int:
        target: int = self.args["tokens"]
        if not self.args["per_doc"]:
            return target
        chunk: int = self.args["chunk"]
        nominal = math.ceil(tokens * target / chunk)
        return min(target, max(MIN_DOC_TARGET, nominal))

    def chunks(self) -> list[Chunk]:
        """The pending documents packed into chunks (see the module docstring)."""
        out: list[Chunk] = []
        current: list[Pending] = []
        used = 0
        limit = self.args["chunk"]
        for doc in self._pending:
            cost = self.tokenizer.count(doc.text) + 1
            if current and (self.args["per_doc"] or used + cost > limit):
                out.append(Chunk(tuple(current), used, self._target_of(used)))
                current, used = [], 0
            current.append(doc)
            used += cost
        if current:
            out.append(Chunk(tuple(current), used, self._target_of(used)))
        return out

    async def finalize(self) -> list[GenerationResult]:
        """Summarise every pending chunk; returns the summarising calls (none when extractive
        or when nothing is pending)."""
        chunks = self.chunks()
        if not chunks:
            return []
        if self.extractive:
            for chunk in chunks:
                self._keep(chunk, extractive_summary(chunk, self.tokenizer))
            self._pending = []
            return []
        first = len(self._summaries)
        requests = [self._summary_request(chunk, first + n) for n, chunk in enumerate(chunks)]
        results = await self._generate(requests, self.summarizer)
        done = 0
        for chunk, result in zip(chunks, results, strict=True):
            if not result.ok or not result.samples:
                break
            self._keep(chunk, result.samples[0].text)
            done += len(chunk.docs)
        self._pending = self._pending[done:]
        return [staged(r, "summary") for r in results]

    def _summary_request(self, chunk: Chunk, number: int) -> GenerationRequest:
        messages = (Message(role="system", content=corpus_prompts.SUMMARY_SYSTEM),
                    Message(role="user", content=corpus_prompts.SUMMARY_PROMPT.format(
                        target=chunk.target, documents=chunk.text)))
        return self._seeded_request(f"summary/{number}", messages, stage="summary", n=1,
                                    max_tokens=math.ceil(COMPLETION_FACTOR * chunk.target))

    def _keep(self, chunk: Chunk, text: str) -> None:
        cap = math.floor(CAP_FACTOR * chunk.target)
        kept = truncate_right(text.strip(), cap, self.tokenizer)
        self._summaries.append(Summary(tuple(d.doc_id for d in chunk.docs), chunk.tokens,
                                       chunk.target, kept, kept != text.strip()))

    @property
    def summaries(self) -> list[Summary]:
        return list(self._summaries)

    # --- answering -------------------------------------------------------------------------

    def _sections(self, query: Query) -> list[str]:
        shown = [(n, s.text) for n, s in enumerate(self._summaries) if s.text.strip()]
        if not shown:
            return []
        return [layout.passages_section(shown, corpus_prompts.SUMMARIES_HEADER)]

    # --- snapshots -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {"summaries": [s.to_json() for s in self._summaries],
                "pending": [{"doc_id": d.doc_id, "text": d.text} for d in self._pending]}

    def restore(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict):
            raise snapshot_error("summaries", "expected an object")
        items, pending = state.get("summaries"), state.get("pending")
        if not isinstance(items, list):
            raise snapshot_error("summaries", "expected a list of summaries")
        if not isinstance(pending, list) or not all(
                isinstance(d, dict) and isinstance(d.get("doc_id"), str)
                and isinstance(d.get("text"), str) for d in pending):
            raise snapshot_error("pending", "expected a list of {doc_id: str, text: str}")
        self._summaries = [Summary.from_json(item, at) for at, item in enumerate(items)]
        self._pending = [Pending(d["doc_id"], d["text"]) for d in pending]

    def _described(self) -> dict[str, Any]:
        summarizer = ({"name": EXTRACTIVE, "note": corpus_prompts.EXTRACTIVE_LABEL}
                      if self.extractive else self.summarizer.describe())
        return {**super()._described(), "summarizer": summarizer}


def document_parts(text: str) -> tuple[str, list[str]]:
    """A document's heading (title and date, from its ``Title:``/``Date:`` lines) and the
    sentences of the rest."""
    title, date = "", ""
    body: list[str] = []
    for line in text.splitlines():
        m = _HEADER_LINE.match(line.strip())
        if m and not body:
            if m.group(1).lower() == "title":
                title = m.group(2).strip()
            else:
                date = m.group(2).strip()
            continue
        body.append(line)
    heading = f"{title} ({date})" if title and date else title or date
    return heading, sentences_of("\n".join(body))


def extractive_summary(chunk: Chunk, tokenizer: Tokenizer) -> str:
    """The non-faithful stand-in (module docstring): sentences taken round-robin across the
    chunk's documents -- every first sentence, then every second, ... -- while they fit the
    target, shown per document in order under its heading."""
    parts = [document_parts(d.text) for d in chunk.docs]
    taken: list[list[str]] = [[] for _ in parts]
    used = 0
    open_docs = [i for i, (_, sents) in enumerate(parts) if sents]
    depth = 0
    while open_docs:
        still = []
        for i in open_docs:
            sentence = parts[i][1][depth]
            cost = tokenizer.count(sentence) + 1 + (tokenizer.count(parts[i][0]) + 1
                                                    if not taken[i] else 0)
            if used + cost > chunk.target:
                continue  # this document is done; shorter sentences elsewhere may still fit
            taken[i].append(sentence)
            used += cost
            if depth + 1 < len(parts[i][1]):
                still.append(i)
        open_docs = still
        depth += 1
    lines = []
    for (heading, _), chosen in zip(parts, taken, strict=True):
        if chosen:
            body = " ".join(chosen)
            lines.append(f"{heading}: {body}" if heading else body)
    return "\n".join(lines)
