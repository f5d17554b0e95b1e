"""Wall time of the adaptive in-flight limit against ``--max-concurrency`` set to the slot
count, on loopback engines with a queue in front of their slots (docs/design.md's transport).

Two engines (``tests/models/loopback_engine.py``), each timed first with the fixed limit and
then with the defaults (the limit has to find the slots: neither engine reports them):

- **1 slot, long answers**: 30 requests of 0.03 s, every tenth taking 0.5 s, over three times
  the 0.15 s request timeout; target: the adaptive run within 1.25x the fixed one's wall time.
- **32 slots**: 1,000 requests of 0.1 s, the engine in its own process so its work does not
  share this process's GIL; target: the adaptive run at least 0.8x the fixed one's throughput,
  its limit reaching 32.

Both runs of a row must finish with every request answered; "peak limit" is the highest the
adaptive limit went. Wall times on a busy machine are noisy; medians of ``--repeats``.

    .venv/bin/python benchmarks/bench_concurrency.py [--repeats 3] [--readme]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from cli_timing import machine, markdown_table, write_section

from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.openai_compat import OpenAICompatModel

MODELS = Path(__file__).resolve().parents[1] / "tests" / "models"
sys.path.insert(0, str(MODELS))
from loopback_engine import LoopbackEngine  # noqa: E402


def req(key: str, long: bool = False) -> GenerationRequest:
    text = f"probe {key}" + (" #long" if long else "")
    return GenerationRequest(key=key, messages=(Message(role="user", content=text),),
                             params=SamplingParams())


def timed(model: OpenAICompatModel, requests: Sequence[GenerationRequest]) -> tuple[float, int]:
    """Wall seconds of one run and its peak in-flight limit; every request must succeed."""
    async def go() -> None:
        async with model:
            results = await model.generate(requests)
        failed = [r.error for r in results if not r.ok]
        if failed:
            raise SystemExit(f"{len(failed)} requests failed, e.g. {failed[0]}")

    start = time.perf_counter()
    asyncio.run(go())
    seconds = time.perf_counter() - start
    return seconds, max(limit for _, limit, _ in model.transport()["history"])


@contextmanager
def engine_32() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(MODELS / "loopback_engine.py"), "--slots",
                             "32", "--service", "0.1", "--tokens", "4"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.kill()
        proc.wait()


def compare(url: str, requests: Sequence[GenerationRequest], slots: int, repeats: int,
            request_timeout: float = 120.0) -> tuple[float, float, int]:
    """Median wall seconds with the fixed limit and with the adaptive one, and the adaptive
    limit's peak (the highest over the repeats)."""
    fixed: list[float] = []
    adaptive: list[float] = []
    peak = 0
    for _ in range(repeats):
        fixed.append(timed(OpenAICompatModel("loop", base_url=url, max_concurrency=slots,
                                             request_timeout=request_timeout), requests)[0])
        seconds, top = timed(OpenAICompatModel("loop", base_url=url,
                                               request_timeout=request_timeout), requests)
        adaptive.append(seconds)
        peak = max(peak, top)
    return statistics.median(fixed), statistics.median(adaptive), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    rows: list[list[object]] = []
    one_slot = [req(f"k{i}", long=i % 10 == 3) for i in range(30)]
    with LoopbackEngine(slots=1, service_s=0.03, long_s=0.5, tokens=6) as engine:
        fixed_s, adaptive_s, peak = compare(engine.base_url, one_slot, 1, args.repeats,
                                            request_timeout=0.15)
    ratio = adaptive_s / fixed_s
    rows.append(["1 slot, long answers", len(one_slot), f"{fixed_s:.2f}", f"{adaptive_s:.2f}",
                 peak, f"adaptive/fixed wall {ratio:.2f}",
                 "met" if ratio <= 1.25 else "missed (<= 1.25)"])
    print("  ".join(str(c) for c in rows[-1]), flush=True)
    many = [req(f"p{i}") for i in range(1000)]
    with engine_32() as url:
        fixed_s, adaptive_s, peak = compare(url, many, 32, args.repeats)
    ratio = fixed_s / adaptive_s
    met = ratio >= 0.8 and peak >= 32
    rows.append(["32 slots", len(many), f"{fixed_s:.2f}", f"{adaptive_s:.2f}", peak,
                 f"adaptive/fixed throughput {ratio:.2f}",
                 "met" if met else "missed (>= 0.8, peak >= 32)"])
    print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(["engine", "requests", "fixed wall s", "adaptive wall s",
                            "peak limit", "ratio", "target"], rows, align="lrrrrll")
    text = f"Machine: {machine()}. Medians of {args.repeats} runs.\n\n{table}"
    print(text)
    if args.readme:
        write_section("concurrency", text)


if __name__ == "__main__":
    main()
