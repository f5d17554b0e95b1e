"""OAKS verbs: ``generate oaks-babi``, ``run oaks`` and ``score oaks`` (docs/oaks.md §2, §3); their
flags are in :mod:`clstream.protocols.oaks.arguments`.

Each verb imports what only it needs when it runs (the generator for ``generate``, the driver
and runner for ``run``, the metrics for ``score``), so no verb pays at start-up for another's
modules: ``score`` is a short process, and the driver's imports would cost it as much as its
judging (benchmarks/README.md, "Scoring")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.data_kinds import load_checked
from clstream.core.errors import SpecError
from clstream.core.jsonio import dumps_finite, gc_paused
from clstream.protocols.oaks.arguments import (
    add_generate_arguments,
    add_run_oaks_arguments,
    add_score_arguments,
)
from clstream.protocols.oaks.loader import load_oaks

if TYPE_CHECKING:
    from clstream.core.contracts import System
    from clstream.core.specs import RunSpec
    from clstream.driver.plan import RunJob
    from clstream.driver.request import RunRequest
    from clstream.protocols.oaks.arguments import RunOptions

__all__ = ["add_generate_arguments", "add_run_oaks_arguments", "add_score_arguments",
           "generate", "run", "score"]


# -- generate --------------------------------------------------------------------------------
MOST_GENERATED_TOKENS = 2_000_000_000
"""The most text one generated stream holds (each flag is bounded, and so is their product:
some gigabytes, far beyond any context length studied)."""


def generate(args: argparse.Namespace) -> int:
    from clstream.core.outputs import claim_file
    from clstream.driver.flags import positive

    for name, value, most in (("--docs", args.docs, 100_000), ("--chunks", args.chunks, 100_000),
                              ("--chunk-tokens", args.chunk_tokens, 1_000_000)):
        positive(name, value, most)
    total = args.docs * args.chunks * args.chunk_tokens
    if total > MOST_GENERATED_TOKENS:
        raise SpecError(f"flags --docs x --chunks x --chunk-tokens: {total:,} tokens of text; "
                        f"at most {MOST_GENERATED_TOKENS:,}")
    claim_file(args.out, role="dataset")  # before any work: never over a dataset
    kwargs: dict[str, Any] = {}
    if args.max_questions is not None:
        kwargs["max_questions"] = args.max_questions
    from clstream.protocols.oaks.babi import write_oaks_babi

    write_oaks_babi(
        args.out, seed=args.seed, docs=args.docs, chunks=args.chunks,
        chunk_tokens=args.chunk_tokens,
        haystack_files=[Path(p) for p in args.haystack] if args.haystack else None, **kwargs,
    )
    print(args.out)
    return 0


# -- run -------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    """``run oaks``: the runs of every seed, the model built once, through one driver."""
    from clstream.arguments.requests import seed_requests
    from clstream.driver.assemble import shared_models
    from clstream.driver.execute import drive
    from clstream.protocols.oaks.arguments import RunOptions

    requests = seed_requests(args, "oaks", add_run_oaks_arguments, RunOptions)
    with shared_models():
        jobs = [plan_run(request) for request in requests]
    return drive(jobs)


def plan_run(request: RunRequest[RunOptions]) -> RunJob:
    """``run oaks``: one planned run per system, a document per cell."""
    from clstream.driver.assemble import plan_job, run_basics
    from clstream.driver.flags import MOST_IN_FLIGHT, positive
    from clstream.driver.plan import StoredDataset
    from clstream.protocols.oaks.data import gold_view
    from clstream.protocols.oaks.prompts import template_fingerprint
    from clstream.protocols.oaks.runner import OaksRunner, docs_for_cache_budget, walk_prompts

    options = request.options
    positive("--docs-in-flight", options.docs_in_flight, MOST_IN_FLIGHT)
    positive("--cache-budget-tokens", options.cache_budget_tokens, 10**12)
    dataset = load_checked(options.data, "oaks-data", lambda: load_oaks(options.data))
    basics = run_basics(request)

    def docs_in_flight(spec: RunSpec, make: Callable[[], System]) -> int:
        if options.cache_budget_tokens is None:
            return int(options.docs_in_flight)
        docs = docs_for_cache_budget(options.cache_budget_tokens, dataset, make(),
                                     basics.model.tokenizer)
        basics.notes.append(f"{spec.system.label}: {docs} documents in flight for a cache of "
                            f"{options.cache_budget_tokens} tokens")
        return docs

    return plan_job(
        request, basics, protocol="oaks", unit="probe",
        dataset=StoredDataset(dataset.sha256, dataset.path, gold_view(dataset)),
        info={"prompt_template_hash": template_fingerprint(), "dataset_path": dataset.path},
        units={"probe": "probes"}, error_kinds=("probe",), cells_at_once=docs_in_flight,
        open_runner=lambda spec, make: partial(OaksRunner, dataset, spec, make_system=make,
                                               model=basics.model),
        walk=lambda make: partial(walk_prompts, dataset, make))


# -- score -----------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{x:.4f}"


def score(args: argparse.Namespace) -> int:
    from clstream.protocols.oaks.metrics import load_prediction_cells, score_oaks

    # Reading builds millions of small objects and no reference cycles: the cyclic collector
    # would rescan them all again and again (a third of the command's time), for nothing.
    with gc_paused():
        dataset = load_checked(args.data, "oaks-data", lambda: load_oaks(args.data))
        preds = load_checked(args.predictions, "oaks-predictions",
                             lambda: load_prediction_cells(args.predictions, dataset))
        result, missing = score_oaks(dataset, preds, allow_missing=args.allow_missing,
                                     predictions_path=args.predictions)
    if missing:
        print(f"clstream: {missing} predictions missing, counted as wrong", file=sys.stderr)
    if args.json:
        print(dumps_finite(result, indent=2))
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
