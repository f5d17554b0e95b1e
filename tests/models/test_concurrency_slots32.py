"""The adaptive in-flight limit against a 32-slot loopback engine: with defaults, at least 0.8x
the throughput of ``--max-concurrency 32`` over a thousand requests (the slot count is not
reported, so the limit has to find it)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_concurrency_adaptive import req, timed

from clstream.models.openai_compat import OpenAICompatModel

ENGINE = Path(__file__).with_name("loopback_engine.py")


@pytest.fixture(scope="module")
def engine_32() -> Iterator[str]:
    """A 32-slot engine in its own process, so its work does not share the test's GIL."""
    proc = subprocess.Popen([sys.executable, str(ENGINE), "--slots", "32", "--service", "0.1",
                             "--tokens", "4"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.kill()
        proc.wait()


def test_thirty_two_slots_reach_most_of_the_fixed_throughput(engine_32: str) -> None:
    requests = [req(f"p{i}") for i in range(1000)]
    _, fixed_s = timed(OpenAICompatModel("loop", base_url=engine_32, max_concurrency=32),
                       requests)
    model = OpenAICompatModel("loop", base_url=engine_32)
    results, adaptive_s = timed(model, requests)
    assert all(r.ok for r in results)
    assert fixed_s / adaptive_s >= 0.8, (fixed_s, adaptive_s, model.transport()["history"])
    assert max(limit for _, limit, _ in model.transport()["history"]) >= 32


