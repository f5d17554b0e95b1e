"""Training cost of the parametric memory methods (docs/parametric.md), on a CPU or a GPU.

Two parts:

1. **Training throughput.** Each method's recipe (``ntp`` full, ``lora-ntp``, ``lora-sft``,
   ``lora-sdft``) trains once on a synthetic corpus, each in a fresh process (this script
   with ``--one``), through :func:`clstream.training.train.train` as a run calls it: tokens
   read per second of training (SDFT, which samples an answer per pair at every step, on an
   eighth of the examples) (the trainer's own token count over its wall time), optimizer
   steps, wall seconds of the process, and peak memory (the process's resident set; on a GPU
   also ``torch.cuda.max_memory_allocated``). ``--base DIR`` trains a real local model (the
   GPU smoke test); without it a random Llama of ``--hidden``/``--layers`` is built here.
2. **A run as users start it.** ``clstream run seqmem`` with ``lora-ntp:every=2`` against
   ``memory-free`` over the same ``hf:`` model: the process's wall and CPU seconds, so the
   share training adds to a run is visible (``--base`` given: that model; else the random one).

    .venv/bin/python benchmarks/bench_training.py [--base DIR] [--device auto] [--examples 1024]
        [--hidden 256] [--layers 4] [--readme]

The recipe is the paper's (batch 64, 2 epochs) except the block length, ``--block`` (512).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from cli_timing import ROOT, machine, markdown_table, run_cli, run_process, write_section

sys.path.insert(0, str(ROOT / "tests" / "models"))

Objective = Literal["ntp", "sft", "cq", "sdft"]
METHODS: dict[str, tuple[Objective, bool]] = {
    "ntp": ("ntp", False),
    "lora-ntp": ("ntp", True),
    "lora-sft": ("sft", True),
    "lora-sdft": ("sdft", True),
}
WORDS = ("mayor harbour council bridge river market museum ferry school station garden "
         "tower library festival election budget road park clinic theatre").split()


def corpus(n: int) -> list[tuple[str, str, str]]:
    """``n`` (fact, question, answer) triples of an invented town, deterministic."""
    out = []
    for i in range(n):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        fact = (f"In year {1900 + i} the {a} of district {i} moved next to the {b} , "
                f"and the council named {a} {i} after the {b} .")
        out.append((fact, f"What was {a} {i} named after ?", f"the {b}"))
    return out


def one(method: str, base: Path, store: Path, examples: int, block: int, device: str) -> None:
    """Train ``method`` once and print its figures as JSON (the child process's part). SDFT
    samples an answer per pair and step, so it trains on an eighth of the examples."""
    from clstream.core.types import Message
    from clstream.training.data import Example, PairExample, TextExample
    from clstream.training.recipe import Recipe
    from clstream.training.train import train

    objective, lora = METHODS[method]
    data: list[Example] = []
    for fact, question, answer in corpus(examples // 8 if objective == "sdft" else examples):
        if objective == "ntp":
            data.append(TextExample(fact))
        else:
            data.append(PairExample((Message(role="user", content=question),), answer, fact))
    recipe = Recipe(objective=objective, lora=lora, lr=5e-5 if lora else 1e-5, block=block,
                    max_new=32)
    start = time.perf_counter()
    run = train(base, None, data, recipe, store, device=device)
    figures: dict[str, Any] = {"tokens": run.tokens, "seconds": run.seconds, "steps": run.steps,
               "wall_s": time.perf_counter() - start,
               "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    try:
        import torch

        if torch.cuda.is_available():
            figures["gpu_peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
            figures["device"] = torch.cuda.get_device_name()
    except ImportError:
        pass
    print(json.dumps(figures))


def throughput_rows(base: Path, work: Path, args: argparse.Namespace) -> tuple[list[list[str]],
                                                                             str]:
    rows, device = [], "CPU"
    for method in METHODS:
        out = work / f"{method}.json"
        with out.open("w") as sink:
            done = run_process([sys.executable, __file__, "--one", method, "--base", str(base),
                                "--store", str(work / "store"), "--examples",
                                str(args.examples), "--block", str(args.block), "--device",
                                args.device], stdout=sink.fileno())
        if done.status != 0:
            raise SystemExit(f"training {method} failed (status {done.status})")
        f = json.loads(out.read_text().strip().splitlines()[-1])
        device = f.get("device", device)
        gpu = f"{f['gpu_peak_mib']:,.0f}" if "gpu_peak_mib" in f else "-"
        rows.append([method, str(args.examples // 8 if method.endswith("sdft") else args.examples),
                     f"{f['tokens']:,}", str(f["steps"]), f"{f['seconds']:.1f}",
                     f"{f['tokens'] / max(f['seconds'], 1e-9):,.0f}",
                     f"{done.wall_s:.1f}", f"{done.peak_mib:,.0f}", gpu])
    return rows, device


def run_rows(base: Path, work: Path) -> list[list[str]]:
    data = work / "seqmem.json"
    run_cli(["generate", "seqmem-synthetic", "--seed", "0", "--tasks", "16", "--holdout", "4",
             "--out", str(data)])
    rows = []
    for system in ("memory-free", "lora-ntp:every=2"):
        t = run_cli(["run", "seqmem", str(data), "--system", system, "--model", f"hf:{base}",
                     "--max-tokens", "8", "--retro-sample", "0", "--out",
                     str(work / system.split(":")[0]), "--no-progress"],
                    env={"HF_HUB_OFFLINE": "1"})
        rows.append([system, f"{t.wall_s:.1f}", f"{t.cpu_s:.1f}", f"{t.peak_mib:,.0f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, default=None, help="local model directory")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--examples", type=int, default=1024)
    parser.add_argument("--block", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--readme", action="store_true")
    parser.add_argument("--one", choices=tuple(METHODS), help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.one:
        one(args.one, args.base, args.store, args.examples, args.block, args.device)
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = args.base
        if base is None:
            from tiny_llama import build_tiny_model

            texts = [" ".join(t) for t in corpus(args.examples)]
            base = build_tiny_model(work / "model", texts=texts, hidden=args.hidden,
                                    layers=args.layers)
        model = (f"`{args.base}`" if args.base else
                 f"a random Llama, {args.layers} layers, {args.hidden} wide")
        rows, device = throughput_rows(base, work, args)
        table = markdown_table(["method", "examples", "tokens read", "steps", "train s", "tokens/s",
                                "process wall s", "peak RSS MiB", "GPU peak MiB"], rows)
        runs = markdown_table(["system", "wall s", "CPU s", "peak RSS MiB"], run_rows(base, work))
    text = (f"Machine: {machine()}; device: {device}; model: {model}; {args.examples} "
            f"examples, block {args.block}, batch 64, 2 epochs.\n\n{table}\n\n"
            f"`clstream run seqmem` (16 tasks, 4 held out, no re-evaluation) over `hf:` with "
            f"8-token answers:\n\n{runs}\n")
    print(text)
    if args.readme:
        write_section("training", text)


if __name__ == "__main__":
    main()
