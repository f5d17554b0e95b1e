"""Each SeqMem method with the plain builtin model: after one task's feedback, the same task
asked again is answered from memory exactly when the method shows that record (a failed
record only by methods that keep failures, a solved one by every method with memory)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from clstream.core.contracts import System
from clstream.core.events import Feedback
from clstream.core.types import Query
from clstream.models.builtin import BuiltinReader
from clstream.systems.curated import Awm, DcRs
from clstream.systems.expel import ExpelMt, ExpelSt
from clstream.systems.experience import ExpRag, ExpRecent, MemoryFree
from clstream.systems.gmemory import GMemory

QUESTION = "What is the vault code of Tirovan?"
REVEAL = "The vault code of Tirovan is 4721. Correct answer: 4721."
KEEPS_FAILURES = {ExpRecent, ExpRag, DcRs, GMemory}


async def answer_after_one_task(cls: Any, success: bool) -> str:
    system: System = cls(model=BuiltinReader())
    query = Query(id="online/1", text=QUESTION, kind="synthetic",
                  meta={"task_id": "t1", "attempt": 1})
    first = await system.respond(query)
    assert not first.text.endswith("4721")  # nothing to go on before feedback
    output = "## Answer: 4721" if success else first.text
    message = ("Correct. " if success else "Incorrect. ") + REVEAL
    await system.observe(Feedback(query.id, QUESTION, output, float(success), message,
                                  meta={"task_id": "t1", "attempt": 1, "final": True}))
    probe = Query(id="holdout/x@1", text=QUESTION, kind="synthetic", meta={"task_id": "x"})
    return (await system.respond(probe)).text


@pytest.mark.parametrize("cls", [MemoryFree, ExpRecent, ExpRag, DcRs, Awm, ExpelSt, ExpelMt,
                                 GMemory])
def test_memory_shown_is_memory_used(cls: Any) -> None:
    after_failure = asyncio.run(answer_after_one_task(cls, success=False))
    after_success = asyncio.run(answer_after_one_task(cls, success=True))
    assert after_failure.endswith("## Answer: 4721") == (cls in KEEPS_FAILURES)
    assert after_success.endswith("## Answer: 4721") == (cls is not MemoryFree)
