"""What every ImprintBench judge shares (docs/imprint.md §6): the verdict, the item fields a
judge reads, the error a failed judge model raises, and the reading of an output (a leading
``<think>`` block dropped, the text after the last answer marker). :mod:`.judging` describes
the rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from clstream.core.errors import ClstreamError
from clstream.core.layout import final_answer_text


class JudgeError(ClstreamError):
    """A judge model could not give a verdict (its call failed)."""


class ImprintItem(Protocol):
    """The fields of an ImprintBench item the judges read (the dataset schema's ``Item``)."""

    @property
    def item_id(self) -> str: ...

    @property
    def setting(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def judge(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def golds(self) -> list[str]: ...

    @property
    def stale_golds(self) -> list[str]: ...

    @property
    def options(self) -> list[str]: ...


@dataclass(frozen=True)
class Verdict:
    """One judged sample: whether it is correct, the judge's label and why.

    ``verdict`` is the judge's own label (the yes/no token read, ``abstain``/``answer``,
    ``match``/``mismatch``/``hedged``/``none``, the letter, ``stale``, or the LLM judge's
    MATCH / NONMATCH / REFUSAL / Y / N / YES / NO). LLM verdicts also carry the judge model and
    prompt hash. ``error`` is set when the judge gave no verdict at all (a reply that does not
    end in a verdict word): the sample is then an error, never a wrong answer, and
    ``correct`` means nothing.
    """

    correct: bool
    verdict: str
    judge: str
    detail: str
    judge_model: str | None = None
    judge_prompt_hash: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"correct": self.correct, "verdict": self.verdict,
                               "judge": self.judge, "detail": self.detail}
        if self.judge_model is not None:
            out["judge_model"] = self.judge_model
            out["judge_prompt_hash"] = self.judge_prompt_hash
        if self.error is not None:
            out["error"] = self.error
        return out


# ----------------------------------------------------------------------------- reading

_THINK_OPEN = re.compile(r"^\s*<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_ANSWER_MARKER = re.compile(r"""["'*#]*\s*answer\s*["'*#]*\s*:""", re.IGNORECASE)


def strip_think(output: str) -> str:
    """The output without its leading reasoning block (module docstring)."""
    close = _THINK_CLOSE.search(output)
    if _THINK_OPEN.match(output):
        return output[close.end():].strip() if close else ""
    if close and "<think>" not in output[:close.start()].lower():
        return output[close.end():].strip()
    return output.strip()


def answer_text(output: str) -> str:
    """The judged text: after the think block, what the last answer marker introduces."""
    return final_answer_text(strip_think(output))


def answer_region(output: str) -> str:
    """Everything after the last answer marker (all lines), else the whole rest; lists span
    lines, so the list judge reads this."""
    rest = strip_think(output)
    markers = list(_ANSWER_MARKER.finditer(rest))
    if markers:
        tail = rest[markers[-1].end():].strip()
        if tail:
            return tail
    return rest


def fold_quotes(text: str) -> str:
    """Curly apostrophes read as straight ones, so "don’t know" matches "don't know"."""
    return text.replace("\u2019", "'").replace("\u2018", "'")
