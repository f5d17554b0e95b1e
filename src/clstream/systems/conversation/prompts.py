"""What the prompts of the conversation-style memory methods share (docs/clbench.md §6:
``icl``, ``notepad``, ``mem0``, ``ace``): the wording of transcript turns and the system
message of update calls.

All wording is this project's own. The query -- the protocol's rules and its question or step
block -- comes from the protocol; a method adds what its memory shows (a transcript of earlier
turns, a notepad, retrieved memories, a playbook) in the layout of :mod:`clstream.core.layout`.
Each method's own prompts, the parsers of its strict reply formats and the builtin model's
replies to them live in the method's module (docs/design.md §2.1: one room per method);
its ``describe()`` fingerprints these shared templates together with its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from clstream.core import layout
from clstream.core.types import Message

PROMPT_TEMPLATE_VERSION = "conversation-methods-v2"

# --- transcript turns (every method that keeps a conversation) ----------------------------

RESULT_TEMPLATE = "Result of your last action:\n{text}"
INSTANCE_DONE = "This instance is now complete."
FEEDBACK_HEADER = "The evaluator's verdict on your answer above:"
VERDICT_CHARS = 300  # clip of the task line and answer restated in a verdict
NO_REPLY = "(no reply)"
NO_REQUEST = "(request not kept)"

# --- update calls (mem0's extraction and decision, ace's reflector and curator) -----------

MEMORY_SYSTEM = (
    "You keep the long-term memory of an agent that works through a stream of tasks, texts "
    "and environment steps. Reply only in the exact format asked for."
)

_TEMPLATE_NAMES = (
    "PROMPT_TEMPLATE_VERSION", "RESULT_TEMPLATE", "INSTANCE_DONE", "FEEDBACK_HEADER",
    "VERDICT_CHARS", "NO_REPLY", "NO_REQUEST", "MEMORY_SYSTEM",
)


def template_fingerprint(own: Iterable[tuple[str, object]] = ()) -> str:
    """sha256 of these templates, a method's ``own`` ((name, template) pairs) and the shared
    layout's; methods report it in ``describe()``."""
    return layout.fingerprint([*(f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES),
                               *(f"{name}={value}" for name, value in own)])


def update_messages(prompt: str) -> tuple[Message, ...]:
    return (Message(role="system", content=MEMORY_SYSTEM), Message(role="user", content=prompt))


def section(header: str, lines: Iterable[str]) -> str:
    """A header and its lines, or '' when there are none."""
    body = [line for line in lines if line.strip()]
    return f"{header}\n" + "\n".join(body) + "\n" if body else ""


def text_section(header: str, text: str) -> str:
    return f"{header}\n{text.strip()}\n" if text.strip() else ""
