"""The builtin model follows a method's update calls through the registry alone."""

import asyncio
import sys
import types
from collections.abc import Sequence

import pytest

from clstream.core.environment import Policy
from clstream.core.registry import BuiltinReply, PolicyLookup, register, unregister
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.builtin import BuiltinReader
from clstream.systems.amem import builtin_replies as amem_replies
from clstream.systems.amem import formats as amem_formats


def reply_of(model: BuiltinReader, messages: Sequence[Message]) -> str:
    request = GenerationRequest(key="k", messages=tuple(messages), params=SamplingParams())
    return asyncio.run(model.generate([request]))[0].samples[0].text


def toy_replier(policy_of: PolicyLookup) -> BuiltinReply:
    asked: list[Policy | None] = []

    def handler(messages: Sequence[Message]) -> str | None:
        if not messages or messages[-1].content != "toy update":
            return None
        asked.append(policy_of("no-such-task"))
        return f"TOY {len(asked)}"

    return handler


def test_a_registered_replier_claims_its_requests_and_keeps_its_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("toy_method")
    module.toy_replier = toy_replier  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_method", module)
    register("builtin_reply", "toy", "toy_method:toy_replier")
    try:
        model = BuiltinReader()
        toy = [Message(role="user", content="toy update")]
        assert [reply_of(model, toy), reply_of(model, toy)] == ["TOY 1", "TOY 2"]
        other = [Message(role="user", content="Where is Mara?")]
        assert not reply_of(model, other).startswith("TOY")
    finally:
        unregister("builtin_reply", "toy")


def test_a_method_without_its_entry_gets_the_reader_reply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [Message(role="system", content=amem_formats.SYSTEM),
                Message(role="user", content=amem_formats.note_prompt("Mara went to the hall."))]
    expected = amem_replies.reply(messages)
    assert expected is not None and expected.startswith("KEYWORDS: Mara")
    assert reply_of(BuiltinReader(), messages) == expected
    target = "clstream.systems.amem.builtin_replies:replier"
    unregister("builtin_reply", "amem")
    try:
        assert "KEYWORDS" not in reply_of(BuiltinReader(), messages)
    finally:
        register("builtin_reply", "amem", target)
