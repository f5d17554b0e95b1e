"""Dollar cost of model calls from token usage (CL-Bench reports cost per run and Pareto views
of reward against cost, docs/clbench.md §5.8; SeqMem-Eval reports total tokens, docs/seqmem.md §5.11).

A prices file maps model names (as a run records them, e.g. ``openai:my-model``) to dollars per
million tokens, in JSON or TOML (chosen by the ``.toml`` suffix)::

    {"openai:my-model": {"prompt": 0.5, "cached": 0.05, "completion": 1.5, "reasoning": 1.5}}

``prompt`` and ``completion`` are required; ``cached`` defaults to the prompt rate and
``reasoning`` to the completion rate.

Billing convention (the OpenAI usage convention, which vLLM and SGLang follow): cached tokens are
a part of the prompt tokens and reasoning tokens a part of the completion tokens. So

    cost = (prompt - cached) * prompt_rate + cached * cached_rate
         + (completion - reasoning) * completion_rate + reasoning * reasoning_rate

all divided by one million. Usage totals may be keyed ``prompt_tokens``/``cached_tokens``/...
(:class:`Usage` field names) or ``prompt``/``cached``/... (the price file's names).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError
from clstream.core.jsonio import decode_utf8, loads_json_bytes, read_file_bytes
from clstream.core.types import GenerationResult, Usage

RATE_FIELDS = ("prompt", "cached", "completion", "reasoning")
REQUIRED_RATES = ("prompt", "completion")
TOKEN_FIELDS = ("prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens")


def _read(path: Path) -> Any:
    raw = read_file_bytes(path)
    if path.suffix.lower() != ".toml":
        try:
            return loads_json_bytes(raw, path)
        except DataError as exc:
            if not exc.problem.startswith("invalid JSON"):
                raise
            raise DataError(path, None, None,
                            "not valid JSON" + exc.problem.removeprefix("invalid JSON")) from None
    text = decode_utf8(raw, path)
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # ValueError: an over-long integer
        raise DataError(path, None, None, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise DataError(path, None, None, "not valid TOML: nested too deeply") from None


MOST_DOLLARS_PER_MILLION = 1_000_000.0
"""The highest rate a prices file may give: a dollar a token, far above any model's, and low
enough that no run's cost (tokens below 2**63) overflows a float to Infinity."""


def _rate(path: Path, model: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(path, model, name, f"must be a number of dollars, got {value!r}")
    if not math.isfinite(value) or not 0 <= value <= MOST_DOLLARS_PER_MILLION:
        shown = repr(value) if abs(value) < 1e24 else "a larger number"
        raise DataError(path, model, name, f"must be a finite number in [0, "
                                           f"{MOST_DOLLARS_PER_MILLION:,.0f}] (dollars per "
                                           f"million tokens), got {shown}")
    return float(value)


def load_prices(path: str | Path) -> dict[str, dict[str, float]]:
    """Read and validate a prices file; every entry comes back with all four rates filled in."""
    path = Path(path)
    data = _read(path)
    if not isinstance(data, dict) or not data:
        raise DataError(path, None, None, "must be a non-empty object mapping model names to rates")
    prices: dict[str, dict[str, float]] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict):
            raise DataError(path, model, None, "must be an object of rates per million tokens")
        unknown = sorted(set(entry) - set(RATE_FIELDS))
        if unknown:
            raise DataError(
                path, model, unknown[0], f"unknown rate (known: {', '.join(RATE_FIELDS)})"
            )
        for name in REQUIRED_RATES:
            if name not in entry:
                raise DataError(path, model, name, "missing")
        rates = {name: _rate(path, model, name, entry[name]) for name in entry}
        rates.setdefault("cached", rates["prompt"])
        rates.setdefault("reasoning", rates["completion"])
        prices[model] = {name: rates[name] for name in RATE_FIELDS}
    return prices


def usage_totals(
    results: Iterable[GenerationResult], include_cache_hits: bool = True
) -> dict[str, int]:
    """Summed token counts of ``results`` (the input of :func:`cost_usd`).

    With ``include_cache_hits`` (the default) replayed results count as what the run cost when
    first paid for, so a resumed run reports the same cost; without it, only tokens paid for now.
    """
    total = Usage()
    for result in results:
        if include_cache_hits or not result.cache_hit:
            total = total + result.usage
    return {name: getattr(total, name) for name in TOKEN_FIELDS}


def _counts(totals: Mapping[str, Any]) -> dict[str, int]:
    """Token counts keyed ``prompt_tokens`` (as in :class:`Usage`) or ``prompt`` (as in the
    results store's per-stage totals); other keys (latency, record counts) are not tokens."""
    counts: dict[str, int] = {}
    for name in TOKEN_FIELDS:
        short = name.removesuffix("_tokens")
        if name in totals and short in totals:
            raise ValueError(f"usage totals give both {name!r} and {short!r}")
        value = totals.get(name, totals.get(short, 0))
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ValueError(f"usage total {name!r} must be a whole number, got {value!r}")
        counts[name] = int(value)
    return counts


def cost_usd(usage_totals: Mapping[str, int] | Usage, price: Mapping[str, float]) -> float:
    """Dollars for ``usage_totals`` at ``price`` (rates per million tokens, see module docs)."""
    if isinstance(usage_totals, Usage):
        counts: dict[str, int] = {name: getattr(usage_totals, name) for name in TOKEN_FIELDS}
    else:
        counts = _counts(usage_totals)
    if any(v < 0 for v in counts.values()):
        raise ValueError(f"token counts must be >= 0, got {counts}")
    if counts["cached_tokens"] > counts["prompt_tokens"]:
        raise ValueError("cached_tokens exceed prompt_tokens; cached tokens are part of the prompt")
    if counts["reasoning_tokens"] > counts["completion_tokens"]:
        raise ValueError(
            "reasoning_tokens exceed completion_tokens; reasoning tokens are part of the completion"
        )
    for name in REQUIRED_RATES:
        if name not in price:
            raise ValueError(f"price has no {name!r} rate")
    prompt_rate = float(price["prompt"])
    completion_rate = float(price["completion"])
    cached_rate = float(price.get("cached", prompt_rate))
    reasoning_rate = float(price.get("reasoning", completion_rate))
    dollars = (
        (counts["prompt_tokens"] - counts["cached_tokens"]) * prompt_rate
        + counts["cached_tokens"] * cached_rate
        + (counts["completion_tokens"] - counts["reasoning_tokens"]) * completion_rate
        + counts["reasoning_tokens"] * reasoning_rate
    )
    return dollars / 1_000_000
