"""What a planned run costs: requests, tokens, prefill after prefix caching, time and money
(docs/plan.md §3).

Given the requests of a dry run in send order (:class:`~clstream.models.planning.
PlannedRequest`), :func:`figures` totals them per run and for the whole plan:

* ``requests`` and ``prompt_tokens``, also by stage;
* ``prefill_tokens``: the prompts replayed in send order through one simulated block prefix
  cache (:mod:`clstream.models.prefix_cache_sim`) shared by every run of the plan, as one
  server serves them one after another: ``computed`` is what a cache of ``cache_tokens``
  computes (unbounded by default), ``lower_bound`` what a cache that never evicts computes
  (distinct full blocks plus every prompt's partial tail); a run's share of ``lower_bound`` is
  the distinct blocks it adds;
* ``completion_tokens``: ``max`` (each request's ``max_tokens`` x ``n``, a bound) and
  ``expected`` (the builtin reader's replies, an estimate only; where only a sample of a run's
  replies was read, :class:`~clstream.models.planning.ReplySample`, the sample's total scaled
  to all the run's requests, and the plan's the sum of its runs').

:func:`time_s` and :func:`cost_usd` turn those into seconds at given throughputs and dollars at
given prices; both come as ``max`` (completions at their bound) and ``expected``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from clstream.models import planning
from clstream.models.planning import PlannedRequest
from clstream.models.prefix_cache_sim import UNBOUNDED, PrefixCacheSim
from clstream.models.pricing import cost_usd as priced

BLOCK_SIZE = planning.BLOCK_SIZE
"""Tokens per cached block (vLLM's default), the block size the planning model hashes in."""
UNBOUNDED_BLOCKS = UNBOUNDED


def capacity_blocks(cache_tokens: int | None, block_size: int = BLOCK_SIZE) -> int:
    """The simulated cache's size in blocks (``cache_tokens`` rounded down, at least one)."""
    return UNBOUNDED_BLOCKS if cache_tokens is None else max(1, cache_tokens // block_size)


def _totals(requests: Sequence[PlannedRequest], computed: int, lower_bound: int
            ) -> dict[str, Any]:
    stages: Counter[str] = Counter()
    stage_tokens: Counter[str] = Counter()
    for request in requests:
        stages[request.stage] += 1
        stage_tokens[request.stage] += request.prompt_tokens
    read = [r.expected_completion_tokens for r in requests
            if r.expected_completion_tokens is not None]
    expected = sum(read) if len(read) == len(requests) else (
        round(sum(read) * len(requests) / len(read)) if read else 0)
    return {
        "requests": len(requests),
        "requests_by_stage": dict(sorted(stages.items())),
        "prompt_tokens": sum(r.prompt_tokens for r in requests),
        "prompt_tokens_by_stage": dict(sorted(stage_tokens.items())),
        "prefill_tokens": {"computed": computed, "lower_bound": lower_bound},
        "completion_tokens": {"max": sum(r.max_completion_tokens for r in requests),
                              "expected": expected},
    }


def figures(runs: Sequence[Sequence[PlannedRequest]], cache_tokens: int | None = None,
            block_size: int = BLOCK_SIZE) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The totals of each run (in order) and of them all (module docstring). The planning
    model hashes prompts in blocks of :data:`~clstream.models.planning.BLOCK_SIZE`, the only
    ``block_size`` its requests can be replayed with; a prompt given as tokens takes any."""
    sim = PrefixCacheSim(capacity_blocks(cache_tokens, block_size), block_size)
    per_run = []
    for requests in runs:
        before = sim.stats().lower_bound_tokens
        computed = sum(sim.add(r.prompt) for r in requests)
        per_run.append(_totals(requests, computed, sim.stats().lower_bound_tokens - before))
    every = [r for requests in runs for r in requests]
    stats = sim.stats()
    total = _totals(every, stats.computed_tokens, stats.lower_bound_tokens)
    total["completion_tokens"]["expected"] = sum(
        run["completion_tokens"]["expected"] for run in per_run)
    return per_run, total


def time_s(totals: Mapping[str, Any], prefill_tps: float, decode_tps: float
           ) -> dict[str, float]:
    """Seconds to prefill the computed prompt tokens and decode the completion tokens, one
    after the other, at the given tokens per second (``max`` and ``expected``)."""
    prefill = totals["prefill_tokens"]["computed"] / prefill_tps
    completion = totals["completion_tokens"]
    return {"prefill": prefill,
            "max": prefill + completion["max"] / decode_tps,
            "expected": prefill + completion["expected"] / decode_tps}


def cost_usd(totals: Mapping[str, Any], price: Mapping[str, float]) -> dict[str, float]:
    """Dollars at ``price`` (rates per million tokens, :mod:`clstream.models.pricing`): prompt
    tokens the simulated cache served are billed at the cached rate, the computed ones at the
    prompt rate, completions at the completion rate (``max`` and ``expected``)."""
    prompt = int(totals["prompt_tokens"])
    cached = max(0, prompt - int(totals["prefill_tokens"]["computed"]))
    completion = totals["completion_tokens"]
    return {which: priced({"prompt_tokens": prompt, "cached_tokens": cached,
                           "completion_tokens": int(completion[which])}, price)
            for which in ("max", "expected")}


def positive_rate(flag: str, value: float | None) -> float | None:
    """A throughput given on the command line: finite and > 0 (None: not given)."""
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise ValueError(f"flag {flag}: must be a number > 0, got {value}")
    return value
