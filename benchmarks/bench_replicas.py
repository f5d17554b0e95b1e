"""Prefill work of an OAKS run over several replicas: routed by document against round robin.

Each system runs as a ``clstream run oaks`` process against loopback OpenAI-compatible engines
in this process (``tests/models/loopback_engine.py``, 8 slots each, recording the bodies in the
order they are read off the sockets):

- **affinity**: ``--base-url`` given once per replica (2, 3, 4), so the backend routes every
  request of a document to the replica that owns it (:mod:`clstream.models.replicas`); each
  engine's arrivals are replayed through its own simulated prefix cache
  (:mod:`clstream.models.prefix_cache_sim`) and the computed prefill tokens are added up;
- **round robin**: the same run against one engine gives the harness's send order, whose
  requests are dealt to the replicas in turn (request i to replica i mod N), each replica
  replaying its share through its own cache, as a load balancer that ignores content would;
- **one server**: that send order through one cache, for reference.

Every cache holds ``--capacity`` times the largest prompt (16-token blocks). Several documents
are in flight at once (``--docs-in-flight``), as a run over several replicas would have them.
Prints, per system and replica count, the requests, the prefill computed by each routing, the
saving of affinity over round robin, and the affinity's requests per replica (its balance).

    .venv/bin/python benchmarks/bench_replicas.py [--docs 8 --chunks 12 --chunk-tokens 500
        --max-questions 8 --docs-in-flight 4] [--readme]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from cli_timing import machine, markdown_table, run_cli, write_section

from clstream.models.prefix_cache_sim import approx_tokens, render_chat, replay
from clstream.protocols.oaks.babi import write_oaks_babi

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
from loopback_engine import LoopbackEngine  # noqa: E402

SYSTEMS = ("full", "rag:k=4")
MODEL = "fake"


def run_oaks(data: Path, system: str, engines: list[LoopbackEngine], out: Path,
             docs_in_flight: int) -> list[list[dict[str, Any]]]:
    """One ``clstream run oaks`` over ``engines`` (its replicas): the bodies each engine read,
    in arrival order."""
    urls = [w for e in engines for w in ("--base-url", e.base_url)]
    run_cli(["run", "oaks", str(data), "--system", system, "--model", f"openai:{MODEL}", *urls,
             "--docs-in-flight", str(docs_in_flight), "--max-concurrency", "8",
             "--no-progress", "--out", str(out)])
    arrivals = []
    for engine in engines:
        assert engine.arrivals is not None
        arrivals.append(list(engine.arrivals))
        engine.arrivals.clear()
    return arrivals


def computed(shares: list[list[str]], capacity: int, block: int) -> tuple[int, int]:
    """Prefill tokens computed over every replica's own cache, and the prompt tokens."""
    stats = [replay(share, capacity, block) for share in shares if share]
    return sum(s.computed_tokens for s in stats), sum(s.prompt_tokens for s in stats)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=12)
    parser.add_argument("--chunk-tokens", type=int, default=500)
    parser.add_argument("--max-questions", type=int, default=8, help="per document")
    parser.add_argument("--docs-in-flight", type=int, default=4)
    parser.add_argument("--replicas", default="2,3,4")
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--capacity", type=float, default=2.0,
                        help="each replica's cache, as a multiple of the largest prompt")
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS))
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    print(f"machine: {machine()}")
    rows: list[list[object]] = []
    savings: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        engines = [stack.enter_context(LoopbackEngine(slots=8, service_s=0.002, tokens=2,
                                                      model=MODEL, context=10**8, record=True))
                   for _ in range(max(counts))]
        data = Path(tmp) / "stream.json"
        write_oaks_babi(data, seed=0, docs=args.docs, chunks=args.chunks,
                        chunk_tokens=args.chunk_tokens, max_questions=args.max_questions)
        for s, system in enumerate(args.systems):
            (order,) = run_oaks(data, system, engines[:1], Path(tmp) / f"one{s}",
                                args.docs_in_flight)
            texts = [render_chat(b["messages"]) for b in order]
            largest = max(len(approx_tokens(t)) for t in texts)
            capacity = math.ceil(args.capacity * largest / args.block_size)
            one, prompt = computed([texts], capacity, args.block_size)
            rows.append([system, 1, f"{len(texts):,}", f"{prompt:,}", f"{one:,}", "-", "-",
                         "-", str(len(texts))])
            print("  ".join(str(c) for c in rows[-1]), flush=True)
            for n in counts:
                dealt = [texts[i::n] for i in range(n)]
                robin, _ = computed(dealt, capacity, args.block_size)
                routed = run_oaks(data, system, engines[:n], Path(tmp) / f"r{s}_{n}",
                                  args.docs_in_flight)
                shares = [[render_chat(b["messages"]) for b in bodies] for bodies in routed]
                if sum(len(x) for x in shares) != len(texts):
                    raise SystemExit("the routed run sent another number of requests")
                affinity, _ = computed(shares, capacity, args.block_size)
                saving = 1 - affinity / robin
                savings.append(saving)
                rows.append([system, n, f"{len(texts):,}", f"{prompt:,}", f"{one:,}",
                             f"{robin:,}", f"{affinity:,}", f"{saving:.1%}",
                             " / ".join(str(len(x)) for x in shares)])
                print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(
        ["system", "replicas", "requests", "prompt tokens", "prefill, one cache",
         "prefill, round robin", "prefill, affinity", "affinity saves", "requests per replica"],
        rows, "lrrrrrrrl")
    print(table)
    if args.readme:
        write_section("replicas", f"Machine: {machine()}. Stream: {args.docs} documents x "
                      f"{args.max_questions} questions x {args.chunks} chunks of "
                      f"{args.chunk_tokens} tokens; `--docs-in-flight {args.docs_in_flight} "
                      f"--max-concurrency 8`; each replica's cache {args.capacity:g} x the "
                      f"largest prompt in {args.block_size}-token blocks.\n\n{table}\n\n"
                      f"Affinity saves {min(savings):.1%} to {max(savings):.1%} of round "
                      "robin's prefill.")


if __name__ == "__main__":
    main()
