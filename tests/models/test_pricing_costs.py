"""Prices files and the cost convention (cached within prompt, reasoning within completion)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.core.types import GenerationResult, Usage
from clstream.models.pricing import cost_usd, load_prices, usage_totals


def write(tmp_path: Path, data: object, name: str = "prices.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_json_prices_fill_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "openai:a": {"prompt": 0.5, "cached": 0.05, "completion": 1.5, "reasoning": 2},
            "openai:b": {"prompt": 1, "completion": 3},
        },
    )
    prices = load_prices(path)
    assert prices["openai:a"] == {
        "prompt": 0.5,
        "cached": 0.05,
        "completion": 1.5,
        "reasoning": 2.0,
    }
    assert prices["openai:b"] == {"prompt": 1.0, "cached": 1.0, "completion": 3.0, "reasoning": 3.0}


def test_toml_prices(tmp_path: Path) -> None:
    path = write(
        tmp_path, '["openai:m"]\nprompt = 0.2\ncompletion = 0.8\ncached = 0.1\n', name="prices.toml"
    )
    assert load_prices(path) == {
        "openai:m": {"prompt": 0.2, "cached": 0.1, "completion": 0.8, "reasoning": 0.8}
    }


@pytest.mark.parametrize(
    "data,record,field",
    [
        ({"openai:m": {"prompt": 1}}, "openai:m", "completion"),
        ({"openai:m": {"completion": 1}}, "openai:m", "prompt"),
        ({"openai:m": {"prompt": -1, "completion": 1}}, "openai:m", "prompt"),
        ({"openai:m": {"prompt": "cheap", "completion": 1}}, "openai:m", "prompt"),
        ({"openai:m": {"prompt": 1, "completion": True}}, "openai:m", "completion"),
        ({"openai:m": {"prompt": 1, "completion": 1, "output": 2}}, "openai:m", "output"),
        ({"openai:m": 3}, "openai:m", None),
        ([1, 2], None, None),
        ({}, None, None),
    ],
)
def test_bad_prices_name_file_model_and_field(
    tmp_path: Path, data: object, record: str | None, field: str | None
) -> None:
    path = write(tmp_path, data)
    with pytest.raises(DataError) as info:
        load_prices(path)
    err = info.value
    assert (err.path, err.record, err.field) == (path, record, field)
    assert str(path) in str(err) and "\n" not in str(err)


def test_unreadable_or_invalid_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not valid JSON"):
        load_prices(write(tmp_path, "{not json"))
    with pytest.raises(DataError, match="not valid TOML"):
        load_prices(write(tmp_path, "= = =", name="p.toml"))
    with pytest.raises(DataError, match="cannot read"):
        load_prices(tmp_path / "missing.json")


def test_cost_convention() -> None:
    price = {"prompt": 2.0, "cached": 0.5, "completion": 10.0, "reasoning": 20.0}
    totals = {
        "prompt_tokens": 1_000_000,
        "cached_tokens": 400_000,
        "completion_tokens": 300_000,
        "reasoning_tokens": 100_000,
    }
    # 600k uncached * 2 + 400k cached * 0.5 + 200k answer * 10 + 100k reasoning * 20 (per 1M)
    assert cost_usd(totals, price) == pytest.approx(1.2 + 0.2 + 2.0 + 2.0)


def test_cost_defaults_and_usage_objects() -> None:
    usage = Usage(
        prompt_tokens=500_000,
        cached_tokens=100_000,
        completion_tokens=50_000,
        reasoning_tokens=20_000,
    )
    assert cost_usd(usage, {"prompt": 1.0, "completion": 4.0}) == pytest.approx(0.5 + 0.2)
    assert cost_usd({}, {"prompt": 1.0, "completion": 4.0}) == 0.0


def test_cost_accepts_short_token_names() -> None:
    price = {"prompt": 2.0, "cached": 0.5, "completion": 10.0, "reasoning": 20.0}
    long = {"prompt_tokens": 9, "cached_tokens": 4, "completion_tokens": 7, "reasoning_tokens": 3}
    short: dict[str, Any] = {"prompt": 9, "cached": 4, "completion": 7, "reasoning": 3, "latency_s": 1.5}
    assert (
        cost_usd(short, price)
        == cost_usd(long, price)
        == pytest.approx((5 * 2.0 + 4 * 0.5 + 4 * 10.0 + 3 * 20.0) / 1e6)
    )
    with pytest.raises(ValueError, match="both"):
        cost_usd({"prompt": 1, "prompt_tokens": 1}, price)


@pytest.mark.parametrize(
    "totals",
    [
        {"prompt_tokens": 5, "cached_tokens": 6},
        {"completion_tokens": 1, "reasoning_tokens": 2},
        {"prompt_tokens": -1},
        {"prompt_tokens": 1.5},
    ],
)
def test_inconsistent_totals_are_refused(totals: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        cost_usd(totals, {"prompt": 1.0, "completion": 1.0})


def test_usage_totals_with_and_without_cache_hits() -> None:
    fresh = GenerationResult(
        key="a",
        usage=Usage(prompt_tokens=10, completion_tokens=5, reasoning_tokens=2, cached_tokens=4),
    )
    replay = GenerationResult(
        key="b", usage=Usage(prompt_tokens=7, completion_tokens=3), cache_hit=True
    )
    assert usage_totals([fresh, replay]) == {
        "prompt_tokens": 17,
        "cached_tokens": 4,
        "completion_tokens": 8,
        "reasoning_tokens": 2,
    }
    assert usage_totals([fresh, replay], include_cache_hits=False)["prompt_tokens"] == 10
