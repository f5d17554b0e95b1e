"""A scripted model and small event builders for the tests of the conversation-style methods
(icl, notepad, mem0, ace)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from clstream.core import layout
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.types import GenerationRequest, GenerationResult, Query, Sample, Usage
from clstream.models.tokenizers import approx_tokenizer

INSTRUCTIONS = "You act in a small environment. Reply with one JSON object."


class Scripted:
    """A model whose reply is a function of the request (or the next of a list of replies for
    a stage); it records every request."""

    name = "scripted"

    def __init__(self, reply: Callable[[GenerationRequest], str] | None = None,
                 **by_stage: list[str]):
        self.reply = reply
        self.by_stage = {stage: list(texts) for stage, texts in by_stage.items()}
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted"}

    def _text(self, request: GenerationRequest) -> str:
        queue = self.by_stage.get(request.stage)
        if queue:
            return queue.pop(0)
        if self.reply is not None:
            return self.reply(request)
        return '{"action": "wait"}' if request.stage == "generate" else "nothing to say"

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            self.requests.append(r)
            out.append(GenerationResult(key=r.key, samples=[Sample(text=self._text(r))],
                                        stage=r.stage,
                                        usage=Usage(prompt_tokens=5, completion_tokens=3)))
        return out

    def of_stage(self, stage: str) -> list[GenerationRequest]:
        return [r for r in self.requests if r.stage == stage]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def step_query(instance: str, step: int, text: str = "You see a locked door.") -> Query:
    body = f"Instance {instance}, step {step}\n{text}"
    return Query(id=f"{instance}/step{step}", text=body, kind="action",
                 meta={"instance_id": instance, "step": step}, instructions=INSTRUCTIONS,
                 prompt=layout.question_block(body, (), "Reply with one JSON object."))


def obs(instance: str, step: int, text: str, done: bool = False,
        reward: float | None = None) -> Observation:
    return Observation(instance, step, text, reward=reward if done else None, done=done)


def task_query(i: int, text: str = "What is the vault code of Tirovan?") -> Query:
    return Query(id=f"online/{i}", text=text, kind="synthetic",
                 meta={"task_id": f"t{i}", "attempt": 1})


def verdict(q: Query, answer: str, success: bool, message: str = "") -> Feedback:
    message = message or ("Correct." if success else "Incorrect. Correct answer: 4721.")
    return Feedback(q.id, q.text, answer, float(success), message,
                    meta={"task_id": q.meta["task_id"], "attempt": 1, "final": True})


MIXED: list[Event] = [
    Chunk("doc", 0, "Mara went to the kitchen."),
    Document("notes", "The harbour bells rang at dusk."),
    Observation("env-1", 3, "You see a locked door and a brass key.", reward=0.0, done=True),
    Feedback("online/1", "What is the vault code of Tirovan?", "## Answer: 1", 0.0,
             "Incorrect. Correct answer: 4721.", meta={"task_id": "t1", "final": True}),
    Chunk("doc", 1, "Tobin picked up the lantern."),
]


def frozen(system: Any) -> str:
    """The snapshot as canonical JSON (what 'memory unchanged' compares)."""
    return json.dumps(system.snapshot(), sort_keys=True)


async def play_step(system: Any, instance: str, step: int, result: str, done: bool = False
                    ) -> list[GenerationResult]:
    """One CL-Bench step: respond to the step's query, then observe its outcome."""
    await system.respond(step_query(instance, step))
    return list(await system.observe(obs(instance, step, result, done=done,
                                         reward=1.0 if done else None)))


def contents(request: GenerationRequest) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in request.messages]
