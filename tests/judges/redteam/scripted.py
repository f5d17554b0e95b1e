"""A scripted model for the red-team run: it answers each code task with the program its
prompt names (``case: NAME``), in a fenced block, as a model would."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from clstream.core.types import GenerationRequest, GenerationResult, Sample, Usage
from clstream.models.tokenizers import approx_tokenizer

PROGRAMS: dict[str, str] = {}  # case name -> program; filled by the test
_CASE = re.compile(r"case: (\S+)")


class ScriptedModel:
    summary: ClassVar[str] = "answers each task with the program its prompt names (tests only)"
    params: ClassVar[dict[str, Any]] = {}
    name = "scripted"

    def __init__(self, target: str | None = None, **kwargs: Any):
        self.tokenizer = approx_tokenizer()

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name, "version": "1"}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        results = []
        for request in requests:
            cases = _CASE.findall(request.prompt_text)
            program = PROGRAMS[cases[-1]] if cases else "pass\n"
            # the prose carries a lone surrogate, as broken model output can
            text = f"Here is my solution \ud800.\n```python\n{program}```\n"
            results.append(GenerationResult(
                key=request.key,
                samples=[Sample(text=text, finish_reason="stop")] * request.params.n,
                usage=Usage(prompt_tokens=self.tokenizer.count(request.prompt_text),
                            completion_tokens=self.tokenizer.count(text)),
                stage=request.stage))
        return results
