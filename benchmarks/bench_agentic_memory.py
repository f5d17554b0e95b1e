"""What one update of each agentic memory costs as the stream grows (docs/agentic.md): the
observe of event 10, 100 and 1,000 of a stream of bAbI-style chunks (~500 tokens each), with
the builtin model: model calls, their prompt and completion tokens, and the median wall time
of observing that event from the memory held just before it (restored from a snapshot before
each repeat; the restore is not timed). "Adding event t costs event t": the tokens must not
grow with the events already read, and the time only by an index lookup. The median time of
one answer at event 1,000 is printed too (hipporag's personalized PageRank runs there).

    .venv/bin/python benchmarks/bench_agentic_memory.py [--events 1000] [--repeats 7] [--readme]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from cli_timing import machine, markdown_table, write_section

from clstream.core.events import Chunk
from clstream.core.registry import names, resolve
from clstream.core.types import Query
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks.babi import generate_oaks_babi

SYSTEMS = ("memagent", "amem", "hipporag")


def chunk_texts(n: int) -> list[str]:
    texts: list[str] = []
    seed = 0
    while len(texts) < n:
        docs = generate_oaks_babi(seed=seed, docs=1, chunks=100, chunk_tokens=500)
        texts.extend(docs[0]["data"]["chunks"][str(i)] for i in range(100))
        seed += 1
    return texts[:n]


async def measure(name: str, texts: list[str], at: tuple[int, ...], repeats: int
                  ) -> list[list[str]]:
    system = resolve("system", name)(BuiltinReader())
    rows = []
    for n, text in enumerate(texts, 1):
        event = Chunk("bench", n - 1, text)
        if n not in at:
            await system.observe(event)
            continue
        before = system.snapshot()
        times = []
        for _ in range(repeats):
            system.restore(before)
            start = time.perf_counter()
            calls = await system.observe(event)
            times.append(time.perf_counter() - start)
        prompt = sum(c.usage.prompt_tokens for c in calls)
        completion = sum(c.usage.completion_tokens for c in calls)
        rows.append([name, f"{n:,}", str(len(calls)), f"{prompt:,}", f"{completion:,}",
                     f"{statistics.median(times) * 1e3:.1f}", ""])
    query = Query(id="q", text="Where is Mary?")
    answer = []
    for _ in range(repeats):
        start = time.perf_counter()
        await system.respond(query)
        answer.append(time.perf_counter() - start)
    rows[-1][-1] = f"{statistics.median(answer) * 1e3:.1f}"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--readme", action="store_true")
    args = parser.parse_args()
    at = tuple(sorted({10, 100, args.events}))
    texts = chunk_texts(args.events)
    rows = []
    for name in SYSTEMS:
        if name in names("system"):
            rows += asyncio.run(measure(name, texts, at, args.repeats))
    table = markdown_table(["system", "event", "calls", "prompt tokens", "completion tokens",
                            "observe ms", "answer ms"], rows)
    text = f"Machine: {machine()}; builtin model, median of {args.repeats}.\n\n{table}\n"
    print(text)
    if args.readme:
        write_section("agentic-memory", text)


if __name__ == "__main__":
    main()
