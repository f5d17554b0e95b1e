"""The no-context option-bias audit without a model (ImprintBench App. D.3, item 8;
docs/imprint.md §4.5).

The paper runs its multiple-choice persona items (CompRel, ImpRel) past a model that sees the
options but neither the history nor the facts, and rejects the items it solves: an item whose
options give the answer away measures nothing about memory. This module is that audit's
deterministic counterpart, run on every generated item. Each strategy below reads only the
question and the options and picks one option, or none when its best options tie:

* ``slot_majority`` -- for a bundle of one recommendation per fact (CompRel), the option whose
  slots are the most frequent choice per slot. A truth table whose distractors each violate a
  single fact (TTT, FTT, TFT, TTF) is solved by it every time: every slot's true value is the
  majority;
* ``shared_words`` -- the option sharing most content words with the other options (the
  "centre" of the set, the usual tell of options written as variations of the answer);
* ``question_words`` -- the option sharing most content words with the question.

An item is solvable from its options when some strategy picks its gold. Length (the longest
or the shortest option) is a tell only on average; the tests check it over the dataset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from clstream.protocols.imprint.settings.persona.catalogue import content_words

LETTERS = "ABCDEFGH"


def _unique_best(scores: Sequence[float]) -> int | None:
    best = max(scores)
    top = [i for i, s in enumerate(scores) if s == best]
    return top[0] if len(top) == 1 else None


def option_only_picks(question: str, options: Sequence[str],
                      slots: Sequence[Sequence[str]] | None = None) -> dict[str, str]:
    """The letter each options-only strategy picks (module docstring); strategies whose best
    options tie are left out. ``slots`` holds, per option, the value chosen for each slot."""
    picks: dict[str, int | None] = {}
    if slots:
        counts = [Counter(row[k] for row in slots) for k in range(len(slots[0]))]
        picks["slot_majority"] = _unique_best(
            [sum(counts[k][v] for k, v in enumerate(row)) for row in slots])
    words = [content_words(o) for o in options]
    picks["shared_words"] = _unique_best(
        [sum(len(w & other) for j, other in enumerate(words) if j != i)
         for i, w in enumerate(words)])
    asked = content_words(question)
    picks["question_words"] = _unique_best([len(w & asked) for w in words])
    return {name: LETTERS[i] for name, i in picks.items() if i is not None}


def solved_by(question: str, options: Sequence[str], gold: str,
              slots: Sequence[Sequence[str]] | None = None) -> list[str]:
    """The options-only strategies that pick ``gold`` (empty: the item survives the audit)."""
    return sorted(name for name, letter in option_only_picks(question, options, slots).items()
                  if letter == gold)
