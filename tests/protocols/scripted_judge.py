"""A judge model for the imprint tests (docs/imprint.md §6.10): it replies, after a line of
reasoning, the verdict word of the first scripted key found in the answer under judgment, so a
test decides each verdict by what the answer says; with ``fail`` every call fails."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clstream.core.types import GenerationRequest, GenerationResult, Sample, Usage
from clstream.models.tokenizers import approx_tokenizer

ANSWER_HEADER = "Answer to check:\n"
"""What precedes the answer under judgment in every judge prompt."""


class ScriptedJudgeModel:
    """Replies ``<reasoning>\\n<word>``: the word of the first key of ``script`` found in the
    answer under judgment, ``default`` when none is; records every request."""

    name = "scripted-judge"

    def __init__(self, script: dict[str, str] | None = None, *, default: str = "NONMATCH",
                 fail: bool = False):
        self.script = dict(script or {})
        self.default, self.fail = default, fail
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests.extend(requests)
        out = []
        for r in requests:
            judged = r.messages[-1].content.split(ANSWER_HEADER, 1)[1]
            reply = next((v for k, v in self.script.items() if k in judged), self.default)
            out.append(GenerationResult(
                key=r.key, error="boom" if self.fail else None,
                samples=[] if self.fail else [Sample(text=f"Thinking.\n{reply}")],
                usage=Usage()))
        return out
