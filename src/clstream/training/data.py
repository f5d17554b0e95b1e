"""What a parametric method trains on (docs/parametric.md §1-2): plain text, trained with the
next-token loss over all of its tokens, and question-answer pairs, trained on the answer only.

:func:`examples_hash` is part of an artifact's name (docs/parametric.md §4), so it reads a
canonical JSON of every field: equal data gives an equal hash, whatever built it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from clstream.core.types import Message


@dataclass(frozen=True)
class TextExample:
    """Text trained with the next-token loss over all of its tokens (packed into blocks)."""

    text: str


@dataclass(frozen=True)
class PairExample:
    """A question and its answer, trained with the loss on the answer tokens only.

    ``messages`` are the prompt exactly as the method asks it when answering, so training and
    answering render the same tokens; ``context`` is privileged information (the source
    document) that only the SDFT teacher sees."""

    messages: tuple[Message, ...]
    answer: str
    context: str = ""


Example = TextExample | PairExample


def example_record(example: Example) -> dict[str, object]:
    """The canonical JSON form of one example (what :func:`examples_hash` reads)."""
    if isinstance(example, TextExample):
        return {"kind": "text", "text": example.text}
    return {
        "kind": "pair",
        "messages": [{"role": m.role, "content": m.content} for m in example.messages],
        "answer": example.answer,
        "context": example.context,
    }


def examples_hash(examples: Sequence[Example]) -> str:
    """sha256 hex of the examples' canonical JSON, in their order (order is training order)."""
    text = json.dumps([example_record(e) for e in examples], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
