"""The request format of the item-writing stages and audits, and the builtin model's replies
to it (docs/imprint.md §4.7)."""

from __future__ import annotations

import json

from clstream.core.types import GenerationRequest, Message
from clstream.models.builtin import BuiltinReader
from clstream.protocols.imprint.settings import writing as fmt


def test_requests_read_back_and_other_prompts_are_not_theirs() -> None:
    payload = {"draft": {"question": "What diet do I follow now?"}, "avoid": ["vegan"]}
    request = fmt.messages(fmt.WRITE, payload)
    assert fmt.read_request(request) == (fmt.WRITE, payload)
    assert fmt.read_request([Message(role="user", content=request[1].content)]) is None
    other = (Message(role="system", content="Stage: write. Be brief."), request[1])
    assert fmt.read_request(other) is None


def test_labelled_lines_take_the_last_one() -> None:
    reply = "GUESS: first\nthinking more\n**GUESS:** B"
    assert fmt.labelled(reply, fmt.FORCED_COMMIT) == "B"
    assert fmt.labelled("no label here", fmt.OPTION_BIAS) is None
    assert fmt.json_reply('```json\n{"question": "Q?"}\n```') == {"question": "Q?"}
    assert fmt.json_reply("[1, 2]") is None


def test_the_builtin_model_keeps_drafts_and_reads_the_fact_levers() -> None:
    model = BuiltinReader()

    def reply(stage: str, payload: dict[str, object]) -> str:
        request = GenerationRequest(key="k", messages=fmt.messages(stage, payload))
        return model.reply(request)[0]

    draft = {"question": "Which of these should I get?", "options": ["x", "y", "z"]}
    assert json.loads(reply(fmt.WRITE, {"draft": draft})) == draft
    facts = [{"fact": "diet: vegan", "value": "vegan", "implies": "the tofu bowl"},
             {"fact": "pet: cat", "value": "cat", "implies": "a feather wand"}]
    options = ["The beef ragout", "The tofu bowl", "The sea bass"]
    assert fmt.labelled(reply(fmt.FACT_ORACLE, {"facts": facts, "question": "Q?",
                                                "options": options}), fmt.FACT_ORACLE) == "B"
    assert fmt.labelled(reply(fmt.FORCED_COMMIT, {"question": "Q?", "options": options}),
                        fmt.FORCED_COMMIT) == "unknown"
    assert fmt.labelled(reply(fmt.OPTION_BIAS, {"options": options}), fmt.OPTION_BIAS) == "NONE"
    assert fmt.labelled(reply(fmt.UNIVERSALITY, {"question": "Q?", "answer": "x"}),
                        fmt.UNIVERSALITY) == "NO"
