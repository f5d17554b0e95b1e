"""Time to add one chunk to the incremental BM25 index versus rebuilding it, at 65 and 1,000
chunks of ~2k tokens (generated bAbI-style prose). Prints a table.

    .venv/bin/python benchmarks/bench_bm25_index.py
"""

from __future__ import annotations

import copy
import statistics
import time

from clstream.protocols.oaks.babi import generate_oaks_babi
from clstream.retrieval.bm25 import IncrementalBM25


def chunk_texts(n: int) -> list[str]:
    texts: list[str] = []
    seed = 0
    while len(texts) < n:
        docs = generate_oaks_babi(seed=seed, docs=1, chunks=65, chunk_tokens=2000)
        texts.extend(docs[0]["data"]["chunks"][str(i)] for i in range(65))
        seed += 1
    return texts[:n]


def bench(n: int, texts: list[str], repeats: int = 7) -> tuple[float, float, float]:
    """Median seconds to add chunk n to an index of n-1 chunks; seconds to rebuild all n;
    mean seconds per top-8 search."""
    base = IncrementalBM25()
    for i, text in enumerate(texts[: n - 1]):
        base.add(i, text)
    adds = []
    for _ in range(repeats):
        index = copy.deepcopy(base)
        start = time.perf_counter()
        index.add(n - 1, texts[n - 1])
        adds.append(time.perf_counter() - start)
    start = time.perf_counter()
    rebuilt = IncrementalBM25()
    for i, text in enumerate(texts[:n]):
        rebuilt.add(i, text)
    rebuild = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        rebuilt.search("Where is the silver lantern now?", k=8)
    search = (time.perf_counter() - start) / repeats
    return statistics.median(adds), rebuild, search


def main() -> None:
    texts = chunk_texts(1000)
    print(f"{'chunks':>8} {'add one (ms)':>14} {'rebuild (ms)':>14} {'speed-up':>10} {'search (ms)':>12}")
    for n in (65, 1000):
        add, rebuild, search = bench(n, texts)
        print(f"{n:>8} {add * 1e3:>14.3f} {rebuild * 1e3:>14.1f} {rebuild / add:>10.0f}x"
              f" {search * 1e3:>12.3f}")


if __name__ == "__main__":
    main()
