"""The builtin model's side of the ``memagent`` method (docs/agentic.md §memagent): it writes
the new memory a rewrite request asks for (:mod:`clstream.systems.memagent.formats`).

The reply is extractive and deterministic, read from the prompt alone:

* Units. A text is read as units: a step block (:func:`clstream.core.layout.step_block`) or an
  experience block (``Past task:`` ... ``Feedback:``) is one unit, kept whole so the builtin
  policy and recall still read it from memory; any other text is split into sentences.
* Informative. A sentence of the new piece is kept when it holds a digit, names something
  after its first word (a capitalised word that is not a common sentence opener, as the
  builtin reader finds names), or states an event the reader recognises ("Mara went home.");
  filler such as "Somewhere beyond the marsh, a dog barked." is dropped. Blocks always count.
* Budget. The budget the prompt states (in tokens, as this model counts them) is honoured:
  first the new piece's informative units, newest first while they fit; then the old memory's
  units, newest first while they fit. The kept units are written in stream order (old, then
  new), one per paragraph, so "where is X" finds the latest move and repeated events still
  count. A block too large for the budget alone is read as sentences.

Nothing is merged or reworded: a real model may summarise; this one only selects, which is
enough for questions about recent facts to stay answerable from memory. The builtin model
reaches :func:`reply` through the registry (kind ``"builtin_reply"``, entry ``memagent``:
:func:`replier`), never by import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from clstream.core import layout
from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import Message
from clstream.models.builtin.reader import is_name, sentence_events, split_sentences, tokens_of
from clstream.models.tokenizers import approx_tokenizer
from clstream.systems.memagent import formats

_STEP_TAG = re.compile(r"^\[step \S+/\d+\]$")
_DIGIT = re.compile(r"\d")
SEPARATOR = "\n\n"


def reply(messages: Sequence[Message]) -> str | None:
    """The new memory for a rewrite request, else None (not this method's request)."""
    system = next((m.content for m in messages if m.role == "system"), "")
    user = [m.content for m in messages if m.role == "user"]
    if not user:
        return None
    rewrite = formats.read_rewrite(system, user[-1])
    if rewrite is None:
        return None
    return new_memory(rewrite.memory, rewrite.piece, rewrite.budget)



def replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: :func:`reply`, which needs no policy."""
    return reply

def new_memory(memory: str, piece: str, budget: int) -> str:
    """The memory kept (see the module docstring); :data:`~clstream.systems.memagent.formats.
    EMPTY_MEMORY` when nothing is."""
    count = approx_tokenizer().count
    fresh = [u for u in units(piece, budget) if is_informative(u)]
    kept_new, room = _latest_fitting(fresh, budget, count)
    kept_old, _ = _latest_fitting(units(memory, budget), room, count)
    kept = [*kept_old, *kept_new]
    text = SEPARATOR.join(kept)
    while kept and count(text) > budget:  # separators may cost tokens: drop the oldest
        kept.pop(0)
        text = SEPARATOR.join(kept)
    return text or formats.EMPTY_MEMORY


def _latest_fitting(units_: list[str], room: int, count: Callable[[str], int]
                    ) -> tuple[list[str], int]:
    """The most recent of ``units_`` that fit ``room`` tokens together, in their order (the
    first that does not fit stops the search), and the room left."""
    kept: list[str] = []
    for unit in reversed(units_):
        cost = count(unit)
        if cost > room:
            break
        kept.append(unit)
        room -= cost
    return kept[::-1], room


def is_informative(unit: str) -> bool:
    """A block; a sentence holding a digit or a name after its first word; or one whose
    opening name the reader finds an event for ("Mara went home.")."""
    if "\n" in unit:  # only blocks span lines
        return True
    return bool(_DIGIT.search(unit)) or any(is_name(t) for t in tokens_of(unit)[1:]) or \
        bool(sentence_events(unit, {}))


def units(text: str, budget: int) -> list[str]:
    """The units of ``text`` in order (see the module docstring); a block larger than
    ``budget`` tokens is split into sentences."""
    lines = text.strip().split("\n") if text.strip() else []
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            out.extend(split_sentences("\n".join(prose)))
            prose.clear()

    i = 0
    while i < len(lines):
        size = _block_size(lines, i)
        if size:
            block = "\n".join(lines[i:i + size])
            if approx_tokenizer().count(block) <= budget:
                flush()
                out.append(block)
            else:
                prose.extend(lines[i:i + size])
            i += size
            continue
        prose.append(lines[i])
        i += 1
    flush()
    return out


def _block_size(lines: list[str], i: int) -> int:
    """The number of lines of the step or experience block starting at line ``i`` (0 when no
    complete block starts there)."""
    if _STEP_TAG.match(lines[i]):
        steps = layout.parse_steps("\n".join(lines[i:]))
        if not steps:
            return 0
        step = steps[0]
        rendered = layout.step_block(step.instance_id, step.step, step.observation,
                                     step.action, step.feedback)
        block = rendered.split("\n")
        return len(block) if lines[i:i + len(block)] == block else 0
    if lines[i].startswith(layout.TASK_LABEL):
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(layout.FEEDBACK_LABEL):
                return j - i + 1
            if lines[j].startswith(layout.TASK_LABEL):
                return 0
    return 0
