"""The paper's model stages over the procedural persona dataset: item writing and the audits
besides the blind and with-context filters (ImprintBench App. D.3 items 6-8; docs/imprint.md
§4.7).

``generate imprint --setting persona --model M`` runs, in this order:

1. **writer** -- TempUpd, RefRes and ImpRel items are written by the model from their fact
   frame and the template draft (:mod:`clstream.protocols.imprint.settings.writing`). A written item is
   kept only when it still does its job: a question ending in "?", no value of the attribute
   named; a RefRes question sharing no word with the sentence that stated the fact (it must
   paraphrase); a TempUpd question sharing a word with the sentence that stated the stale
   value (the old value must still compete); ImpRel options one per draft option, naming no
   value, and the question not naming the attribute; no question a training pair asks. Items
   whose reply is unreadable or breaks a rule are dropped and counted. CompRel (a generic stem over truth-table bundles) and
   BoundAbs stay templates, and the card says so;
2. **option-only audit** -- the written ImpRel options pass the deterministic audit of
   :mod:`~clstream.protocols.imprint.settings.persona.option_audit` again;
3. **forced commit** -- every answerable item is asked with no history and the model must
   commit to a concrete guess; an item it guesses right is dropped;
4. **no-context option bias** -- CompRel and ImpRel options are shown without the question;
   an item whose gold the model picks is dropped;
5. **fact-list oracle** -- CompRel and ImpRel are asked with the person's facts listed (each
   with what it implies for choices: the frame's decision levers) and no history; an item the
   model gets wrong from the facts is dropped (its gold does not follow from them);
6. **universality** -- an ImpRel item whose gold the model calls the best choice for almost
   anyone is dropped (its gold is common-sense advice, not personal).

Every stage records, per family, what it removed, in the manifest's ``pipeline``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model
from clstream.protocols.imprint.schema import Dataset, Item, Manifest, question_key
from clstream.protocols.imprint.settings import writing as fmt
from clstream.protocols.imprint.settings.model_calls import CACHE_NAME, StageCalls
from clstream.protocols.imprint.settings.persona.catalogue import (
    CATALOGUE,
    CATALOGUE_BY_KEY,
    content_words,
    mentions,
    word_stems,
)
from clstream.protocols.imprint.settings.persona.option_audit import solved_by
from clstream.protocols.imprint.settings.persona.synthetic import state_at
from clstream.protocols.imprint.stage_timings import timed

WRITTEN = ("TempUpd", "RefRes", "ImpRel")
CHOICE = ("CompRel", "ImpRel")
AUDITS = ("option_only", fmt.FORCED_COMMIT, fmt.OPTION_BIAS, fmt.FACT_ORACLE, fmt.UNIVERSALITY)
_ALL_FORMS = [f for a in CATALOGUE for v in a.values for f in v.forms]


def _names_value(text: str) -> bool:
    return any(mentions(text, form) for form in _ALL_FORMS)


def _write_payload(item: Item) -> dict[str, Any]:
    attribute = CATALOGUE_BY_KEY[item.meta["attribute"]]
    frame: dict[str, Any] = {"attribute": attribute.noun, "value": item.meta["values"][0],
                             "stated": item.meta["support"]}
    draft: dict[str, Any] = {"question": item.question}
    avoid = sorted({f for v in attribute.values for f in v.forms})
    if item.family == "TempUpd":
        frame["previous_value"] = item.stale_golds[0]
        frame["stated_before"] = item.meta["stale_support"]
    if item.family == "RefRes":
        avoid += sorted(content_words(item.meta["support"][0]))
    if item.family == "ImpRel":
        draft["options"] = list(item.options)
        frame["options_for"] = dict(zip(item.meta["option_values"], item.options, strict=True))
        avoid += sorted(content_words(attribute.noun))
    return {"family": item.family, "frame": frame, "draft": draft, "avoid": avoid}


def _written(item: Item, reply: str) -> Item | None:
    """The item as the writer wrote it, or None when the reply breaks a rule (module
    docstring, step 1)."""
    data = fmt.json_reply(reply)
    question = data.get("question") if data is not None else None
    if not isinstance(question, str) or not question.strip().endswith("?"):
        return None
    question = " ".join(question.split())
    if _names_value(question):
        return None
    update: dict[str, Any] = {"question": question}
    if item.family == "RefRes" and word_stems(question) & word_stems(item.meta["support"][0]):
        return None
    if item.family == "TempUpd" and not word_stems(question) & word_stems(
            item.meta["stale_support"]):
        return None
    if item.family == "ImpRel":
        attribute = CATALOGUE_BY_KEY[item.meta["attribute"]]
        options = data.get("options") if data is not None else None
        if (not isinstance(options, list) or len(options) != len(item.options)
                or not all(isinstance(o, str) and o.strip() for o in options)
                or len({o.strip().casefold() for o in options}) != len(options)
                or any(_names_value(o) for o in options)
                or content_words(question) & content_words(attribute.noun)):
            return None
        update["options"] = [" ".join(o.split()) for o in options]
    return item.model_copy(update=update)


def _facts(data: Dataset, item: Item) -> list[dict[str, str]]:
    """The fact list of the oracle: the item's own facts, then up to two other current facts
    of the person, each with the recommendation its value implies (its decision lever)."""
    current = state_at(data.ledger, item.persona or "")
    keys = list(item.meta.get("attributes") or [item.meta["attribute"]])
    keys += [k for k in sorted(current) if k not in keys and not current[k]["withheld"]][:2]
    out = []
    for key in keys:
        attribute = CATALOGUE_BY_KEY[key]
        value = attribute.value(current[key]["value"])
        out.append({"fact": f"{attribute.noun}: {value.name}", "value": value.name,
                    "implies": value.suggestion})
    return out


def _correct(item: Item, answer: str | None) -> bool:
    if answer is None:
        return False
    if item.options:
        return answer.strip().strip(".()").upper() == str(item.gold)
    return any(mentions(answer, g) for g in item.golds)


async def run_persona_stages(data: Dataset, model: Model, out_dir: str | Path) -> Dataset:
    """The dataset after the writer and the audits (module docstring), replies cached in
    ``out_dir``; the manifest's ``pipeline`` records what each stage removed."""
    calls = StageCalls(model, Path(out_dir) / CACHE_NAME, seed=data.manifest.seed or 0)
    removed: dict[str, Counter[str]] = {name: Counter() for name in ("writer", *AUDITS)}
    unreadable: Counter[str] = Counter()
    items = list(data.items)

    writable = [i for i in items if i.family in WRITTEN]
    kept: list[Item] = []
    with timed("writer", len(writable)) as row:
        replies = await calls.run([calls.request(i.item_id, fmt.WRITE, _write_payload(i))
                                   for i in writable])
        training = {question_key(p.question) for p in data.qa}
        for item in items:
            if item.family not in WRITTEN:
                kept.append(item)
                continue
            written = _written(item, replies.get(item.item_id, ""))
            if written is None or question_key(written.question) in training:
                removed["writer"][item.family] += 1
            elif item.family == "ImpRel" and solved_by(written.question, written.options,
                                                       str(written.gold)):
                removed["option_only"][item.family] += 1
            else:
                kept.append(written.model_copy(update={"meta": {**written.meta,
                                                                "draft": item.question}}))
        row.kept = len(writable) - len(items) + len(kept)
    items = kept

    async def audit(stage: str, families: tuple[str, ...],
                    payload: Callable[[Item], dict[str, Any]],
                    drop: Callable[[Item, str | None], bool]) -> None:
        nonlocal items
        asked = [i for i in items if i.family in families]
        with timed(stage, len(asked)) as row:
            answers = await calls.run([calls.request(f"{stage}/{i.item_id}", stage, payload(i))
                                       for i in asked])
            survivors = []
            for item in items:
                if item.family not in families:
                    survivors.append(item)
                    continue
                value = fmt.labelled(answers.get(f"{stage}/{item.item_id}", ""), stage)
                if value is None:
                    unreadable[stage] += 1
                if drop(item, value):
                    removed[stage][item.family] += 1
                else:
                    survivors.append(item)
            row.kept = len(asked) - len(items) + len(survivors)
        items = survivors

    def question(item: Item) -> dict[str, Any]:
        return {"question": item.question, "options": item.options}

    answerable = tuple(sorted({i.family for i in items} - {"BoundAbs"}))
    await audit(fmt.FORCED_COMMIT, answerable, question, _correct)
    await audit(fmt.OPTION_BIAS, CHOICE, lambda i: {"options": i.options}, _correct)
    await audit(fmt.FACT_ORACLE, CHOICE,
                lambda i: {**question(i), "facts": _facts(data, i)},
                lambda i, a: not _correct(i, a))
    await audit(fmt.UNIVERSALITY, ("ImpRel",),
                lambda i: {"question": i.question,
                           "answer": i.options["ABCD".index(str(i.gold))]},
                lambda i, a: a is not None and a.upper().startswith("YES"))

    pipeline = dict(data.manifest.config.get("pipeline", {}))
    families = sorted({i.family for i in data.items})
    scope = {"writer": WRITTEN, "option_only": CHOICE, fmt.FORCED_COMMIT: answerable,
             fmt.OPTION_BIAS: CHOICE, fmt.FACT_ORACLE: CHOICE, fmt.UNIVERSALITY: ("ImpRel",)}
    before = pipeline.get("audits", {}).get("option_only", {})
    removed["option_only"].update({f: int(n) for f, n in before.items()})
    pipeline.update({
        "writer": {**calls.counts(), "families": [f for f in families if f in WRITTEN]},
        "template_families": [f for f in families if f not in WRITTEN],
        "audits": {name: {f: removed[name][f] for f in families if f in scope[name]}
                   for name in ("writer", *AUDITS)},
        "unreadable_audit_replies": dict(sorted(unreadable.items())),
    })
    manifest = Manifest(setting=data.manifest.setting, generator=data.manifest.generator,
                        seed=data.manifest.seed,
                        config={**data.manifest.config, "pipeline": pipeline})
    return Dataset(manifest, data.corpus, data.qa, items, data.ledger)


def persona_stages(data: Dataset, model: Model, out_dir: str | Path) -> Dataset:
    """:func:`run_persona_stages`, run to completion."""
    return asyncio.run(run_persona_stages(data, model, out_dir))
