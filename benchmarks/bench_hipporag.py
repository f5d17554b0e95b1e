"""Cost of the ``hipporag`` memory with the builtin model: the wall time and model tokens of
one ``observe`` around event 10 and around event 1,000, and the time to answer a question over
the 1,000-event graph (personalized PageRank included), on two streams: a generated bAbI-style
stream (few entities, met again and again) and a stream whose every passage names new people
and places (the graph grows with it). Prints a table.

    .venv/bin/python benchmarks/bench_hipporag.py
"""

from __future__ import annotations

import asyncio
import statistics
import time

from clstream.core.events import Chunk
from clstream.core.types import Query
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks.babi import generate_oaks_babi
from clstream.systems.hipporag import HippoRag

EVENTS = 1_005
WINDOW = 5  # events either side of the one measured: medians over 2 * WINDOW events


SYLLABLES = "ka lo mi ren tu sa vel dor an ish po ter".split()


def babi_stream() -> tuple[list[Chunk], list[str]]:
    doc = generate_oaks_babi(seed=7, docs=1, chunks=EVENTS, chunk_tokens=200)[0]
    chunks = doc["data"]["chunks"]
    return ([Chunk(stream_id="s", index=i, text=chunks[str(i)]) for i in range(EVENTS)],
            list(doc["data"]["qas"]))


def name(n: int, parts: int = 3) -> str:
    out = []
    for _ in range(parts):
        n, at = divmod(n, len(SYLLABLES))
        out.append(SYLLABLES[at])
    return "".join(out).capitalize()


def distinct_stream() -> tuple[list[Chunk], list[str]]:
    texts = []
    for i in range(EVENTS):
        a, b, c = name(3 * i), name(3 * i + 1), name(3 * i + 2)
        texts.append(f"{a} went to {b} Harbour. {a} picked up the lantern. {c} is the capital "
                     f"of {b} Province. {c} Market sold the {name(i, 2).lower()} stone.")
    questions = [f"Where is {name(3 * i)}?" for i in range(0, EVENTS, EVENTS // 20)]
    return [Chunk(stream_id="s", index=i, text=t) for i, t in enumerate(texts)], questions


async def measure(label: str, chunks: list[Chunk], questions: list[str]) -> None:
    system = HippoRag(BuiltinReader())
    seconds: list[float] = []
    tokens: list[int] = []
    for chunk in chunks:
        start = time.perf_counter()
        (call,) = await system.observe(chunk)
        seconds.append(time.perf_counter() - start)
        tokens.append(call.usage.prompt_tokens + call.usage.completion_tokens)
    print(f"\n{label}: graph after {EVENTS} events: {len(system.graph)} nodes, "
          f"{system.graph.graph.number_of_edges()} edges\n")
    print("| event | observe ms (median) | model tokens per observe (mean) |")
    print("| ---: | ---: | ---: |")
    for at in (10, 1_000):
        span = range(at - WINDOW, at + WINDOW)
        print(f"| {at} | {1000 * statistics.median(seconds[i - 1] for i in span):.2f} | "
              f"{statistics.mean(tokens[i - 1] for i in span):.0f} |")
    print("\n| query entities | questions | retrieve ms (median) | respond ms (median) |")
    print("| --- | ---: | ---: | ---: |")
    for mode in ("model", "match"):
        system.args["query_entities"] = mode
        retrieve, respond = [], []
        for n, text in enumerate(questions[:20]):
            start = time.perf_counter()
            response = await system.respond(Query(id=f"q{n}", text=text))
            respond.append(time.perf_counter() - start)
            retrieve.append(response.timings["retrieve"])
        print(f"| {mode} | {len(respond)} | {1000 * statistics.median(retrieve):.1f} | "
              f"{1000 * statistics.median(respond):.1f} |")


async def main() -> None:
    await measure("bAbI-style stream", *babi_stream())
    await measure("new entities in every passage", *distinct_stream())


if __name__ == "__main__":
    asyncio.run(main())
