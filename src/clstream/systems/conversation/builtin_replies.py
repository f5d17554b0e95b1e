"""What the builtin model's replies to the note-keeping methods share (docs/clbench.md §6).

A builtin policy that learns says what it learned as note lines and acts from note lines
(:class:`~clstream.core.environment.NoteTaker`). The notepad, mem0 and ace methods keep
exactly such lines when the builtin model writes them, in the formats the methods ask for,
from the steps their prompts show. Each method's replies live beside it
(:mod:`clstream.systems.notepad`, :mod:`clstream.systems.mem0`, :mod:`clstream.systems.ace`),
registered under the registry kind ``"builtin_reply"`` by the method's name; the builtin model
reaches them only through the registry, never by import (docs/design.md §2.1).

This module holds what those replies read alike: a request split into its system message and
body, the task, note-taking policy and observation of an action block, the environment's
words in an outcome text, and the lines under a header. Every prompt a method's replies do not
claim -- a task whose policy keeps no notes, a text, feedback, another method's prompt -- gets
None there and the reader's usual reply.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from clstream.core import layout
from clstream.core.environment import NoteTaker, Turn
from clstream.core.registry import PolicyLookup
from clstream.core.types import Message
from clstream.models.builtin import shown_turns
from clstream.systems.conversation import prompts as formats

RESULT_HEAD = formats.RESULT_TEMPLATE.partition("{text}")[0]
"""The words that open a step's outcome in a transcript or a shown step."""
_DONE_TAIL = "\n" + formats.INSTANCE_DONE


def prefix(template: str, field: str) -> str:
    """The fixed text of ``template`` before its ``{field}``: what a prompt made from it
    starts with."""
    return template.partition("{" + field + "}")[0]


def between(text: str, start: str, end: str) -> str | None:
    """The text between the first ``start`` and the next ``end`` after it, or None."""
    at = text.find(start)
    if at < 0:
        return None
    stop = text.find(end, at + len(start))
    return text[at + len(start):stop] if stop >= 0 else None


def feedback_of(outcome: str) -> str:
    """The environment's words in an outcome text (its header and closing line removed)."""
    return outcome.removeprefix(RESULT_HEAD).removesuffix(_DONE_TAIL).strip()


def action_json(action: dict[str, object]) -> str:
    """A policy's action as the one JSON object a reply holds."""
    return json.dumps(action, sort_keys=True, ensure_ascii=False)


def lines_after(text: str, header: str) -> list[str]:
    """The lines following the line ``header`` up to the first blank line."""
    at = text.find(header + "\n")
    if at < 0:
        return []
    out = []
    for line in text[at + len(header) + 1:].split("\n"):
        if not line.strip():
            break
        out.append(line)
    return out


def system_and_body(messages: Sequence[Message]) -> tuple[str, str]:
    """A request's system messages and its other messages, each joined by blank lines."""
    return ("\n\n".join(m.content for m in messages if m.role == "system"),
            "\n\n".join(m.content for m in messages if m.role != "system"))


UpdateHandler = Callable[[str], "str | None"]
"""A method's reply to the body of one of its update calls (None: not a request it reads)."""


class NoteReplies(ABC):
    """A method's replies, asked with every request the builtin model gets: an update call
    (the shared update system message) goes to the handler whose prompt it opens with
    (:meth:`update_handlers`); an action prompt the method claims (:meth:`claims_action`)
    whose task's policy keeps notes, to :meth:`act`. ``policy_of`` gives a task's builtin
    policy (None: the task has none)."""

    def __init__(self, policy_of: PolicyLookup) -> None:
        self._policy_of = policy_of

    def update_handlers(self) -> dict[str, UpdateHandler]:
        """The fixed start of each of the method's update prompts -> its handler."""
        return {}

    @abstractmethod
    def claims_action(self, system: str, memory: str) -> bool:
        """Whether an action prompt of this system message and memory is the method's."""

    @abstractmethod
    def act(self, policy: NoteTaker, body: str, memory: str, turns: list[Turn],
            observation: str) -> str:
        """The reply to a claimed action prompt: its body, its memory, the steps it shows."""

    def reply(self, messages: Sequence[Message]) -> str | None:
        """The method's reply to ``messages``, or None when the request is not its own."""
        system, body = system_and_body(messages)
        if system == formats.MEMORY_SYSTEM:
            for start, handler in self.update_handlers().items():
                if body.startswith(start):
                    return handler(body)
            return None
        memory, block = layout.split_prompt(body)
        asked = self.asked(block) if self.claims_action(system, memory) else None
        if asked is None:
            return None
        _, policy, observation = asked
        return self.act(policy, body, memory, shown_turns(memory, messages), observation)

    def taker(self, task: str) -> NoteTaker | None:
        """The task's policy when it keeps notes, else None."""
        policy = self._policy_of(task)
        return policy if isinstance(policy, NoteTaker) else None

    def asked(self, block: str) -> tuple[str, NoteTaker, str] | None:
        """(task, its note-taking policy, the observation) of an action block, or None when
        the text is no action block or its task's policy keeps no notes."""
        parsed = layout.parse_action_block(block)
        if parsed is None:
            return None
        policy = self.taker(parsed[0])
        return None if policy is None else (parsed[0], policy, parsed[1])
