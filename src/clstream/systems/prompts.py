"""Prompt layout shared by the OAKS context systems (SPECS §1.2, "Prompting").

The wording is this project's own; it carries the rules SPECS lists: answer from the given
text only, a state holds until the text changes it, the latest state wins, "Unknown" /
"Same" / one or two words for open questions, a letter and the "cannot answer" option for
multiple choice, and a closing ``## Answer:`` line.

Layout, chosen for prefix caching on real servers:

* one system message, identical for every question of every system (it states the rules
  for open and lettered questions alike, so a document mixing both still shares it);
* one user message: the context first, the question last. The context is a header and the
  passages, each opened by a ``[chunk index i]`` tag. SPECS §1.1 defines the chunk index as
  0-based, so tags use that 0-based index, and the rag+window head index is the newest
  chunk's index;
* the context ends where the question block begins, so for full and window the user message
  of interval t+1 starts with the context of interval t whenever no chunk was dropped.

For rag+window the recent window (shared by every question of the interval) comes before
the retrieved older passages (which depend on the question), so the shared part stays a
prefix; the tags and the head index carry the chronology.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable, Sequence

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

CONTEXT_HEADER = "Passages, each tagged with its chunk index:\n\n"
RECENT_HEADER = "Most recent passages, each tagged with its chunk index:\n\n"
RETRIEVED_HEADER = "Earlier passages retrieved for this question, in chunk order:\n\n"
PASSAGE_TEMPLATE = "[chunk index {index}]\n{text}\n\n"
HEAD_TEMPLATE = "Current head index: {index}\n"
QUESTION_TEMPLATE = "Question: {question}\n"
OPTIONS_HEADER = "Options:\n"
OPTION_TEMPLATE = "{letter}. {option}\n"
REMINDER_OPEN = "End with '## Answer: <one or two words>'."
REMINDER_MC = "End with '## Answer: <letter>'."

QUESTION_LABEL = "Question:"
OPTIONS_LABEL = "Options:"
HEAD_LABEL = "Current head index:"
TAG_PATTERN = re.compile(r"^\[chunk index (\d+)\]$", re.MULTILINE)
_OPTION_LINE = re.compile(r"^([A-Z])[.)]\s+(.*\S)\s*$")

_TEMPLATE_NAMES = (
    "PROMPT_TEMPLATE_VERSION",
    "SYSTEM_PROMPT",
    "CONTEXT_HEADER",
    "RECENT_HEADER",
    "RETRIEVED_HEADER",
    "PASSAGE_TEMPLATE",
    "HEAD_TEMPLATE",
    "QUESTION_TEMPLATE",
    "OPTIONS_HEADER",
    "OPTION_TEMPLATE",
    "REMINDER_OPEN",
    "REMINDER_MC",
)


def template_fingerprint() -> str:
    """sha256 of every template string, recorded by runs to tell prompt versions apart."""
    texts = (f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES)
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()


def passage_block(index: int, text: str) -> str:
    """One tagged passage; blocks end in whitespace so token counts add up across blocks."""
    return PASSAGE_TEMPLATE.format(index=index, text=text.strip())


def context_text(passages: Iterable[tuple[int, str]], header: str = CONTEXT_HEADER) -> str:
    """A header followed by the tagged passages, in the order given."""
    return header + "".join(passage_block(i, t) for i, t in passages)


def split_context_text(
    recent: Sequence[tuple[int, str]], retrieved: Sequence[tuple[int, str]]
) -> str:
    """rag+window context: the recent window, then (if any) the retrieved older passages."""
    text = context_text(recent, RECENT_HEADER)
    if retrieved:
        text += context_text(retrieved, RETRIEVED_HEADER)
    return text


def option_letters(n: int) -> str:
    if n > len(string.ascii_uppercase):
        raise ValueError(f"at most {len(string.ascii_uppercase)} options, got {n}")
    return string.ascii_uppercase[:n]


def question_text(query: Query, head_index: int | None = None) -> str:
    """The block after the context: head index (rag+window), question, options, reminder."""
    parts = []
    if head_index is not None:
        parts.append(HEAD_TEMPLATE.format(index=head_index))
    parts.append(QUESTION_TEMPLATE.format(question=" ".join(query.text.split())))
    if query.options:
        parts.append(OPTIONS_HEADER)
        for letter, option in zip(option_letters(len(query.options)), query.options, strict=True):
            parts.append(OPTION_TEMPLATE.format(letter=letter, option=" ".join(option.split())))
    parts.append(REMINDER_MC if query.options else REMINDER_OPEN)
    return "".join(parts)


def build_messages(
    context: str, query: Query, head_index: int | None = None
) -> tuple[Message, ...]:
    """System rules, then one user message: ``context`` first, the question block last."""
    return (
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content=context + question_text(query, head_index)),
    )


# --- reading the layout back (used by the builtin reader model) ------------------------


def split_prompt(text: str) -> tuple[str, str]:
    """(context, question block): the block starts at the last line opening with "Question:".

    Without that label the last paragraph is taken as the question.
    """
    label = QUESTION_LABEL
    at = text.rfind("\n" + label)
    if at >= 0:
        return text[: at + 1], text[at + 1 :]
    if text.startswith(label):
        return "", text
    at = text.rstrip().rfind("\n\n")
    return (text[: at + 2], text[at + 2 :]) if at >= 0 else ("", text)


def parse_question(block: str) -> tuple[str, list[str]]:
    """The question sentence and the option texts (in letter order) of a question block."""
    lines = block.strip().splitlines()
    first = lines[0] if lines else ""
    if first.startswith(QUESTION_LABEL):
        first = first[len(QUESTION_LABEL) :]
    options: list[str] = []
    for line in lines[1:]:
        m = _OPTION_LINE.match(line.strip())
        if m and ord(m.group(1)) - ord("A") == len(options):
            options.append(m.group(2))
    return first.strip(), options


def parse_passages(context: str) -> list[tuple[int, str]]:
    """(chunk index, text) of each tagged passage; untagged text is one passage, index 0."""
    rest, _, last = context.rstrip().rpartition("\n")
    if last.startswith(HEAD_LABEL):
        context = rest
    for header in (CONTEXT_HEADER, RECENT_HEADER, RETRIEVED_HEADER):
        context = context.replace(header, "\n")
    tags = list(TAG_PATTERN.finditer(context))
    if not tags:
        return [(0, context.strip())] if context.strip() else []
    passages = []
    for n, tag in enumerate(tags):
        end = tags[n + 1].start() if n + 1 < len(tags) else len(context)
        passages.append((int(tag.group(1)), context[tag.end() : end].strip()))
    return passages
