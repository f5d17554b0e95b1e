"""The texts of the ``memagent`` method (docs/agentic.md §memagent): its rewrite prompt, the
memory section it answers from, and how the rewrite prompt is read back.

Two sides read them, both in this package: the method (:mod:`clstream.systems.memagent`)
writes the rewrite request and shows the memory, and the builtin model's replies
(:mod:`clstream.systems.memagent.builtin_replies`) recognise the request and write the new
memory within the budget the prompt states. All wording is this project's own.

The rewrite prompt states the budget twice, in tokens and as a rough word count
(:data:`WORDS_PER_TOKEN` words per token), so that any reader can hold to it; the method still
cuts the reply at the budget with the model's tokenizer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clstream.core import layout

PROMPT_TEMPLATE_VERSION = "memagent-v1"
WORDS_PER_TOKEN = 0.75  # the rough words-per-token ratio stated next to the token budget

REWRITE_SYSTEM = (
    "You are the memory of an agent that reads a long stream one piece at a time: texts, "
    "documents, tasks with their verdicts, steps in an environment. You never see a piece "
    "again once it has passed, and questions about the stream are later answered from your "
    "memory alone. Reply with the memory only."
)

MEMORY_OPEN = "<memory>"
MEMORY_CLOSE = "</memory>"
PIECE_OPEN = "<new-piece>"
PIECE_CLOSE = "</new-piece>"
EMPTY_MEMORY = "(empty)"

REWRITE_PROMPT = (
    "Your memory may hold at most {budget} tokens (about {words} words). It stands below, "
    "followed by the next piece of the stream. Write the new memory in full: it replaces the "
    "old one, so anything you leave out is lost for good. Keep what may be asked about "
    "later -- names, places, who holds what, counts, dates, how tasks and the environment "
    "behave, which answers and actions were right or wrong -- and add what the new piece "
    "states. When a fact changes, keep the newest state; when room runs out, drop filler and "
    "the oldest facts first. Keep the order in which things happened.\n\n"
    f"{MEMORY_OPEN}\n{{memory}}\n{MEMORY_CLOSE}\n\n"
    f"{PIECE_OPEN}\n{{piece}}\n{PIECE_CLOSE}\n\n"
    "Reply with the new memory only, at most {budget} tokens, with no heading or comment."
)

MEMORY_HEADER = "Your memory of everything read so far (the only record you keep):"

_BUDGET = re.compile(r"^Your memory may hold at most (\d+) tokens")
_MEMORY_AT = "\n\n" + MEMORY_OPEN + "\n"
_BETWEEN = "\n" + MEMORY_CLOSE + "\n\n" + PIECE_OPEN + "\n"
_PIECE_END = "\n" + PIECE_CLOSE + "\n\n"


def words_of(budget: int) -> int:
    """The rough word count the prompt states for a budget of ``budget`` tokens."""
    return max(1, int(budget * WORDS_PER_TOKEN))


def rewrite_prompt(memory: str, piece: str, budget: int) -> str:
    """The rewrite request's user text: the memory held (:data:`EMPTY_MEMORY` when there is
    none) and the next piece of the stream, under a budget of ``budget`` tokens."""
    return REWRITE_PROMPT.format(budget=budget, words=words_of(budget),
                                 memory=memory.strip() or EMPTY_MEMORY, piece=piece.strip())


@dataclass(frozen=True)
class Rewrite:
    """A rewrite request as read back from its prompt."""

    budget: int
    memory: str  # '' when the prompt showed the empty marker
    piece: str


def read_rewrite(system: str, prompt: str) -> Rewrite | None:
    """The parts of a rewrite request (its system and user texts), or None when the texts are
    not one. The memory ends at the first closing marker followed by the piece's opening
    marker; the piece ends at the last closing marker, so a piece quoting the markers is
    still read whole."""
    if system != REWRITE_SYSTEM:
        return None
    budget = _BUDGET.match(prompt)
    start = prompt.find(_MEMORY_AT)
    if budget is None or start < 0:
        return None
    start += len(_MEMORY_AT)
    middle = prompt.find(_BETWEEN, start - 1)
    end = prompt.rfind(_PIECE_END)
    if middle < start - 1 or end < middle + len(_BETWEEN):
        return None
    memory = prompt[start:middle] if middle >= start else ""
    if memory.strip() == EMPTY_MEMORY:
        memory = ""
    return Rewrite(int(budget.group(1)), memory, prompt[middle + len(_BETWEEN):end])


def memory_section(memory: str) -> str:
    """The one section an answer shows: the header and the memory (the empty marker when
    nothing is held yet)."""
    return f"{MEMORY_HEADER}\n{memory.strip() or EMPTY_MEMORY}\n"


def template_fingerprint() -> str:
    """sha256 of these texts and the shared layout's; the method reports it in ``describe()``."""
    names = ("PROMPT_TEMPLATE_VERSION", "WORDS_PER_TOKEN", "REWRITE_SYSTEM", "REWRITE_PROMPT",
             "MEMORY_HEADER", "EMPTY_MEMORY")
    return layout.fingerprint(f"{name}={globals()[name]}" for name in names)
