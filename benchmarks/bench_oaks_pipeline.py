"""CPU per probe of ``clstream run oaks`` as users run it, and how it grows with the stream.

For each context system and each stream length (chunks per document), a generated OAKS-BABI
stream is run by the command line as a process (``python -m clstream run oaks DATA --model
builtin --system S``) into a fresh results directory. Figures:

- process CPU and wall seconds, and peak memory, of the whole run;
- start-up: the same command again on the finished directory (interpreter, imports, loading
  and checking the data, opening the store; nothing left to ask), subtracted from the run;
- CPU per probe after start-up, and probes per CPU-second;
- the floor: the builtin model's own CPU per probe, answering in this process exactly the
  requests the system builds at every interval (the model's cost with no harness around it);
  "x floor" is the run's CPU per probe over it;
- harness: CPU per probe after start-up minus the floor (what the harness adds per probe);
- growth: CPU per probe at the longest stream over that at the shortest (linear cost: 1.0;
  the target is at most 1.25), the same for the model floor and for "x floor". Where the
  model's own cost per probe grows with the stream (full context's prompts grow up to its
  budget; with rag+window the questions of an interval share less retrieved context as the
  stream grows, so the builtin reader reuses less of its reading), the target applies to the
  run's CPU over that floor: the harness must not grow faster than the model it drives.

Each run is repeated ``--repeats`` times (each into a fresh directory) and the floor measured
as often; the medians are reported.

    .venv/bin/python benchmarks/bench_oaks_pipeline.py [--chunks 16,128 --docs 2
        --chunk-tokens 2000 --systems rag:k=8 ...] [--readme]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from cli_timing import machine, markdown_table, median_time, run_cli, write_section

from clstream.core.contracts import RequestPlanner
from clstream.core.events import Chunk
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.core.types import GenerationRequest
from clstream.driver.components import system_factory
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import POOL_TOKENS, context_tokens, make_query, prompt_order

SYSTEMS = ("full", "window:w=8", "rag:k=8", "rag+window:k=4,w=4")
TARGET = 1.25


def model_floor(data: Path, system: str) -> tuple[int, float]:
    """(probes, CPU seconds the builtin model spends answering the system's requests), sent
    in the batches the run sends: each pool's requests sorted by prompt text and key, in
    slices of one interval's size (:class:`~clstream.protocols.oaks.runner.PromptOrderedModel`).
    """
    dataset = load_oaks(data)
    model = BuiltinReader()
    spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                   system=ComponentSpec.parse(system), model=parse_model_spec("builtin"))
    make = system_factory(spec, model)
    probes, cpu = 0, 0.0

    async def one_document(index: int) -> None:
        nonlocal probes, cpu
        doc = dataset.documents[index]
        instance = make()
        assert isinstance(instance, RequestPlanner)
        await instance.reset()
        per_interval = len(doc.questions) * context_tokens(instance, doc, model.tokenizer)
        size = max(1, POOL_TOKENS // max(1, per_interval))
        pool: list[GenerationRequest] = []
        for t in range(1, doc.num_chunks + 1):
            await instance.observe(Chunk(doc.bid, t - 1, doc.chunks[t - 1]))
            queries = [make_query(q.question_id, q.text, q.options, t) for q in doc.questions]
            pool += instance.plan_batch(queries).requests
            if t % size and t < doc.num_chunks:
                continue
            pool.sort(key=prompt_order)
            start = time.process_time()
            for first in range(0, len(pool), len(doc.questions)):
                await model.generate(pool[first : first + len(doc.questions)])
            cpu += time.process_time() - start
            probes += len(pool)
            pool = []

    for i in range(len(dataset.documents)):
        asyncio.run(one_document(i))
    return probes, cpu


def quotient(a: float, b: float) -> float:
    """a / b, or nan where b is not positive (a run too short to measure)."""
    return a / b if b > 0 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--chunks", default="16,128", help="stream lengths, comma separated")
    parser.add_argument("--chunk-tokens", type=int, default=2000)
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS))
    parser.add_argument("--repeats", type=int, default=3, help="runs per system and length")
    parser.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = parser.parse_args()
    lengths = [int(c) for c in args.chunks.split(",")]
    header = ["system", "chunks", "probes", "process CPU s", "start-up CPU s", "ms CPU/probe",
              "probes/CPU-s", "model floor ms/probe", "x floor", "harness ms/probe", "wall s",
              "peak MiB"]
    rows: list[list[object]] = []
    growth: list[list[object]] = []
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        per_probe: dict[tuple[str, int], float] = {}
        floor: dict[tuple[str, int], float] = {}
        for chunks in lengths:
            data = Path(tmp) / f"stream{chunks}.json"
            write_oaks_babi(data, seed=0, docs=args.docs, chunks=chunks,
                            chunk_tokens=args.chunk_tokens)
            for i, system in enumerate(args.systems):
                def argv(k: int, chunks: int = chunks, i: int = i, system: str = system,
                         data: Path = data) -> list[str]:
                    return ["run", "oaks", str(data), "--model", "builtin", "--system", system,
                            "--no-progress", "--out", str(Path(tmp) / f"runs{chunks}_{i}_{k}")]

                runs = [run_cli(argv(k)) for k in range(args.repeats)]
                run = median_time(runs)
                start = run_cli(argv(0), repeats=3)  # finished: start-up and checks only
                floors = [model_floor(data, system) for _ in range(args.repeats)]
                probes = floors[0][0]
                floor_cpu = statistics.median(cpu for _, cpu in floors)
                work = max(0.0, run.cpu_s - start.cpu_s)
                ms = 1000 * work / probes
                floor_ms = 1000 * floor_cpu / probes
                per_probe[system, chunks] = ms
                floor[system, chunks] = floor_ms
                rows.append([system, chunks, f"{probes:,}", f"{run.cpu_s:.2f}",
                             f"{start.cpu_s:.2f}", f"{ms:.3f}", f"{1000 / ms:,.0f}" if ms > 0 else "-",
                             f"{floor_ms:.3f}", f"{ms / floor_ms:.2f}", f"{ms - floor_ms:.3f}",
                             f"{run.wall_s:.2f}", f"{run.peak_mib:.0f}"])
                print("  ".join(str(c) for c in rows[-1]), flush=True)
        short, long = min(lengths), max(lengths)
        for system in args.systems:
            ratio = quotient(per_probe[system, long], per_probe[system, short])
            floor_ratio = quotient(floor[system, long], floor[system, short])
            over_floor = quotient(ratio, floor_ratio)
            judged = ratio if floor_ratio <= TARGET else over_floor
            growth.append([system, f"{per_probe[system, short]:.3f}",
                           f"{per_probe[system, long]:.3f}", f"{ratio:.2f}",
                           f"{floor_ratio:.2f}", f"{over_floor:.2f}",
                           ("met" if judged <= TARGET else "NOT met")
                           + ("" if floor_ratio <= TARGET else " (x floor)")])
    table = markdown_table(header, rows, "lrrrrrrrrrrr")
    growth_table = markdown_table(
        ["system", f"ms CPU/probe at {short}", f"at {long}", "growth", "model floor growth",
         "x floor growth", f"<= {TARGET}"], growth, "lrrrrrl")
    print(table, growth_table, sep="\n\n")
    if args.readme:
        write_section("oaks-pipeline", f"Machine: {machine()}. Stream: {args.docs} documents x "
                      f"{', '.join(map(str, lengths))} chunks x {args.chunk_tokens} tokens.\n\n"
                      f"{table}\n\n{growth_table}")


if __name__ == "__main__":
    main()
