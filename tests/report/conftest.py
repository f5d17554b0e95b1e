"""A realistic ``clstream summary --json`` dict: three scored OAKS systems and one unscored run."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

N_INTERVALS = 12


def _oaks_metrics(
    acc: float, al: float, ds: float, change: list[float], stay: list[float], slope: float
) -> dict[str, Any]:
    pm = round(1.0 - acc - al - ds, 6)
    names_change = ["adaptability", "maladaptation", "prescience", "stubbornness"]
    names_stay = ["lag", "volatility", "stability", "obstinacy"]
    curve = [
        round(min(1.0, max(0.0, acc + slope * (5.5 - t) + 0.03 * math.sin(t))), 4)
        for t in range(N_INTERVALS)
    ]
    return {
        "n_questions": 240,
        "accuracy": acc,
        "acquisition_latency": al,
        "distraction_susceptibility": ds,
        "phase_miss": pm,
        "transitions": dict(zip(names_change + names_stay, change + stay, strict=True)),
        "by_type": {
            "tracking": {"accuracy": round(acc + 0.08, 4), "n_questions": 80},
            "counting": {"accuracy": round(acc - 0.11, 4), "n_questions": 70},
            "bridge": {"accuracy": round(acc - 0.05, 4), "n_questions": 50},
            "comparison": {"accuracy": round(acc + 0.02, 4), "n_questions": 40},
        },
        "by_subset": {
            "sparse": {"accuracy": round(acc + 0.06, 4), "n_questions": 120},
            "moderate": {"accuracy": round(acc - 0.02, 4), "n_questions": 80},
            "frequent": {"accuracy": round(acc - 0.09, 4), "n_questions": 40},
        },
        "accuracy_by_interval": curve,
    }


def _run(
    run_id: str,
    system: str,
    metrics: dict[str, Any] | None,
    done: int,
    tokens: dict[str, int],
    wall: float,
    ci_width: float,
) -> dict[str, Any]:
    ci = None
    if metrics is not None:
        ci = {
            k: [
                round(max(0.0, metrics[k] - ci_width), 4),
                round(min(1.0, metrics[k] + ci_width), 4),
            ]
            for k in ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss")
        }
    total = 240 * N_INTERVALS
    return {
        "run_id": run_id,
        "protocol": "oaks",
        "system": system,
        "model": "builtin",
        "model_info": {"backend": "builtin", "baseline": True, "name": "builtin-reader"},
        "dataset": {
            "path": "data/oaks-babi-small.json",
            "sha256": "9f2c4e1ab07d3c55e8a1f0b2c6d4e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8",
            "n_documents": 20,
            "n_questions": 240,
            "n_intervals": N_INTERVALS,
        },
        "status": {
            "probes_done": done,
            "probes_total": total,
            "errors": 0 if done else 3,
            "complete": done == total,
        },
        "metrics": metrics,
        "ci": ci,
        "tokens": tokens,
        "cost_usd": None,
        "wall_s": wall,
        "meta": {
            "clstream_version": "0.1.0",
            "prompt_template_hash": "a41c9d02e7b5f3186c2d",
            "spec": {"protocol": "oaks", "system": {"name": system}},
            "seed": 0,
        },
    }


def make_summary() -> dict[str, Any]:
    full = _oaks_metrics(
        0.412, 0.173, 0.121, [0.38, 0.17, 0.09, 0.36], [0.04, 0.07, 0.71, 0.18], 0.02
    )
    window = _oaks_metrics(
        0.305, 0.142, 0.208, [0.44, 0.21, 0.05, 0.30], [0.06, 0.14, 0.55, 0.25], 0.0
    )
    rag = _oaks_metrics(
        0.527, 0.118, 0.094, [0.49, 0.13, 0.11, 0.27], [0.03, 0.05, 0.79, 0.13], 0.015
    )
    runs = [
        _run(
            "3fa9c1d2e4b5a601",
            "full",
            full,
            2880,
            {"prompt": 18_734_112, "cached": 0, "completion": 96_410, "reasoning": 0},
            812.4,
            0.032,
        ),
        _run(
            "7be0d4c3a2f19e08",
            "window:w=4",
            window,
            2880,
            {"prompt": 4_120_508, "cached": 0, "completion": 95_877, "reasoning": 0},
            204.9,
            0.035,
        ),
        _run(
            "c51e22ab90d7f3e4",
            "rag:k=8",
            rag,
            2880,
            {"prompt": 6_903_245, "cached": 0, "completion": 96_102, "reasoning": 0},
            331.0,
            0.031,
        ),
        _run(
            "0d8e6f7a1b2c3d4e",
            "rag+window:k=8,w=4",
            None,
            0,
            {"prompt": 0, "cached": 0, "completion": 0, "reasoning": 0},
            1.2,
            0.0,
        ),
    ]
    return {
        "dir": "results/oaks-demo",
        "generated_at": "2025-06-01T12:00:00+00:00",
        "clstream_version": "0.1.0",
        "runs": runs,
    }


@pytest.fixture
def summary() -> dict[str, Any]:
    return copy.deepcopy(make_summary())
