"""SeqMem-Eval verbs: ``run seqmem``, ``score seqmem``, ``generate seqmem-synthetic``, and the
SPECS §5 records export (SPECS §2, §5)."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from clstream.core.errors import ClstreamError, SpecError, StoreError
from clstream.core.files import atomic_writer
from clstream.core.jsonio import gc_paused
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.core.specs import RunSpec
from clstream.judges.evaluators import CodeEvaluator
from clstream.protocols.common import build_model, parse_components, run_info, system_factory
from clstream.protocols.options import (
    add_backend_arguments,
    add_run_arguments,
    add_sampling_arguments,
    backend_options,
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
from clstream.protocols.seqmem.metrics import load_seqmem_records, score_seqmem
from clstream.protocols.seqmem.plan import SeqMemPlan
from clstream.protocols.seqmem.prompts import template_fingerprint
from clstream.protocols.seqmem.runner import SeqMemRunner
from clstream.protocols.seqmem.streams import load_seqmem_stream
from clstream.protocols.seqmem.summary import seqmem_rows
from clstream.protocols.seqmem.synthetic import generate_seqmem_synthetic, write_seqmem_synthetic
from clstream.store.db import ResultsStore

SOURCES = ("synthetic", "humaneval", "math500", "mmlu-pro", "apibench", "apibench-hf")


def _int_list(flag: str, text: str | None) -> list[int] | None:
    if text is None:
        return None
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            raise SpecError(f"flag {flag}: {part!r} is not an integer") from None
    if not out:
        raise SpecError(f"flag {flag}: give at least one integer, e.g. 1,2,4")
    return out


def load_stream(args: argparse.Namespace) -> Any:
    """The task stream named by ``data``, ``--source`` and the hold-out flags."""
    name = "apibench-hf" if args.source in ("apibench", "apibench-hf") else args.source
    if name == "synthetic":
        if args.holdout is not None or args.holdout_file is not None:
            raise SpecError("flags --holdout/--holdout-file: the synthetic file has its own "
                            "hold-out set")
        if args.api_pool or args.category:
            raise SpecError("flags --api-pool/--category: not used with --source synthetic")
        return load_seqmem_stream("synthetic", args.data)
    options: dict[str, Any] = {"holdout": args.holdout or 0, "holdout_mode": args.holdout_mode,
                               "seed": args.seed, "holdout_path": args.holdout_file}
    if name == "apibench-hf":
        if not args.api_pool:
            raise SpecError("flag --api-pool: required with --source apibench")
        options["pool_path"] = args.api_pool
    elif args.api_pool:
        raise SpecError("flag --api-pool: only used with --source apibench")
    if args.category:
        if name != "mmlu-pro":
            raise SpecError("flag --category: only used with --source mmlu-pro")
        options["categories"] = args.category
    return load_seqmem_stream(name, args.data, **options)


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
    stream = load_stream(args)
    plan = SeqMemPlan.build(len(stream.tasks), _int_list("--checkpoints", args.checkpoints),
                            _int_list("--horizons", args.horizons), args.retro_sample, args.seed)
    options: dict[str, Any] = {"reveal_target": True} if args.reveal_target else {}
    if args.unsafe_unisolated_code:
        if stream.kind != "code":
            raise SpecError("flag --unsafe-unisolated-code: only used with code tasks "
                            "(--source humaneval)")
        options["allow_unisolated"] = True
    evaluator = stream.evaluator(**options)
    # Refuses before anything is stored when code would have to run without isolation.
    code_isolation = evaluator.preflight() if isinstance(evaluator, CodeEvaluator) else None
    sampling = sampling_from_args(args)
    model_spec, systems = parse_components(args.model, args.model_args, args.system)
    view = stream_view(stream, args.source)
    params = {**plan.as_params(), "source": args.source, "holdout": args.holdout,
              "holdout_mode": args.holdout_mode, "categories": args.category or [],
              "reveal_target": bool(args.reveal_target), "evaluator": evaluator.name}
    specs = [RunSpec(protocol="seqmem", dataset_hash=stream_hash(view), system=s,
                     model=model_spec, sampling=sampling, seed=args.seed, params=params)
             for s in systems]
    model = build_model(model_spec, **backend_options(args))
    factories = [system_factory(spec, model) for spec in specs]  # validate all before writing
    # A dead endpoint, or a system too big for its context, fails here, before any writing.
    check_endpoint(model, sampling, systems)
    failures: list[Failure] = []
    with ResultsStore(args.out, writer=True) as store:
        for spec, make in zip(specs, factories, strict=True):
            runner = SeqMemRunner(stream.tasks, stream.holdout, spec, store, make,
                                  evaluator.evaluate, plan, view,
                                  show_progress=not args.no_progress, model=model)
            info = run_info(model, make(), {"prompt_template_hash": template_fingerprint(),
                                            "dataset_path": stream.source,
                                            "evaluator": evaluator.name,
                                            "code_isolation": code_isolation})
            resumed = runner.register(info)
            state = "resumed" if resumed else "ran"
            try:
                result = run_interruptible(runner.run())
            except ClstreamError as exc:  # the stream stopped (an online answer failed)
                failures.append(_failure(store, runner, spec.system.label, str(exc)))
                print(f"stopped {spec.system.label} ({runner.run_id})", file=sys.stderr)
                continue
            totals = result.counts
            print(f"{state} {spec.system.label} ({result.run_id}): online "
                  f"{result.online_done}/{totals['online']}, hold-out "
                  f"{result.holdout_done}/{totals['holdout']}, retro "
                  f"{result.retro_done}/{totals['retro']}, {result.errors} errors, "
                  f"{result.wall_s:.1f}s", file=sys.stderr)
            if result.online_done + result.holdout_done + result.retro_done < sum(totals.values()):
                failures.append(_failure(store, runner, spec.system.label, None))
    finish("seqmem", "record", failures,
           resume_command("seqmem", add_run_seqmem_arguments, args))
    print(args.out)
    return 0


def _failure(store: ResultsStore, runner: SeqMemRunner, label: str, stopped: str | None
             ) -> Failure:
    """What a run left undone: errors stored (plus the online step that stopped the stream,
    which is not stored) and records never reached."""
    totals = runner.totals
    done = sum(store.count(runner.run_id, kind, errors=False) for kind in totals)
    failed = sum(store.count(runner.run_id, kind, errors=True) for kind in totals)
    failed += stopped is not None
    error = stopped or first_error(store, runner.run_id, ("online", "holdout", "retro"))
    return Failure(label, runner.run_id, failed, max(0, sum(totals.values()) - done - failed),
                   sum(totals.values()), error)


def add_run_seqmem_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="synthetic stream JSON, or a task file (see --source)")
    p.add_argument("--source", choices=SOURCES, default="synthetic",
                   help="what DATA holds (default: synthetic)")
    add_run_arguments(p, "memory method NAME or NAME:key=value,... (repeatable), e.g. exp-rag:k=3")
    p.add_argument("--checkpoints", default=None,
                   help="hold-out checkpoints, tasks processed, e.g. 0,10,20 "
                        "(default: 0 and round(i*T/9), i=1..9)")
    p.add_argument("--horizons", default=None,
                   help="re-evaluation horizons, e.g. 1,2,4 (default: powers of two below T)")
    p.add_argument("--retro-sample", type=float, default=1.0, metavar="F",
                   help="fraction of tasks re-evaluated at each horizon (seeded; default 1)")
    p.add_argument("--holdout", type=int, default=None, metavar="N",
                   help="task files: the last N tasks (or a sample, --holdout-mode) are hold-out")
    p.add_argument("--holdout-mode", choices=("last", "sample"), default="last")
    p.add_argument("--holdout-file", default=None, help="task files: hold-out tasks from a file")
    p.add_argument("--api-pool", default=None, help="APIBench API pool (with --source apibench)")
    p.add_argument("--category", action="append", default=None,
                   help="MMLU-Pro category to keep (repeatable)")
    p.add_argument("--reveal-target", action="store_true",
                   help="dataset evaluators add the reference answer to failure feedback")
    p.add_argument("--unsafe-unisolated-code", action="store_true",
                   help="code tasks: where bubblewrap is missing, run model-written code without "
                        "OS isolation instead of refusing (unsafe; recorded in every verdict)")
    p.add_argument("--no-progress", action="store_true")
    add_sampling_arguments(p)
    add_backend_arguments(p)


# -- score -----------------------------------------------------------------------------------
def score(args: argparse.Namespace) -> int:
    with gc_paused():  # many small acyclic objects: nothing for the cyclic collector to find
        result = score_seqmem(load_seqmem_records(args.records))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for key in ("online_acc", "ped", "mer", "r_min", "holdout_acc", "trend_ho", "iv"):
        if key in result:
            print(f"{key:<14}{result[key]:.4f}")
    for group in ("bwt", "forgetting"):
        for t, value in result.get(group, {}).items():
            print(f"{f'{group}({t})':<14}{value:.4f}")
    return 0


def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", help="JSONL of online / holdout / retro records")
    p.add_argument("--json", action="store_true")


# -- generate --------------------------------------------------------------------------------
def generate(args: argparse.Namespace) -> int:
    data = generate_seqmem_synthetic(seed=args.seed, tasks=args.tasks, holdout=args.holdout)
    print(write_seqmem_synthetic(data, args.out))
    return 0


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tasks", type=int, default=200, help="stream length T")
    p.add_argument("--holdout", type=int, default=40, help="hold-out tasks")
    p.add_argument("--out", required=True)


# -- export ----------------------------------------------------------------------------------
def export_seqmem(store: ResultsReader, run: RunRow, out: str | Path) -> int:
    """Write the run's records exactly as SPECS §5 defines them (JSONL), atomically."""
    if run.protocol != "seqmem":
        raise StoreError(f"{store.dir}: run {run.run_id} is a {run.protocol} run, not seqmem")
    rows = seqmem_rows(store, run)
    with atomic_writer(out) as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return len(rows)
