"""SeqMem-Eval verbs: ``run seqmem``, ``score seqmem``, ``generate seqmem-synthetic``, and the
records export (docs/seqmem.md §3) (docs/seqmem.md §2, §3); the verbs' flags are in
:mod:`clstream.protocols.seqmem.arguments`.

Each verb imports what only it needs when it runs (the driver, runner and evaluators for
``run``, the metrics for ``score``): ``score`` is a short process, and the driver's imports
would cost it as much as its scoring (benchmarks/README.md, "Scoring")."""

from __future__ import annotations

import argparse
import hashlib
import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.data_kinds import load_checked
from clstream.core.errors import SpecError, StoreError
from clstream.core.jsonio import dumps_finite, gc_paused
from clstream.protocols.seqmem.arguments import (
    add_generate_arguments,
    add_run_seqmem_arguments,
    add_score_arguments,
)

if TYPE_CHECKING:
    from clstream.core.reader import ResultsReader
    from clstream.core.records import RunRow
    from clstream.driver.plan import RunJob
    from clstream.driver.request import RunRequest
    from clstream.protocols.seqmem.arguments import RunOptions

__all__ = ["add_generate_arguments", "add_run_seqmem_arguments", "add_score_arguments",
           "export_seqmem", "generate", "run", "score"]


def _int_list(flag: str, text: str | None) -> list[int] | None:
    from clstream.driver.flags import SEED_MAX, bounded_int

    if text is None:
        return None
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(bounded_int(part, -SEED_MAX, SEED_MAX))
        except ValueError:
            shown = repr(part) if len(part) <= 24 else f"a value of {len(part):,} characters"
            raise SpecError(f"flag {flag}: {shown} is not a 64-bit integer") from None
    if not out:
        raise SpecError(f"flag {flag}: give at least one integer, e.g. 1,2,4")
    return out


def load_stream(own: RunOptions, seed: int) -> Any:
    """The task stream named by ``data``, ``--source`` and the hold-out flags (the hold-out
    sample drawn with ``seed``)."""
    from clstream.protocols.seqmem.streams import load_seqmem_stream

    name = "apibench-hf" if own.source in ("apibench", "apibench-hf") else own.source
    if name == "synthetic":
        if own.holdout is not None or own.holdout_file is not None:
            raise SpecError("flags --holdout/--holdout-file: the synthetic file has its own "
                            "hold-out set")
        if own.api_pool or own.category:
            raise SpecError("flags --api-pool/--category: not used with --source synthetic")
        return load_checked(own.data, "seqmem-stream",
                            lambda: load_seqmem_stream("synthetic", own.data))
    options: dict[str, Any] = {"holdout": own.holdout or 0, "holdout_mode": own.holdout_mode,
                               "seed": seed, "holdout_path": own.holdout_file}
    if name == "apibench-hf":
        if not own.api_pool:
            raise SpecError("flag --api-pool: required with --source apibench")
        options["pool_path"] = own.api_pool
    elif own.api_pool:
        raise SpecError("flag --api-pool: only used with --source apibench")
    if own.category:
        if name != "mmlu-pro":
            raise SpecError("flag --category: only used with --source mmlu-pro")
        options["categories"] = own.category
    return load_seqmem_stream(name, own.data, **options)


def stream_view(stream: Any, source: str) -> dict[str, Any]:
    """What the store keeps about the stream: enough to summarize and export a run."""
    return {"path": stream.source, "source": source, "name": stream.name, "kind": stream.kind,
            "file_sha256": stream.sha256, "n_tasks": len(stream.tasks),
            "task_ids": [t.id for t in stream.tasks],
            "holdout_ids": [t.id for t in stream.holdout]}


def stream_hash(view: dict[str, Any]) -> str:
    """Identity of the stream actually run: the file plus which tasks went where."""
    key = json.dumps({k: view[k] for k in ("file_sha256", "task_ids", "holdout_ids")},
                     sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()


# -- run -------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    """``run seqmem``: the runs of every seed, the model built once, through one driver."""
    from clstream.arguments.requests import seed_requests
    from clstream.driver.assemble import shared_models
    from clstream.driver.execute import drive
    from clstream.protocols.seqmem.arguments import RunOptions

    requests = seed_requests(args, "seqmem", add_run_seqmem_arguments, RunOptions)
    with shared_models():
        jobs = [plan_run(request) for request in requests]
    return drive(jobs)


def plan_run(request: RunRequest[RunOptions]) -> RunJob:
    """``run seqmem``: one planned run per system, the whole stream one cell."""
    from clstream.driver.assemble import plan_job, run_basics
    from clstream.driver.plan import StoredDataset
    from clstream.judges.evaluators import CodeEvaluator
    from clstream.protocols.seqmem.plan import SeqMemPlan
    from clstream.protocols.seqmem.prompts import template_fingerprint
    from clstream.protocols.seqmem.runner import SeqMemRunner

    own = request.options
    stream = load_stream(own, request.seed)
    plan = SeqMemPlan.build(len(stream.tasks), _int_list("--checkpoints", own.checkpoints),
                            _int_list("--horizons", own.horizons), own.retro_sample,
                            request.seed)
    options: dict[str, Any] = {"reveal_target": True} if own.reveal_target else {}
    if own.unsafe_unisolated_code:
        if stream.kind != "code":
            raise SpecError("flag --unsafe-unisolated-code: only used with code tasks "
                            "(--source humaneval)")
        options["allow_unisolated"] = True
    evaluator = stream.evaluator(**options)
    # Refuses before anything is stored when code would have to run without isolation.
    code_isolation = evaluator.preflight() if isinstance(evaluator, CodeEvaluator) else None
    basics = run_basics(request)
    view = stream_view(stream, own.source)
    return plan_job(
        request, basics, protocol="seqmem", unit="record",
        dataset=StoredDataset(stream_hash(view), str(view.get("path", "")), view),
        params={**plan.as_params(), "source": own.source, "holdout": own.holdout,
                "holdout_mode": own.holdout_mode, "categories": own.category or [],
                "reveal_target": bool(own.reveal_target), "evaluator": evaluator.name},
        info={"prompt_template_hash": template_fingerprint(), "dataset_path": stream.source,
              "evaluator": evaluator.name, "code_isolation": code_isolation},
        units={"online": "online", "holdout": "hold-out", "retro": "retro"},
        error_kinds=("online", "holdout", "retro"),
        open_runner=lambda spec, make: partial(SeqMemRunner, stream.tasks, stream.holdout, spec,
                                               make_system=make, evaluate=evaluator.evaluate,
                                               plan=plan))


# -- score -----------------------------------------------------------------------------------
def score(args: argparse.Namespace) -> int:
    from clstream.protocols.seqmem.metrics import load_seqmem_records, score_seqmem

    with gc_paused():  # many small acyclic objects: nothing for the cyclic collector to find
        result = score_seqmem(load_checked(args.records, "seqmem-records",
                                           lambda: load_seqmem_records(args.records)))
    if args.json:
        print(dumps_finite(result, indent=2))
        return 0
    for key in ("online_acc", "ped", "mer", "r_min", "holdout_acc", "trend_ho", "iv"):
        if key in result:
            print(f"{key:<14}{result[key]:.4f}")
    for group in ("bwt", "forgetting"):
        for t, value in result.get(group, {}).items():
            print(f"{f'{group}({t})':<14}{value:.4f}")
    return 0


# -- generate --------------------------------------------------------------------------------
def generate(args: argparse.Namespace) -> int:
    from clstream.core.outputs import claim_file
    from clstream.protocols.seqmem.synthetic import (
        generate_seqmem_synthetic,
        write_seqmem_synthetic,
    )

    data = generate_seqmem_synthetic(seed=args.seed, tasks=args.tasks, holdout=args.holdout)
    claim_file(args.out, role="dataset")  # never over a dataset
    print(write_seqmem_synthetic(data, args.out))
    return 0


# -- export ----------------------------------------------------------------------------------
def export_seqmem(store: ResultsReader, run: RunRow, out: str | Path) -> int:
    """Write the run's records exactly as docs/seqmem.md §3.1 defines them (JSONL), atomically."""
    from clstream.core.jsonio import write_jsonl
    from clstream.protocols.seqmem.run_summary import seqmem_rows

    if run.protocol != "seqmem":
        raise StoreError(f"{store.dir}: run {run.run_id} is a {run.protocol} run, not seqmem")
    return write_jsonl(out, seqmem_rows(store, run))
