"""The paper's model stages over the procedural news world: the writer of boolean claims and
their one-element falsehoods, of the TempUpd axes and of the CompRel sub-families
(ImprintBench App. D.1 items 1-3; docs/imprint.md §4.7).

``generate imprint --setting news --model M`` hands every DirAcq, TempUpd and CompRel item to
the model with its ledger frame (the claim, the change or the chain of facts, and for a false
claim the one element that was swapped, already checked false against the ledger) and the
template draft (:mod:`clstream.protocols.imprint.settings.writing`). The gold stays the ledger's: the writer
only words the question. A written question is kept when it ends in "?", keeps every name,
date, period and number of the draft (so a true claim stays true and a falsehood keeps its
single changed element), names no open answer the draft did not name, and is neither a
training question nor another item's question; otherwise the item is dropped and counted. ImpRel (one headline per arc) and BoundAbs (absence predicates
checked against the corpus) stay templates, and the card says so. The blind and
with-context filters (``--filter``) are the news setting's audits, as in the paper.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model
from clstream.protocols.imprint.schema import Dataset, Item, Manifest, question_key
from clstream.protocols.imprint.settings import writing as fmt
from clstream.protocols.imprint.settings.model_calls import CACHE_NAME, StageCalls
from clstream.protocols.imprint.stage_timings import timed

WRITTEN = ("DirAcq", "TempUpd", "CompRel")
_PERIOD = re.compile(r"\b(?:early|mid|late) [A-Z][a-z]+ \d{4}\b")
_NUMBER = re.compile(r"\d{4}-\d{2}-\d{2}|\d+(?:\.\d+)?")
_NAME = re.compile(r"(?<![.?!] )(?<!^)\b[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


def anchors(question: str) -> list[str]:
    """The names, dates, periods and numbers of a question that a rewrite must keep (its
    first word aside, which is capitalised as any first word is)."""
    found = _PERIOD.findall(question) + _NUMBER.findall(question)
    found += [m.group(0) for m in _NAME.finditer(question) if m.start() > 0]
    return list(dict.fromkeys(found))


def _has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(phrase)}(?![\w]|\.\d)", text, re.IGNORECASE) \
        is not None


def _payload(item: Item) -> dict[str, Any]:
    frame = {k: v for k, v in item.meta.items() if k in ("query", "swap", "kind", "facts")}
    return {"family": item.family, "axis": item.axis, "frame": frame,
            "draft": {"question": item.question}, "keep": anchors(item.question),
            "answer_kind": "yes/no" if item.judge == "yesno" else "short answer"}


def _written(item: Item, reply: str) -> Item | None:
    data = fmt.json_reply(reply)
    question = data.get("question") if data is not None else None
    if not isinstance(question, str) or not question.strip().endswith("?"):
        return None
    question = " ".join(question.split())
    if not all(_has(question, a) for a in anchors(item.question)):
        return None
    if item.judge != "yesno" and any(_has(question, g) and not _has(item.question, g)
                                     for g in item.golds):
        return None
    return item.model_copy(update={"question": question,
                                   "meta": {**item.meta, "draft": item.question}})


async def run_news_stages(data: Dataset, model: Model, out_dir: str | Path) -> Dataset:
    """The dataset with its DirAcq, TempUpd and CompRel questions written by ``model``
    (module docstring), replies cached in ``out_dir``."""
    calls = StageCalls(model, Path(out_dir) / CACHE_NAME, seed=data.manifest.seed or 0)
    asked = [i for i in data.items if i.family in WRITTEN]
    removed: Counter[str] = Counter()
    items: list[Item] = []
    with timed("writer", len(asked)) as row:
        replies = await calls.run([calls.request(i.item_id, fmt.WRITE, _payload(i))
                                   for i in asked])
        # A written question may not be a training question or repeat another item's question.
        taken = {question_key(p.question) for p in data.qa}
        taken |= {question_key(i.question) for i in data.items if i.family not in WRITTEN}
        for item in data.items:
            if item.family not in WRITTEN:
                items.append(item)
                continue
            written = _written(item, replies.get(item.item_id, ""))
            if written is None or question_key(written.question) in taken:
                removed[item.family] += 1
            else:
                taken.add(question_key(written.question))
                items.append(written)
        row.kept = len(asked) - sum(removed.values())
    families = sorted({i.family for i in data.items})
    pipeline = dict(data.manifest.config.get("pipeline", {}))
    pipeline.update({
        "writer": {**calls.counts(), "families": [f for f in families if f in WRITTEN]},
        "template_families": [f for f in families if f not in WRITTEN],
        "audits": {**pipeline.get("audits", {}),
                   "writer": {f: removed[f] for f in families if f in WRITTEN}},
    })
    manifest = Manifest(setting=data.manifest.setting, generator=data.manifest.generator,
                        seed=data.manifest.seed,
                        config={**data.manifest.config, "pipeline": pipeline})
    return Dataset(manifest, data.corpus, data.qa, items, data.ledger)


def news_stages(data: Dataset, model: Model, out_dir: str | Path) -> Dataset:
    """:func:`run_news_stages`, run to completion."""
    return asyncio.run(run_news_stages(data, model, out_dir))
