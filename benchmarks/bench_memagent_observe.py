"""The cost of one ``memagent`` observe at event 10, 100 and 1,000 of a stream of bAbI-style
chunks (~500 tokens each), with the builtin model and the default budget (1,024 tokens):
model tokens of the rewrite call (prompt, completion) and the median wall time of observing
that event from the memory held before it. Prints a table. The memory is bounded, so the
figures should not grow with the number of events already read.

    .venv/bin/python benchmarks/bench_memagent_observe.py
"""

from __future__ import annotations

import asyncio
import statistics
import time

from clstream.core.events import Chunk
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks.babi import generate_oaks_babi
from clstream.systems.memagent import MemAgent

AT = (10, 100, 1000)
REPEATS = 7


def chunk_texts(n: int) -> list[str]:
    texts: list[str] = []
    seed = 0
    while len(texts) < n:
        docs = generate_oaks_babi(seed=seed, docs=1, chunks=100, chunk_tokens=500)
        texts.extend(docs[0]["data"]["chunks"][str(i)] for i in range(100))
        seed += 1
    return texts[:n]


async def measure() -> list[tuple[int, int, int, int, float]]:
    texts = chunk_texts(max(AT))
    system = MemAgent(BuiltinReader())
    rows = []
    for n, text in enumerate(texts, 1):
        event = Chunk("bench", n - 1, text)
        if n not in AT:
            await system.observe(event)
            continue
        before = system.snapshot()
        times = []
        for _ in range(REPEATS):
            system.restore(before)
            start = time.perf_counter()
            calls = await system.observe(event)
            times.append(time.perf_counter() - start)
        prompt = sum(c.usage.prompt_tokens for c in calls)
        completion = sum(c.usage.completion_tokens for c in calls)
        memory = system.model.tokenizer.count(system.memory)
        rows.append((n, len(calls), prompt, completion, statistics.median(times)))
        print(f"{n:>6} {len(calls):>6} {prompt:>14} {completion:>18} {memory:>15} "
              f"{statistics.median(times) * 1e3:>10.2f}")
    return rows


def main() -> None:
    print(f"{'event':>6} {'calls':>6} {'prompt tokens':>14} {'completion tokens':>18} "
          f"{'memory tokens':>15} {'ms (med)':>10}")
    asyncio.run(measure())


if __name__ == "__main__":
    main()
