"""The no-context (blind) and with-context filters over generated items (docs/imprint.md §4.7).

ImprintBench keeps a question only when the backbone cannot already answer it without the new
corpus and can answer it with its source (App. D.1 for world news: a blind judge, then a
with-context judge; App. D.2's code "golden" rule: 0/8 blind, 8/8 with the oracle source;
App. D.3's blind check for personas). Here one model, the filter's backbone (not the system
under test), answers every item n times twice -- once with no documents, once with the item's
source documents -- as ONE request of ``n`` samples each, and the deterministic judges of
:mod:`clstream.protocols.imprint.judging` count the correct samples.

Thresholds (project readings, configurable; docs/imprint.md §4.7):

* blind: an open-answer item is dropped when more than ``blind_max_open`` samples are correct
  (default 0: the paper's 0/8 rule); a binary item (judge ``yesno`` or ``choice``, where
  guessing is right half the time or more) when more than ``blind_max_binary`` are (default 6:
  dropped at >= 7/8);
* with context: an item is dropped when fewer than ``ctx_min`` samples are correct (default 1,
  the world-news reading; ``ctx_min=n`` is the code golden rule).

BoundAbs items are never filtered (App. D.1); their counts are still recorded, as the paper
stores retrieval verdicts as difficulty. Items judged ``llm`` are filtered only when an
:class:`~clstream.protocols.imprint.llm_judges.LLMJudge` is given; otherwise they are kept unjudged.
Every kept item records ``filters: {"blind": {"model", "k_correct", "n"}, "ctx": {...}}``; the
manifest's ``config.filters`` records the thresholds and, per family, how many items each
filter removed (``removed: {family: {"blind", "ctx"}}``), as the card does for every audit.
Replies are cached by request hash in a JSON Lines file
(:class:`~clstream.protocols.imprint.llm_judges.ReplyCache`; one ``{"key", "model", "item_id", "samples"}``
record per request), so a re-run with the same model, items, documents and ``n`` makes no
model call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clstream.core import layout
from clstream.core.contracts import Model
from clstream.core.types import GenerationRequest, SamplingParams
from clstream.protocols.imprint.judging import JudgeError, Verdict, judge_deterministic
from clstream.protocols.imprint.llm_judges import LLMJudge, ReplyCache
from clstream.protocols.imprint.prompts import answer_format
from clstream.protocols.imprint.schema import FAMILIES, CorpusDoc, Dataset, Item
from clstream.protocols.imprint.stage_timings import timed

FILTER_VERSION = "imprint-filters-v1"
BINARY_JUDGES: tuple[str, ...] = ("yesno", "choice")
NEVER_FILTERED: tuple[str, ...] = ("BoundAbs",)

BLIND_INSTRUCTIONS = (
    "Answer the question from what you already know. No documents are provided. Give your "
    "best answer; if you have no basis for one, say that you do not know."
)
CONTEXT_INSTRUCTIONS = (
    "Answer the question using the documents shown before it. Each document opens with its "
    "title and date; when documents disagree, the later one holds. If the documents do not "
    "answer the question, say that you do not know."
)


def filter_params(n: int) -> SamplingParams:
    """The paper's decoding (App. C.3: temperature 0.7, top-p 0.95, top-k 20, 4096 new
    tokens), ``n`` samples in one request."""
    return SamplingParams(temperature=0.7, top_p=0.95, top_k=20, max_tokens=4096, n=n)


def document_text(doc: CorpusDoc) -> str:
    """A document as runs show it: ``Title:`` and ``Date:`` lines, then its text."""
    head = "".join(line for line in (f"Title: {doc.title}\n" if doc.title else "",
                                     f"Date: {doc.date}\n" if doc.date else ""))
    return f"{head}\n{doc.text.strip()}" if head else doc.text.strip()


def _block(item: Item) -> str:
    """The question block a run asks (:mod:`clstream.protocols.imprint.prompts`), so the
    filters judge answers written in the format the judges expect."""
    return layout.question_block(item.question.strip(), item.options, answer_format(item))


def blind_request(item: Item, n: int) -> GenerationRequest:
    """The item with no documents."""
    return GenerationRequest(key=f"filter/blind/{item.item_id}", stage="filter",
                             params=filter_params(n),
                             messages=layout.build_messages(BLIND_INSTRUCTIONS, [], _block(item)))


def context_request(item: Item, docs: Sequence[CorpusDoc], n: int) -> GenerationRequest:
    """The item with its source documents, as tagged passages in corpus order."""
    section = layout.passages_section((i, document_text(d)) for i, d in enumerate(docs))
    return GenerationRequest(key=f"filter/ctx/{item.item_id}", stage="filter",
                             params=filter_params(n),
                             messages=layout.build_messages(CONTEXT_INSTRUCTIONS, [section],
                                                            _block(item)))


def request_hash(model_name: str, request: GenerationRequest) -> str:
    """The cache key: sha256 of the model, the messages and the decoding (not the request's
    key, which names the item)."""
    body = {"version": FILTER_VERSION, "model": model_name,
            "messages": [m.model_dump() for m in request.messages],
            "params": request.params.model_dump(mode="json")}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


async def _answers(model: Model, requests: Mapping[str, tuple[str, GenerationRequest]],
                   cache: ReplyCache, batch_size: int) -> tuple[dict[str, list[str]], int]:
    """Sample texts per request hash; ``requests`` maps hash -> (item id, request). Only
    requests missing from the cache are sent; returns the texts and how many were sent."""
    texts: dict[str, list[str]] = {}
    todo: list[tuple[str, str, GenerationRequest]] = []
    for key, (item_id, request) in requests.items():
        hit = cache.get(key)
        samples = hit.get("samples") if hit is not None else None
        if isinstance(samples, list) and len(samples) == request.params.n:
            texts[key] = [str(t) for t in samples]
        else:
            todo.append((key, item_id, request))
    for start in range(0, len(todo), batch_size):
        chunk = todo[start:start + batch_size]
        results = await model.generate([r for _, _, r in chunk])
        records = []
        for (key, item_id, request), result in zip(chunk, results, strict=True):
            if not result.ok or len(result.samples) != request.params.n:
                raise JudgeError(f"filter model {model.name!r} failed on item {item_id!r}: "
                                 f"{result.error or f'{len(result.samples)} samples'}")
            texts[key] = [s.text for s in result.samples]
            records.append({"key": key, "model": model.name, "item_id": item_id,
                            "samples": texts[key]})
        cache.put_many(records)
    return texts, len(todo)


async def _judge(pairs: Sequence[tuple[Item, list[str]]], llm: LLMJudge | None
                 ) -> list[list[Verdict] | None]:
    """Verdicts per (item, samples); None for an ``llm`` item with no judge."""
    out: list[list[Verdict] | None] = []
    llm_pairs: list[tuple[Item, str]] = []
    for item, samples in pairs:
        if item.judge == "llm":
            out.append(None)
            if llm is not None:
                llm_pairs.extend((item, s) for s in samples)
        else:
            out.append([judge_deterministic(item, s) for s in samples])
    if llm is not None and llm_pairs:
        judged = iter(await llm.judge_many(llm_pairs))
        for i, (item, samples) in enumerate(pairs):
            if item.judge == "llm":
                out[i] = [next(judged) for _ in samples]
    return out


def _record(model_name: str, verdicts: list[Verdict] | None, n: int) -> dict[str, Any]:
    correct = None if verdicts is None else sum(v.correct for v in verdicts)
    return {"model": model_name, "k_correct": correct, "n": n}


async def apply_filters(dataset: Dataset, model: Model, *, n: int = 8,
                        blind_max_open: int = 0, blind_max_binary: int = 6, ctx_min: int = 1,
                        cache_path: str | Path | None, llm: LLMJudge | None = None,
                        batch_size: int = 256) -> tuple[Dataset, dict[str, Any]]:
    """The dataset with the items the filters keep (each recording its filter counts), and
    a report: thresholds, per-family counts, the dropped items with their counts, and how
    many requests were sent or served from the cache. Thresholds in the module docstring."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    docs = {d.doc_id: d for d in dataset.corpus}
    order = {d.doc_id: i for i, d in enumerate(dataset.corpus)}
    requests: dict[str, tuple[str, GenerationRequest]] = {}
    keys: list[tuple[str, str]] = []
    for item in dataset.items:
        sources = sorted((docs[d] for d in item.source_doc_ids if d in docs),
                         key=lambda d: order[d.doc_id])
        blind = blind_request(item, n)
        ctx = context_request(item, sources, n)
        blind_key, ctx_key = request_hash(model.name, blind), request_hash(model.name, ctx)
        requests.setdefault(blind_key, (item.item_id, blind))
        requests.setdefault(ctx_key, (item.item_id, ctx))
        keys.append((blind_key, ctx_key))

    with timed("filter_answers", len(dataset.items)):
        texts, sent = await _answers(model, requests, ReplyCache(cache_path, ("samples",)),
                                     batch_size)

    with timed("filter_verdicts", len(dataset.items)) as timing:
        blind_verdicts = await _judge([(i, texts[k[0]]) for i, k in zip(dataset.items, keys,
                                                                        strict=True)], llm)
        ctx_verdicts = await _judge([(i, texts[k[1]]) for i, k in zip(dataset.items, keys,
                                                                      strict=True)], llm)

        kept: list[Item] = []
        dropped: list[dict[str, Any]] = []
        families: dict[str, dict[str, int]] = {}
        for item, bv, cv in zip(dataset.items, blind_verdicts, ctx_verdicts, strict=True):
            tally = families.setdefault(item.family, {"items": 0, "kept": 0, "dropped_blind": 0,
                                                      "dropped_ctx": 0, "exempt": 0,
                                                      "unjudged": 0})
            tally["items"] += 1
            blind_rec, ctx_rec = _record(model.name, bv, n), _record(model.name, cv, n)
            reasons: list[str] = []
            if item.family in NEVER_FILTERED:
                tally["exempt"] += 1
            elif bv is None or cv is None:
                tally["unjudged"] += 1
            else:
                limit = blind_max_binary if item.judge in BINARY_JUDGES else blind_max_open
                if blind_rec["k_correct"] > limit:
                    reasons.append("blind")
                if ctx_rec["k_correct"] < ctx_min:
                    reasons.append("ctx")
            if reasons:
                tally["dropped_" + reasons[0]] += 1
                dropped.append({"item_id": item.item_id, "family": item.family,
                                "reasons": reasons, "blind": blind_rec["k_correct"],
                                "ctx": ctx_rec["k_correct"]})
                continue
            tally["kept"] += 1
            record = {**item.filters, "blind": blind_rec, "ctx": ctx_rec}
            kept.append(item.model_copy(update={"filters": record}))
        timing.kept = len(kept)

    settings = {"version": FILTER_VERSION, "model": model.name, "n": n,
                "blind_max_open": blind_max_open, "blind_max_binary": blind_max_binary,
                "ctx_min": ctx_min, "llm_judge": llm.name if llm is not None else None}
    # The card records what each filter removed per family, as it does for every audit.
    removed = {f: {"blind": families[f]["dropped_blind"], "ctx": families[f]["dropped_ctx"]}
               for f in [*FAMILIES, *sorted(families)] if f in families}
    manifest = dataset.manifest.model_copy(update={"config": {
        **dataset.manifest.config, "filters": {**settings, "removed": removed}}})
    report = {
        **settings,
        "families": {f: families[f] for f in [*FAMILIES, *sorted(families)] if f in families},
        "kept": len(kept),
        "dropped": dropped,
        "requests": len(requests),
        "sent": sent,
        "cache_hits": len(requests) - sent,
    }
    filtered = Dataset(manifest, list(dataset.corpus), list(dataset.qa), kept,
                       list(dataset.ledger))
    return filtered, report


def run_filters(dataset: Dataset, model: Model, **options: Any) -> tuple[Dataset, dict[str, Any]]:
    """:func:`apply_filters` for callers outside an event loop."""
    return asyncio.run(apply_filters(dataset, model, **options))
