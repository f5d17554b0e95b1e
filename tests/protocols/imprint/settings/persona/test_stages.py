"""The persona writer and audits (docs/imprint.md §4.7) with a scripted model: each rule of
the writer rejects what it names, each audit removes what it should and counts it per family,
and replies are cached."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clstream.core.types import GenerationRequest, GenerationResult, Sample
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.imprint.schema import Dataset, Item
from clstream.protocols.imprint.settings import writing as fmt
from clstream.protocols.imprint.settings.persona.stages import persona_stages
from clstream.protocols.imprint.settings.persona.synthetic import PersonaConfig, generate_persona

Script = Callable[[str, dict[str, Any]], str | None]


class Scripted:
    """Replies as the builtin model does, except where ``script`` gives a reply."""

    name = "scripted-persona"

    def __init__(self, script: Script) -> None:
        self.script = script
        self.tokenizer = approx_tokenizer()
        self.calls = 0

    def describe(self) -> dict[str, Any]:
        return {"backend": "test", "name": self.name}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for request in requests:
            self.calls += 1
            read = fmt.read_request(request.messages)
            assert read is not None
            text = self.script(*read) or fmt.builtin_reply(request.messages) or ""
            out.append(GenerationResult(key=request.key, samples=[Sample(text=text)]))
        return out


def _data() -> Dataset:
    return generate_persona(PersonaConfig(seed=4, n_personas=1, chunk_tokens=0))


def _first(data: Dataset, family: str) -> Item:
    return next(i for i in data.items if i.family == family)


def test_the_writer_rules_reject_what_they_name(tmp_path: Path) -> None:
    data = _data()
    refres, tempupd, imprel = (_first(data, f) for f in ("RefRes", "TempUpd", "ImpRel"))
    value = imprel.meta["option_values"][0]

    def script(stage: str, payload: dict[str, Any]) -> str | None:
        if stage != fmt.WRITE:
            return None
        draft = dict(payload["draft"])
        question = draft["question"]
        if question == refres.question:  # repeats the stating sentence's words
            draft["question"] = refres.meta["support"][0].rstrip(".") + "?"
        elif question == tempupd.question:  # no longer shares a word with the stale value
            draft["question"] = "Which is it at present?"
        elif question == imprel.question:  # an option names a value
            draft["options"] = [f"{value} all the way", *draft["options"][1:]]
        else:
            return None
        return json.dumps(draft)

    staged = persona_stages(data, Scripted(script), tmp_path)
    gone = {i.item_id for i in data.items} - {i.item_id for i in staged.items}
    writer = staged.manifest.config["pipeline"]["audits"]["writer"]
    rejected = [i for i in data.items if i.item_id in gone]
    assert {i.question for i in rejected} >= {refres.question, tempupd.question,
                                              imprel.question}
    assert sum(writer.values()) == len(gone)
    assert writer["RefRes"] >= 1 and writer["TempUpd"] >= 1 and writer["ImpRel"] >= 1


def test_each_audit_removes_and_counts(tmp_path: Path) -> None:
    data = _data()
    comprel = [i for i in data.items if i.family == "CompRel"]
    imprel = [i for i in data.items if i.family == "ImpRel"]
    assert len(comprel) >= 2 and len(imprel) >= 3
    bias, oracle, universal = comprel[0], imprel[0], imprel[1]

    def script(stage: str, payload: dict[str, Any]) -> str | None:
        options = payload.get("options")
        if stage == fmt.OPTION_BIAS and options == bias.options:
            return f"PICK: {bias.gold}"
        if stage == fmt.FACT_ORACLE and payload["question"] == oracle.question:
            return "ANSWER: none of them"
        if stage == fmt.UNIVERSALITY and payload["question"] == universal.question:
            return "Anyone would.\nUNIVERSAL: YES"
        return None

    model = Scripted(script)
    staged = persona_stages(data, model, tmp_path)
    kept = {i.item_id for i in staged.items}
    assert bias.item_id not in kept and oracle.item_id not in kept
    assert universal.item_id not in kept
    audits = staged.manifest.config["pipeline"]["audits"]
    assert audits["option_bias"]["CompRel"] == 1
    assert audits["fact_oracle"]["ImpRel"] == 1
    assert audits["universality"]["ImpRel"] == 1
    assert len(staged.items) == len(data.items) - 3
    # A second pass over the same directory answers everything from the cache.
    calls = model.calls
    again = persona_stages(data, model, tmp_path)
    assert model.calls == calls and again.items == staged.items
    assert again.manifest.config["pipeline"]["writer"]["cache_hits"] > 0


def test_unreadable_audit_replies_are_counted_and_keep_the_item(tmp_path: Path) -> None:
    data = _data()

    def script(stage: str, payload: dict[str, Any]) -> str | None:
        return "I would rather not say." if stage == fmt.FORCED_COMMIT else None

    staged = persona_stages(data, Scripted(script), tmp_path)
    pipeline = staged.manifest.config["pipeline"]
    asked = sum(1 for i in data.items if i.family != "BoundAbs")
    assert pipeline["unreadable_audit_replies"]["forced_commit"] == asked
    assert len(staged.items) == len(data.items)
