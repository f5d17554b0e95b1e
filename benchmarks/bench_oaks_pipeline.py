"""Probes per second of the whole OAKS pipeline (system + builtin model + scoring-ready store
writes) for each context system, on a generated stream of 4 documents x 65 chunks x 2k tokens,
with peak memory. Prints a table.

    .venv/bin/python benchmarks/bench_oaks_pipeline.py [--docs 4 --chunks 65 --chunk-tokens 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.protocols.common import build_model, system_factory
from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import OaksRunner
from clstream.store.db import ResultsStore

SYSTEMS = ("full", "window:w=8", "rag:k=8", "rag+window:k=4,w=4")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=65)
    parser.add_argument("--chunk-tokens", type=int, default=2000)
    parser.add_argument("--systems", nargs="*", default=list(SYSTEMS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "stream.json"
        start = time.perf_counter()
        write_oaks_babi(data, seed=0, docs=args.docs, chunks=args.chunks,
                        chunk_tokens=args.chunk_tokens)
        gen_s = time.perf_counter() - start
        dataset = load_oaks(data)
        n_q = sum(len(d.questions) for d in dataset.documents)
        print(f"stream: {args.docs} docs x {args.chunks} chunks x {args.chunk_tokens} tokens, "
              f"{n_q} questions, generated in {gen_s:.1f}s")
        print(f"{'system':<22}{'probes':>9}{'seconds':>10}{'probes/s':>11}{'peak RSS MiB':>14}")
        model_spec = parse_model_spec("builtin")
        model = build_model(model_spec)
        for label in args.systems:
            spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                           system=ComponentSpec.parse(label), model=model_spec)
            with ResultsStore(Path(tmp) / "res", writer=True) as store:
                runner = OaksRunner(dataset, spec, store, system_factory(spec, model),
                                    show_progress=False)
                runner.register({})
                start = time.perf_counter()
                result = asyncio.run(runner.run())
                secs = time.perf_counter() - start
            print(f"{label:<22}{result.probes_done:>9}{secs:>10.1f}"
                  f"{result.probes_done / secs:>11.0f}{peak_rss_mib():>14.0f}")


if __name__ == "__main__":
    main()
