"""OAKS verbs: ``generate oaks-babi``, ``run oaks`` and ``score oaks`` (docs/oaks.md §2, §3, §6)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from clstream.core.jsonio import gc_paused
from clstream.core.specs import RunSpec
from clstream.protocols.common import build_model, parse_components, run_info, system_factory
from clstream.protocols.oaks.babi import write_oaks_babi
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.metrics import load_predictions, score_oaks
from clstream.protocols.oaks.prompts import template_fingerprint
from clstream.protocols.oaks.runner import OaksRunner, docs_for_cache_budget
from clstream.protocols.options import (
    add_backend_arguments,
    add_run_arguments,
    add_sampling_arguments,
    backend_options,
    positive,
    sampling_from_args,
)
from clstream.protocols.outcome import (
    Failure,
    check_endpoint,
    finish,
    first_error,
    resume_command,
    run_interruptible,
)
from clstream.store.db import ResultsStore


# -- generate --------------------------------------------------------------------------------
def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--docs", type=int, default=2)
    p.add_argument("--chunks", type=int, default=20)
    p.add_argument("--chunk-tokens", type=int, default=2000)
    p.add_argument("--max-questions", type=int, default=None, help="per document")
    p.add_argument("--haystack", action="append", default=None, metavar="FILE",
                   help="text file(s) to use as distractor prose instead of generated prose")
    p.add_argument("--out", required=True)


def generate(args: argparse.Namespace) -> int:
    for name, value in (("--docs", args.docs), ("--chunks", args.chunks),
                        ("--chunk-tokens", args.chunk_tokens)):
        positive(name, value)
    kwargs: dict[str, Any] = {}
    if args.max_questions is not None:
        kwargs["max_questions"] = args.max_questions
    write_oaks_babi(
        args.out, seed=args.seed, docs=args.docs, chunks=args.chunks,
        chunk_tokens=args.chunk_tokens,
        haystack_files=[Path(p) for p in args.haystack] if args.haystack else None, **kwargs,
    )
    print(args.out)
    return 0


# -- run -------------------------------------------------------------------------------------
def add_run_oaks_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="OAKS JSON file")
    add_run_arguments(p, "NAME or NAME:key=value,... (repeatable), e.g. rag:k=8")
    p.add_argument("--docs-in-flight", type=int, default=1, help="documents processed concurrently")
    p.add_argument("--cache-budget-tokens", type=int, default=None, metavar="N",
                   help="prefix-cache size of the server in tokens: run max(1, N // largest "
                        "per-document context) documents at once (replaces --docs-in-flight)")
    p.add_argument("--no-progress", action="store_true")
    add_sampling_arguments(p)
    add_backend_arguments(p)


def run(args: argparse.Namespace) -> int:
    positive("--docs-in-flight", args.docs_in_flight)
    positive("--cache-budget-tokens", args.cache_budget_tokens)
    dataset = load_oaks(args.data)
    sampling = sampling_from_args(args)
    model_spec, systems = parse_components(args.model, args.model_args, args.system)
    model = build_model(model_spec, **backend_options(args))
    specs = [
        RunSpec(protocol="oaks", dataset_hash=dataset.sha256, system=s, model=model_spec,
                sampling=sampling, seed=args.seed)
        for s in systems
    ]
    factories = [system_factory(spec, model) for spec in specs]  # validate all before writing
    # A dead endpoint, or a system too big for its context, fails here, before any writing.
    check_endpoint(model, sampling, systems)
    failures: list[Failure] = []
    with ResultsStore(args.out, writer=True) as store:
        for spec, make in zip(specs, factories, strict=True):
            docs = args.docs_in_flight
            if args.cache_budget_tokens is not None:
                docs = docs_for_cache_budget(args.cache_budget_tokens, dataset, make(),
                                             model.tokenizer)
                print(f"{spec.system.label}: {docs} documents in flight for a cache of "
                      f"{args.cache_budget_tokens} tokens", file=sys.stderr)
            runner = OaksRunner(dataset, spec, store, make, docs_in_flight=docs,
                                show_progress=not args.no_progress, model=model)
            info = run_info(model, make(), {"prompt_template_hash": template_fingerprint(),
                                            "dataset_path": dataset.path})
            resumed = runner.register(info)
            result = run_interruptible(runner.run())
            state = "resumed" if resumed else "ran"
            print(f"{state} {spec.system.label} ({result.run_id}): "
                  f"{result.probes_done}/{result.probes_total} probes, {result.errors} errors, "
                  f"{result.wall_s:.1f}s", file=sys.stderr)
            if result.probes_done < result.probes_total:
                failures.append(Failure(
                    spec.system.label, result.run_id, result.errors,
                    result.probes_total - result.probes_done - result.errors,
                    result.probes_total, first_error(store, result.run_id, ("probe",))))
    finish("oaks", "probe", failures, resume_command("oaks", add_run_oaks_arguments, args))
    print(args.out)
    return 0


# -- score -----------------------------------------------------------------------------------
def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data")
    p.add_argument("predictions")
    p.add_argument("--json", action="store_true")
    p.add_argument("--allow-missing", action="store_true")


def _fmt(x: float) -> str:
    return f"{x:.4f}"


def score(args: argparse.Namespace) -> int:
    # Reading builds millions of small objects and no reference cycles: the cyclic collector
    # would rescan them all again and again (a third of the command's time), for nothing.
    with gc_paused():
        dataset = load_oaks(args.data)
        preds = load_predictions(args.predictions, dataset)
        result, missing = score_oaks(dataset, preds, allow_missing=args.allow_missing,
                                     predictions_path=args.predictions)
    if missing:
        print(f"clstream: {missing} predictions missing, counted as wrong", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"questions                  {result['n_questions']}")
    for key in ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss"):
        print(f"{key:<27}{_fmt(result[key])}")
    print("transitions")
    for key, value in result["transitions"].items():
        print(f"  {key:<25}{_fmt(value)}")
    for group in ("by_type", "by_subset"):
        print(group.replace("_", " "))
        for key, value in result[group].items():
            print(f"  {key:<25}{_fmt(value['accuracy'])}  (n={value['n_questions']})")
    return 0
