"""Prefill work of each OAKS context system's request order under a simulated prefix cache.

Runs ``clstream run oaks`` as a process (``python -m clstream``) for each context system against
a loopback OpenAI-compatible engine in this process (``tests/models/loopback_engine.py``: one
asyncio loop reading every connection, as vLLM's and SGLang's servers do, with 8 slots), records the order in which prompts are read off the sockets, and replays that order
through the simulated LRU block prefix cache of :mod:`clstream.models.prefix_cache_sim`, with
room for 1.5 times the largest prompt. For comparison it replays the same prompts in
question-major order (each question through all its intervals, then the next question: the
order a harness that loops over questions first would send). Prints, per system, stream length
and order: requests, prefill tokens computed, the lower bound (what a cache that never evicts
would compute; the floor) and their ratio. The harness aims for a ratio of at most 1.25 in
arrival order, and for an arrival order that is a function of the spec and the data alone:
each (system, length) is run ``--runs`` times and the orders compared.

Documents in flight: 1 by default; ``--run-args "--docs-in-flight 2"`` runs two at once, whose
contexts then compete for a cache sized for one; ``--cache-budget`` instead passes
``--cache-budget-tokens`` (the simulated capacity, estimated before the run from the largest
per-document context) and lets the runner choose.

    .venv/bin/python benchmarks/bench_prefix_cache.py [--docs 2 --chunks 20,40,65
        --chunk-tokens 2000 --runs 2] [--readme]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cli_timing import machine, markdown_table, run_cli, write_section

from clstream.core.specs import ComponentSpec, RunSpec, derive_seed, parse_model_spec
from clstream.driver.components import build_model, system_factory
from clstream.models.prefix_cache_sim import approx_tokens, render_chat, replay
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import context_tokens, docs_for_cache_budget, probe_key

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
from loopback_engine import LoopbackEngine  # noqa: E402

SYSTEMS = ("full", "window:w=8", "rag:k=8", "rag+window:k=4,w=4")
MODEL = "fake"
TARGET = 1.25


def question_major(bodies: list[dict[str, Any]], data: Path, seed: int) -> list[dict[str, Any]]:
    """``bodies`` reordered document by document, question by question, interval by interval.

    A body is matched to its (question, interval) through its wire seed, which the context
    systems derive from the run seed and the probe key.
    """
    dataset = load_oaks(data)
    rank: dict[int, tuple[int, int, int]] = {}
    for d, doc in enumerate(dataset.documents):
        for q, question in enumerate(doc.questions):
            for t in range(1, doc.num_chunks + 1):
                rank[derive_seed(seed, probe_key(question.question_id, t))] = (d, q, t)
    if len(rank) != sum(len(d.questions) * d.num_chunks for d in dataset.documents):
        raise SystemExit("two probes share a seed; cannot tell their requests apart")
    return sorted(bodies, key=lambda body: rank[body["seed"]])


def budget_flags(system: str, data: Path, capacity: float) -> tuple[list[str], int]:
    """``--cache-budget-tokens`` for a cache of ``capacity`` x the largest context (estimated
    with the approx tokenizer, as the OpenAI-compatible backend counts), and the documents in
    flight the runner will choose for it."""
    dataset = load_oaks(data)
    model_spec = parse_model_spec("builtin")
    spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                   system=ComponentSpec.parse(system), model=model_spec)
    instance = system_factory(spec, build_model(model_spec))()
    tok = approx_tokenizer()
    largest = max(context_tokens(instance, d, tok) for d in dataset.documents)
    budget = int(capacity * largest)
    return (["--cache-budget-tokens", str(budget)],
            docs_for_cache_budget(budget, dataset, instance, tok))


def run_system(
    system: str, data: Path, out: Path, server: LoopbackEngine, extra: list[str]
) -> tuple[list[dict[str, Any]], float]:
    """One ``clstream run oaks`` process against ``server``: the bodies it sent, in arrival
    order, and its wall seconds."""
    assert server.arrivals is not None
    first = len(server.arrivals)
    start = time.perf_counter()
    run_cli(["run", "oaks", str(data), "--system", system, "--model", f"openai:{MODEL}",
             "--base-url", server.base_url, "--max-concurrency", "8", "--no-progress",
             "--out", str(out), *extra])
    bodies = server.arrivals[first:]
    del server.arrivals[first:]  # a run's bodies are kept only as long as they are compared
    return bodies, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--chunks", default="20,40,65", help="stream lengths, comma separated")
    parser.add_argument("--chunk-tokens", type=int, default=2000)
    parser.add_argument("--max-questions", type=int, default=40, help="per document")
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--capacity", type=float, default=1.5,
                        help="cache capacity as a multiple of the largest prompt")
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS))
    parser.add_argument("--runs", type=int, default=2, help="runs per system and length")
    parser.add_argument("--run-args", default="",
                        help="extra flags for `run oaks`, e.g. '--docs-in-flight 2'")
    parser.add_argument("--cache-budget", action="store_true",
                        help="pass --cache-budget-tokens for the simulated cache size")
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    lengths = [int(c) for c in args.chunks.split(",")]
    rows: list[list[object]] = []
    worst = 0.0
    print(f"machine: {machine()}")
    engine = LoopbackEngine(slots=8, service_s=0.002, tokens=2, model=MODEL,
                            context=10**8, record=True)
    with tempfile.TemporaryDirectory() as tmp, engine as server:
        for chunks in lengths:
            data = Path(tmp) / f"stream{chunks}.json"
            write_oaks_babi(data, seed=0, docs=args.docs, chunks=chunks,
                            chunk_tokens=args.chunk_tokens, max_questions=args.max_questions)
            for i, system in enumerate(args.systems):
                extra = args.run_args.split()
                docs = "-"
                if args.cache_budget:
                    flags, n_docs = budget_flags(system, data, args.capacity)
                    extra, docs = extra + flags, str(n_docs)
                runs = [run_system(system, data, Path(tmp) / f"res{chunks}_{i}_{r}", server,
                                   extra)[0] for r in range(args.runs)]
                bodies = runs[0]
                prompts = {id(b): render_chat(b["messages"]) for b in bodies}
                largest = max(len(approx_tokens(p)) for p in prompts.values())
                capacity = math.ceil(args.capacity * largest / args.block_size)
                ratios = []
                for run in runs:
                    texts = [render_chat(b["messages"]) for b in run]
                    ratios.append(replay(texts, capacity, args.block_size))
                stats = ratios[0]
                worst = max(worst, *(r.ratio for r in ratios))
                major = replay([prompts[id(b)] for b in question_major(bodies, data, 0)],
                               capacity, args.block_size)
                same = all([b["seed"] for b in run] == [b["seed"] for b in bodies]
                           for run in runs)
                rows.append([system, chunks, docs, f"{stats.requests:,}",
                             f"{stats.computed_tokens:,} / {stats.lower_bound_tokens:,}",
                             " / ".join(f"{r.ratio:.3f}" for r in ratios),
                             "yes" if same else "no", f"{major.ratio:.3f}"])
                print("  ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(
        ["system", "chunks", "docs", "requests", "computed / lower bound (tokens)",
         "arrival ratio (each run)", "same order", "question-major ratio"], rows, "lrrrrrlr")
    verdict = "met" if worst <= TARGET else "NOT met"
    print(table)
    print(f"worst arrival-order ratio {worst:.3f}: target <= {TARGET} {verdict}")
    if args.readme:
        write_section("prefix-cache", f"Machine: {machine()}. Stream: {args.docs} documents x "
                      f"{args.max_questions} questions x {args.chunk_tokens}-token chunks; "
                      f"cache {args.capacity:g} x the largest prompt in {args.block_size}-token "
                      f"blocks; `--max-concurrency 8` {args.run_args}".rstrip() +
                      f"; {args.runs} runs each.\n\n{table}\n\nWorst arrival ratio "
                      f"{worst:.3f} (target <= {TARGET}: {verdict}).")


if __name__ == "__main__":
    main()
