"""The paper's LLM stages of the code setting, with any model (ImprintBench App. D.2).

With ``generate imprint --setting code --model M`` the template RefRes and CompRel items of
:func:`~clstream.protocols.imprint.settings.code.dataset.build_code_dataset` go through the
stages the paper runs on them (prompts in this project's words):

1. **RefRes writer**: the model reads the feature's documentation and writes what the
   identifier does as a verb phrase that does not name it; the item asks "which <kind> of
   <library> <description>?" (App. D.2 item 2).
2. **CompRel writer**: the model sees only the masked snippet and the documentation with the
   identifier masked, and writes the question the snippet is asked with (App. D.2 item 3).
3. **Faithfulness validator**: the model checks each written text against the documentation:
   ``fabricated`` (says what the documentation does not support), ``giveaway`` (names the
   identifier or thinly paraphrases its name), ``mismatch`` (describes something else) are
   rejected, only ``faithful`` is kept. A deterministic give-away check runs first (no
   distinctive word of the leaf, :func:`~giveaways.distinctive_words`), and a CompRel question
   that holds its feature's RefRes description is rejected as a repeat.
4. **Golden subset** (CompRel only, as the paper): the model answers each surviving CompRel
   item ``n`` times without context and ``n`` times with the item's feature page
   (:func:`~clstream.protocols.imprint.filters.apply_filters`); kept only at 0/n blind and n/n
   with the page. DirAcq and ImpRel are templates in the paper too; BoundAbs is never filtered.

A feature whose writer reply is unreadable, or whose text the validator rejects, loses that
item (the paper drops it too); every stage counts what it removed, per family, in the
manifest's ``pipeline`` (the dataset card). Replies are cached in the dataset directory keyed
by a hash of (model, messages, decoding), so a rerun makes no model call.

The prompts are environment-action prompts (:func:`clstream.core.layout.action_block`): the
builtin model answers them with the policies of this module (:class:`RefResWriter`,
:class:`CompRelWriter`, :class:`Validator`), registered by the imprint protocol, so the stages
run offline -- reworded descriptions (:mod:`paraphrase`), questions from the masked call, and
a validator that checks give-aways only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clstream.core import layout
from clstream.core.contracts import Model
from clstream.core.environment import Turn
from clstream.core.types import Message
from clstream.protocols.imprint.filters import apply_filters
from clstream.protocols.imprint.schema import Dataset, Item
from clstream.protocols.imprint.settings.code.dataset import MASK, refres_question, summary_line
from clstream.protocols.imprint.settings.code.giveaways import distinctive_words
from clstream.protocols.imprint.settings.code.paraphrase import content_words, reword
from clstream.protocols.imprint.settings.model_calls import CachedCalls, json_object
from clstream.protocols.imprint.stage_timings import timed

CACHE_VERSION = "imprint-code-writer-cache-v1"
REFRES_TASK = "imprint_code_refres_writer"
COMPREL_TASK = "imprint_code_comprel_writer"
VALIDATE_TASK = "imprint_code_validator"
VERDICTS = ("faithful", "fabricated", "giveaway", "mismatch")
_SYSTEM = "You write and check benchmark questions about a Python library's new API."
_FIELD = re.compile(r"^(Library|Kind|Identifier|Version|Candidate): ?(.*)$", re.MULTILINE)

_REFRES_ASK = (
    "Describe what the identifier below does, for a quiz that names it only by this "
    "description. Write a verb phrase in the third person (for a class, a noun phrase) that "
    "follows 'Which <kind> of <library>'. Use your own words: do not copy a sentence of the "
    "documentation, and do not spell the identifier or any word of its name.")
_COMPREL_ASK = (
    f"The code below calls a new API of the library at {MASK}. Write one question that asks "
    f"which identifier {MASK} stands for, grounded in what the code does with it and what the "
    "documentation says. Do not spell the identifier, any word of its name or a close "
    "paraphrase of it.")
_VALIDATE_ASK = (
    "Check the candidate text, written about the identifier below, against its documentation. "
    "Verdict faithful: every claim is supported and the identifier is not given away; "
    "fabricated: it states something the documentation does not support; giveaway: it names "
    "the identifier or thinly paraphrases its name; mismatch: it describes something else.")
_FORMATS = {
    REFRES_TASK: 'Reply with one JSON object: {"description": "..."}',
    COMPREL_TASK: 'Reply with one JSON object: {"question": "..."}',
    VALIDATE_TASK: 'Reply with one JSON object: {"verdict": "faithful|fabricated|giveaway|'
                   'mismatch", "reason": "..."}',
}


def prompt(task: str, ask: str, fields: dict[str, str], body: str, body_label: str) -> str:
    """One stage's prompt: an action block whose observation holds the request, one field a
    line, then the documentation or snippet."""
    lines = [ask, *(f"{k}: {' '.join(v.split())}" for k, v in fields.items()), f"{body_label}:",
             body.strip()]
    return layout.action_block("\n".join(lines), task, _FORMATS[task])


def _fields(observation: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _FIELD.finditer(observation)}


def _section(observation: str, label: str) -> str:
    _, _, rest = observation.partition(f"\n{label}:\n")
    return rest


def giveaway(text: str, leaf: str) -> bool:
    """The text spells the leaf or a distinctive word of it."""
    return leaf.lower() in text.lower() or bool(content_words(text) & {
        w[:-1] if w.endswith("s") and len(w) > 3 else w for w in distinctive_words(leaf)})


# --- the builtin model's side of these prompts ---------------------------------------------------


class RefResWriter:
    """The builtin writer: the documentation's summary reworded through the lexicon."""

    name = REFRES_TASK

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        summary = summary_line(_section(observation, "Documentation"))
        return {"description": (reword(summary) or "") if summary else ""}


class CompRelWriter:
    """The builtin writer: a question from the masked call and its arguments."""

    name = COMPREL_TASK

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        fields = _fields(observation)
        code = _section(observation, "Snippet")
        call = re.search(re.escape(MASK) + r"\(([^()\n]*)\)", code)
        shown = f" (arguments: {call.group(1).strip()})" if call and call.group(1).strip() else ""
        return {"question": f"Which {fields.get('Kind', 'callable')} of "
                            f"{fields.get('Library', 'the library')}, new in release "
                            f"{fields.get('Version', '?')}, does the code below call at "
                            f"{MASK}{shown}?"}


class Validator:
    """The builtin validator: give-aways only (it cannot judge support)."""

    name = VALIDATE_TASK

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        fields = _fields(observation)
        candidate = fields.get("Candidate", "")
        if not candidate.strip():
            return {"verdict": "mismatch", "reason": "empty"}
        if giveaway(candidate, fields.get("Identifier", "")):
            return {"verdict": "giveaway", "reason": "spells a word of the identifier"}
        return {"verdict": "faithful", "reason": "no give-away found"}


async def _ask(calls: CachedCalls, asks: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The JSON object each prompt was answered with (by key); unreadable replies and failed
    requests are left out."""
    texts = await calls.run([calls.greedy(key, "imprint-code-writer", (
        Message(role="system", content=_SYSTEM), Message(role="user", content=text)))
        for key, text in asks.items()])
    return {key: value for key, text in texts.items()
            if (value := json_object(text)) is not None}


# --- the stages ----------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


async def write_code_items(data: Dataset, model: Model, *, cache_path: str | Path,
                           seed: int = 0, golden_n: int = 8,
                           filter_cache: str | Path | None = None) -> Dataset:
    """``data`` (a template code dataset) with RefRes and CompRel items written, validated
    and, for CompRel, cut to the golden subset by ``model``; the card records each stage."""
    docs = {d.doc_id: d for d in data.corpus}
    library = str(data.manifest.config.get("library", "the library"))
    calls = CachedCalls(model, Path(cache_path), seed, version=CACHE_VERSION)
    # what the template build removed (snippet gates, RefRes with no clean description) stays
    before = data.manifest.config.get("pipeline")
    prior = before.get("removed", {}) if isinstance(before, dict) else {}
    removed: dict[str, Counter[str]] = {f: Counter(prior.get(f, {})) for f in ("RefRes", "CompRel")}

    def page(item: Item) -> tuple[dict[str, Any], str]:
        doc = docs[item.source_doc_ids[0]]
        return doc.meta, doc.text.split("Documentation:\n", 1)[-1]

    targets = [i for i in data.items if i.family in ("RefRes", "CompRel")]
    with timed("writer", len(targets)) as timing:
        asks: dict[str, str] = {}
        for item in targets:
            meta, doc = page(item)
            fields = {"Library": library, "Kind": str(meta["kind"]),
                      "Version": str(meta["version"])}
            if item.family == "RefRes":
                asks[item.item_id] = prompt(REFRES_TASK, _REFRES_ASK,
                                            {**fields, "Identifier": str(meta["leaf"])}, doc,
                                            "Documentation")
            else:
                masked_doc = re.sub(rf"\b{re.escape(str(meta['leaf']))}\b", MASK, doc)
                snippet = item.question.split("\n\n", 1)[1]
                asks[item.item_id] = prompt(COMPREL_TASK, _COMPREL_ASK, fields,
                                            f"{masked_doc}\n\nSnippet:\n{snippet}",
                                            "Documentation")
        written = await _ask(calls, asks)

        drafts: dict[str, str] = {}
        for item in targets:
            reply = written.get(item.item_id)
            text = _text(reply.get("description" if item.family == "RefRes" else "question")
                         if reply else None).rstrip("?.").strip()
            leaf = str(page(item)[0]["leaf"])
            if not text:
                removed[item.family]["writer_unreadable"] += 1
            elif giveaway(text, leaf):
                removed[item.family]["giveaway_check"] += 1
            else:
                drafts[item.item_id] = text
        refres_text = {str(page(i)[0]["path"]): drafts[i.item_id] for i in targets
                       if i.family == "RefRes" and i.item_id in drafts}
        checks = {}
        for item in targets:
            if item.item_id not in drafts:
                continue
            meta, doc = page(item)
            if item.family == "CompRel" and refres_text.get(str(meta["path"]), "\0") in drafts[
                    item.item_id]:
                removed["CompRel"]["repeats_refres"] += 1
                del drafts[item.item_id]
                continue
            checks[item.item_id] = prompt(VALIDATE_TASK, _VALIDATE_ASK, {
                "Library": library, "Kind": str(meta["kind"]), "Identifier": str(meta["leaf"]),
                "Candidate": drafts[item.item_id]}, doc, "Documentation")
        timing.kept = len(checks)
    with timed("validator", len(checks)) as timing:
        verdicts = await _ask(calls, checks)

        items: list[Item] = []
        for item in data.items:
            if item.family not in removed:
                items.append(item)
                continue
            if item.item_id not in checks:
                continue
            verdict = _text((verdicts.get(item.item_id) or {}).get("verdict")).lower()
            if verdict != "faithful":
                reason = verdict if verdict in VERDICTS else "unreadable"
                removed[item.family][f"validator_{reason}"] += 1
                continue
            text, meta = drafts[item.item_id], page(item)[0]
            if item.family == "RefRes":
                question = refres_question(str(meta["kind"]), library, text, "reworded")
                update = {"question": question, "meta": {**item.meta, "description": text,
                                                         "written": "model"}}
            else:
                code = item.question.split("\n\n", 1)[1]
                update = {"question": f"{text}? Reply with the identifier only.\n\n{code}",
                          "meta": {**item.meta, "written": "model"}}
            items.append(item.model_copy(update=update))
        timing.kept = len(items) - (len(data.items) - len(targets))

    written_data = Dataset(data.manifest, data.corpus, data.qa, items, data.ledger)
    golden: dict[str, Any] = {"n": golden_n}
    if golden_n > 0:
        comprel = [i for i in items if i.family == "CompRel"]
        with timed("golden_subset", len(comprel), group=True) as timing:
            sub = Dataset(data.manifest, data.corpus, data.qa, comprel, data.ledger)
            kept, report = await apply_filters(sub, model, n=golden_n, blind_max_open=0,
                                               ctx_min=golden_n, cache_path=filter_cache)
            timing.kept = len(kept.items)
        row = report["families"].get("CompRel", {})
        removed["CompRel"]["golden_blind"] += row.get("dropped_blind", 0)
        removed["CompRel"]["golden_oracle"] += row.get("dropped_ctx", 0)
        removed["CompRel"]["golden_unjudged"] += row.get("unjudged", 0)
        kept_ids = {i.item_id: i for i in kept.items}
        items = [kept_ids.get(i.item_id, i) for i in items
                 if i.family != "CompRel" or i.item_id in kept_ids]
        golden.update(sent=report["sent"], cache_hits=report["cache_hits"])
    pipeline = {
        "writer": model.name, "template_families": {},
        "stages": ["template_build", "refres_writer", "comprel_writer", "giveaway_check", "faithfulness_validator",
                   *(["golden_subset"] if golden_n > 0 else [])],
        "removed": {f: dict(sorted((k, v) for k, v in c.items() if v)) for f, c in removed.items()},
        "golden": golden, "model_calls": calls.calls, "cache_hits": calls.hits,
        "failed_requests": calls.failed,
    }
    manifest = data.manifest.model_copy(update={
        "config": {**data.manifest.config, "pipeline": pipeline}})
    return Dataset(manifest, written_data.corpus, written_data.qa, items, written_data.ledger)
