"""The adaptive in-flight limit against a 32-slot loopback engine: with defaults, a thousand
requests all answered and the limit reaching the 32 slots (the slot count is not reported, so
the limit has to find it). Its throughput against ``--max-concurrency 32`` is measured by
``benchmarks/bench_concurrency.py``, not asserted here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_concurrency_adaptive import generated, req

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


def test_thirty_two_slots_answer_everything_and_the_limit_reaches_them(engine_32: str) -> None:
    requests = [req(f"p{i}") for i in range(1000)]
    model = OpenAICompatModel("loop", base_url=engine_32)
    results = generated(model, requests)
    assert all(r.ok for r in results), next(r.error for r in results if not r.ok)
    assert [r.key for r in results] == [r.key for r in requests]
    history = model.transport()["history"]
    assert max(limit for _, limit, _ in history) >= 32, history


