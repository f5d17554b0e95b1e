"""Model calls of the dataset stages that ``generate imprint --model`` runs, with their replies
cached in the dataset directory (docs/imprint.md §4.7).

The writer and the audits (:mod:`clstream.protocols.imprint.settings.writing`) send one request per item
and stage. Replies are kept in a JSON file keyed by a hash of (model name, messages, decoding
parameters), so generating the same dataset again -- or resuming one that was interrupted --
makes no call already answered; a failed request is left out and counted, never a crash.
Decoding is greedy (temperature 0), one sample, as the paper's writers and audits use one
reply per item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model
from clstream.core.errors import DataError
from clstream.core.files import write_atomic
from clstream.core.jsonio import load_json_file
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.protocols.imprint.settings import writing

CACHE_VERSION = "imprint-stage-cache-v1"
CACHE_NAME = "stage_cache.json"


@dataclass
class CachedCalls:
    """Cached, counted calls of one model: replies kept in ``cache_path`` under a hash of
    (model name, messages, decoding parameters), versioned by ``version`` so a file of another
    stage is refused, not misread. Every model-writing stage of ``generate imprint`` (news from
    articles, the code writer, the procedural worlds' writer and audits) calls through it."""

    model: Model
    cache_path: Path
    seed: int = 0
    version: str = CACHE_VERSION
    entries: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    hits: int = 0
    failed: int = 0

    def __post_init__(self) -> None:
        if not self.cache_path.exists():
            return
        raw = load_json_file(self.cache_path)
        if (not isinstance(raw, dict) or raw.get("version") != self.version
                or not isinstance(raw.get("entries"), dict)
                or not all(isinstance(v, str) for v in raw["entries"].values())):
            raise DataError(self.cache_path, None, "entries", f"not a {self.version} cache")
        self.entries = dict(raw["entries"])

    def greedy(self, key: str, stage: str, messages: tuple[Message, ...],
               max_tokens: int = 1024) -> GenerationRequest:
        """One greedy, one-sample request (the paper's writers and audits take one reply)."""
        return GenerationRequest(key=key, stage=stage, messages=messages, params=SamplingParams(
            temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=self.seed))

    def _hash(self, request: GenerationRequest) -> str:
        body = {"model": self.model.name, "messages": [m.model_dump() for m in request.messages],
                "params": request.params.model_dump(mode="json")}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    async def run(self, requests: Sequence[GenerationRequest]) -> dict[str, str]:
        """Reply text per request key; cached replies are reused, failed ones left out."""
        out: dict[str, str] = {}
        todo = []
        for request in requests:
            cached = self.entries.get(self._hash(request))
            if cached is None:
                todo.append(request)
            else:
                self.hits += 1
                out[request.key] = cached
        if todo:
            self.calls += len(todo)
            results = await self.model.generate(todo)
            for request, result in zip(todo, results, strict=True):
                if not result.ok or not result.samples:
                    self.failed += 1
                    continue
                self.entries[self._hash(request)] = result.samples[0].text
                out[request.key] = result.samples[0].text
            body = {"version": self.version, "entries": dict(sorted(self.entries.items()))}
            write_atomic(self.cache_path, json.dumps(body, indent=1, ensure_ascii=False) + "\n")
        return out

    def counts(self) -> dict[str, Any]:
        return {"model": self.model.name, "model_calls": self.calls, "cache_hits": self.hits,
                "failed_requests": self.failed}


def json_object(text: str) -> dict[str, Any] | None:
    """The reply's JSON object (code fences and text around the outermost braces ignored)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start:end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class StageCalls(CachedCalls):
    """The procedural worlds' writer and audits (:mod:`clstream.protocols.imprint.settings.writing`)."""

    def request(self, key: str, stage: str, payload: dict[str, Any]) -> GenerationRequest:
        return self.greedy(key, f"imprint-{stage}", writing.messages(stage, payload))
