"""Fields every protocol's records share: the model calls made while updating memory, the
finish reason and timing of each answer, and the count of answers cut by the token cap.

Answers cut by the token cap: a record keeps the finish reason of each of its samples
(:func:`finish_reasons`, payload field ``finish_reasons``) and a protocol's summary counts the
run's ``"length"`` finishes with :func:`cut_by_cap`, so a small model that loops until the cap
shows up at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from clstream.core.reader import ResultsReader
from clstream.core.types import GenerationResult
from clstream.store.db import Record


def call_records(
    results: Sequence[GenerationResult], stream: str, t: int, prefix: str
) -> list[Record]:
    """Records for model calls made while updating memory (their usage counts toward cost)."""
    return [
        Record(
            kind="call", key=f"{prefix}#{i}", stream=stream, t=t,
            payload={"texts": [s.text for s in r.samples]}, error=r.error, stage=r.stage,
            usage=r.usage, cache_hit=r.cache_hit, calls=(r,),
        )
        for i, r in enumerate(results)
    ]


def timing_fields(results: Sequence[GenerationResult]) -> dict[str, float]:
    """Time to first token and output tokens per second of the last of ``results`` (the
    answering call), for a record's payload; {} where the backend does not measure them."""
    last = results[-1] if results else None
    if last is None or last.first_token_s is None:
        return {}
    out = {"first_token_s": round(last.first_token_s, 4)}
    generating = last.usage.latency_s - last.first_token_s
    if generating > 0 and last.usage.completion_tokens > 0:
        out["output_tokens_per_s"] = round(last.usage.completion_tokens / generating, 2)
    return out


def finish_reasons(results: Sequence[GenerationResult]) -> list[str | None]:
    """The finish reason of every sample of ``results``, in order (None where not reported)."""
    return [s.finish_reason for r in results for s in r.samples]


def cut_by_cap(store: ResultsReader, run_id: str, kinds: Sequence[str]) -> int:
    """Samples of the run's successful records of ``kinds`` that stopped at the token cap."""
    total = 0
    for kind in kinds:
        for row in store.iter_records(run_id, kind, errors=False):
            if '"length"' in row["payload"]:
                reasons = json.loads(row["payload"]).get("finish_reasons") or ()
                total += sum(reason == "length" for reason in reasons)
    return total
