"""How the builtin reader learns from experience shown in its prompt.

A reader that cannot reason can still learn from memory the way a person skimming notes
would: find the past task that asks the same thing as the current question and reuse the
answer its feedback states (or the answer given, when the outcome was correct). Experience
blocks are read with :func:`clstream.core.layout.parse_experiences`, wherever a memory method
shows them -- in an experience section, or as the text of a tagged passage (a context system
keeps feedback that way).
"""

from __future__ import annotations

import re

from clstream.core import layout

_STOPWORDS = frozenset(
    """a an the of to in on at for by with from and or is are was were be what which who whom
    whose how many much does do did please me my you your it its this that these those into
    there their then than as""".split()
)
_TOKEN = re.compile(r"[A-Za-z]+|\d+")
_QUOTED = re.compile(r"'([^'\s][^']*)'|\"([^\"]+)\"")
_STATED = re.compile(
    r"correct (?:answer|option|result)\s*(?:is|was|:)\s*:?\s*(.+?)\s*(?:\.(?=\s)|\.?$)",
    re.IGNORECASE,
)


def _keys_and_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(key terms: numbers, quoted words, capitalised words after the first; content words)."""
    tokens = _TOKEN.findall(text)
    keys = {t.lower() for t in tokens if t.isdigit()}
    keys |= {(a or b).lower() for a, b in _QUOTED.findall(text)}
    keys |= {t.lower() for t in tokens[1:] if t[0].isupper() and t.lower() not in _STOPWORDS}
    words = {t.lower() for t in tokens if t.lower() not in _STOPWORDS}
    return frozenset(keys), frozenset(words)


def stated_answer(feedback: str) -> str | None:
    """The answer a feedback text states as correct ("Correct answer: X."), if any."""
    found = _STATED.findall(feedback)
    return found[-1].strip().strip("'\"") if found else None


def recall_answer(prompt: str) -> str | None:
    """The answer a matching experience gives for the current question, else None.

    A past task matches when it names the same key terms (numbers, quoted words, names) and
    shares at least half of its content words with the question (Jaccard >= 0.5). Matches are
    tried best first (then latest first); the first that states a correct answer in its
    feedback, or whose outcome was correct, gives the answer.
    """
    if layout.TASK_LABEL not in prompt:  # no experience shown: skip parsing long contexts
        return None
    question = layout.current_question(prompt)
    if not question:
        return None
    q_keys, q_words = _keys_and_words(question)
    if not q_words:
        return None
    ranked: list[tuple[float, int, layout.ShownExperience]] = []
    for n, ex in enumerate(layout.parse_experiences(prompt)):
        keys, words = _keys_and_words(ex.question)
        overlap = len(words & q_words) / len(words | q_words) if words else 0.0
        if keys == q_keys and overlap >= 0.5:
            ranked.append((overlap, n, ex))
    for _, _, ex in sorted(ranked, key=lambda r: (-r[0], -r[1])):
        answer = stated_answer(ex.feedback)
        if answer:
            return answer
        if ex.success and ex.answer and ex.answer != "(no answer)":
            return ex.answer
    return None
