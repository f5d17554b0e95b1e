"""What the OAKS protocol asks (docs/oaks.md §2.3): its rules and its question block.

The wording is this project's own; it carries the rules docs/oaks.md §2.3 lists: answer from the given
text only, a state holds until the text changes it, the latest state wins, "Unknown" /
"Same" / one or two words for open questions, a letter and the "cannot answer" option for
multiple choice, and a closing ``## Answer:`` line.

The runner puts :data:`SYSTEM_PROMPT` into every query's ``instructions`` and
:func:`question_text` into its ``prompt``; a system lays them out with its memory in the one
structure of :mod:`clstream.core.layout`. Chosen for prefix caching on real servers:

* one system message, identical for every question of every system (it states the rules
  for open and lettered questions alike, so a document mixing both still shares it);
* one user message: the context first, the question last. With a context system the context
  is a header and the passages, each opened by a ``[chunk index i]`` tag. docs/oaks.md §3.1 defines
  the chunk index as 0-based, so tags use that 0-based index, and the rag+window head index is
  the newest chunk's index;
* the context ends where the question block begins, so for full and window the user message
  of interval t+1 starts with the context of interval t whenever no chunk was dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from clstream.core import layout
from clstream.core.types import Message, Query

PROMPT_TEMPLATE_VERSION = "oaks-context-v1"

SYSTEM_PROMPT = (
    "You will be shown passages from a text, then one question about it. Reply using only "
    "what the passages say.\n"
    "\n"
    "Rules:\n"
    "1. Use the passages and nothing else. Ignore anything you may already know about this "
    "text or its characters.\n"
    "2. A state, once described (where someone is, who holds something), stays true until "
    "a later passage changes it.\n"
    "3. When a state changes several times, only the latest change counts: answer for the "
    "end of the passages you were given. Passages are tagged with their chunk index; a "
    "larger index is later in the text.\n"
    "4. Open questions: if the passages do not say, reply Unknown. If the question compares "
    "two things and they come out equal, reply Same. Otherwise reply in one or two words, "
    "not a sentence.\n"
    "5. Questions with lettered options: pick exactly one letter. If the passages have not "
    "yet given the information needed, pick the option saying the question cannot be "
    "answered at this point.\n"
    "6. You may think first, but your reply must end with one final line of the form\n"
    "## Answer: <short answer>\n"
    "where <short answer> is the one or two words, or just the option letter."
)

REMINDER_OPEN = "End with '## Answer: <one or two words>'."
REMINDER_MC = "End with '## Answer: <letter>'."

_TEMPLATE_NAMES = ("PROMPT_TEMPLATE_VERSION", "SYSTEM_PROMPT", "REMINDER_OPEN", "REMINDER_MC")


def template_fingerprint() -> str:
    """sha256 of every template string (with the shared layout's), recorded by runs as
    ``prompt_template_hash`` to tell prompt versions apart."""
    return layout.fingerprint(f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES)


def question_text(query: Query, head_index: int | None = None) -> str:
    """The question block: (head index,) question, lettered options, answer-format reminder."""
    head = layout.head_line(head_index) if head_index is not None else ""
    reminder = REMINDER_MC if query.options else REMINDER_OPEN
    return head + layout.question_block(" ".join(query.text.split()), query.options, reminder)


def ask(query: Query) -> Query:
    """``query`` with the OAKS rules as its instructions and its OAKS question block."""
    return Query(id=query.id, text=query.text, options=query.options, kind=query.kind,
                 meta=query.meta, instructions=SYSTEM_PROMPT, prompt=question_text(query))


# --- whole prompts from a context (for tests and examples) -------------------------------

context_text = layout.passages_section


def split_context_text(
    recent: Sequence[tuple[int, str]], retrieved: Sequence[tuple[int, str]]
) -> str:
    """rag+window context: the recent window, then (if any) the retrieved older passages."""
    text = layout.passages_section(recent, layout.RECENT_HEADER)
    if retrieved:
        text += layout.passages_section(retrieved, layout.RETRIEVED_HEADER)
    return text


def build_messages(
    context: str, query: Query, head_index: int | None = None
) -> tuple[Message, ...]:
    """The messages a context system sends for an OAKS question over ``context`` (a passages
    section, ending in a blank line): the rules, then context, head index and question."""
    return (
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content=context + question_text(query, head_index)),
    )
