"""Command handlers behind :mod:`clstream.cli` (one function per sub-command)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clstream.core.errors import SpecError
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.core.types import SamplingParams
from clstream.store.db import ResultsStore


def _sampling(args: argparse.Namespace) -> SamplingParams:
    try:
        return SamplingParams(
            temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, min_p=args.min_p,
            max_tokens=args.max_tokens, n=args.samples, seed=args.seed,
            thinking=None if args.thinking is None else args.thinking == "on",
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = "--" + str(err["loc"][0]).replace("_", "-").replace("--n", "--samples")
        raise SpecError(f"flag {flag}: {err['msg']}") from None


def _backend_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "base_url": args.base_url, "api_key_env": args.api_key_env,
        "max_concurrency": args.max_concurrency, "request_timeout": args.request_timeout,
        "max_retries": args.max_retries, "cache_path": args.cache,
    }


def _load_prices(path: str | None) -> dict[str, dict[str, float]] | None:
    if path is None:
        return None
    from clstream.models.pricing import load_prices

    return load_prices(path)


# -- generate --------------------------------------------------------------------------------
def cmd_generate(args: argparse.Namespace) -> int:
    from clstream.protocols.oaks.babi import write_oaks_babi

    for name, value in (("--docs", args.docs), ("--chunks", args.chunks),
                        ("--chunk-tokens", args.chunk_tokens)):
        if value < 1:
            raise SpecError(f"flag {name}: must be >= 1, got {value}")
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
def cmd_run(args: argparse.Namespace) -> int:
    from clstream.protocols.common import build_model, run_info, system_factory
    from clstream.protocols.oaks.loader import load_oaks
    from clstream.protocols.oaks.runner import OaksRunner, docs_for_cache_budget
    from clstream.systems.prompts import template_fingerprint

    for name, value in (("--docs-in-flight", args.docs_in_flight),
                        ("--cache-budget-tokens", args.cache_budget_tokens)):
        if value is not None and value < 1:
            raise SpecError(f"flag {name}: must be >= 1, got {value}")
    dataset = load_oaks(args.data)
    sampling = _sampling(args)
    model_spec = parse_model_spec(args.model, args.model_args)
    systems = [ComponentSpec.parse(s, "system") for s in args.system]
    model = build_model(model_spec, **_backend_options(args))
    specs = [
        RunSpec(protocol="oaks", dataset_hash=dataset.sha256, system=s, model=model_spec,
                sampling=sampling, seed=args.seed)
        for s in systems
    ]
    factories = [system_factory(spec, model) for spec in specs]  # validate all before writing
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
            result = asyncio.run(runner.run())
            state = "resumed" if resumed else "ran"
            print(f"{state} {spec.system.label} ({result.run_id}): "
                  f"{result.probes_done}/{result.probes_total} probes, {result.errors} errors, "
                  f"{result.wall_s:.1f}s", file=sys.stderr)
    print(args.out)
    return 0


# -- score -----------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{x:.4f}"


def cmd_score(args: argparse.Namespace) -> int:
    from clstream.protocols.oaks.loader import load_oaks
    from clstream.protocols.oaks.metrics import load_predictions, score_oaks

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


# -- export / summary / report ---------------------------------------------------------------
def cmd_export(args: argparse.Namespace) -> int:
    from clstream.protocols.seqmem.commands import export_seqmem
    from clstream.store.export import export_oaks, select_run

    with ResultsStore(args.dir) as store:
        run = select_run(store, args.system, args.model)
        if run.protocol == "seqmem":
            n = export_seqmem(store, run, args.out)
        else:
            n = export_oaks(store, run, args.out)
    print(f"wrote {n} records to {args.out}", file=sys.stderr)
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    from clstream.protocols.seqmem.summary import text_rows
    from clstream.report.summary import summarize

    with ResultsStore(args.dir) as store:
        summary = summarize(store, _load_prices(args.prices))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in summary["runs"]:
        groups.setdefault(run["protocol"], []).append(run)
    order = ["oaks", "seqmem", "clbench", "imprint"]  # known protocols first, as the report does
    rank = {p: i for i, p in enumerate(order)}
    for n, protocol in enumerate(sorted(groups, key=lambda p: (rank.get(p, len(order)), p))):
        runs = groups[protocol]
        print(("\n" if n else "") + f"[{protocol}]")
        if protocol == "seqmem":  # SPECS 2.2: online, hold-out, transfer, stage costs
            print("\n".join(text_rows(runs)))
            continue
        oaks = protocol == "oaks"
        print(f"{'system':<22}{'model':<16}"
              + (f"{'acc':>8}{'AL':>8}{'DS':>8}{'PM':>8}{'probes':>12}" if oaks else "")
              + f"{'errors':>8}{'tokens':>12}{'wall s':>9}")
        for run in runs:
            m = run.get("metrics") or {}
            status = run.get("status", {})
            nums = ""
            if oaks:
                cells = [m.get(k) for k in ("accuracy", "acquisition_latency",
                                           "distraction_susceptibility", "phase_miss")]
                nums = "".join(f"{c:>8.3f}" if c is not None else f"{'-':>8}" for c in cells)
                nums += f"{status.get('probes_done', 0)}/{status.get('probes_total', 0)}".rjust(12)
            tokens = run["tokens"]["prompt"] + run["tokens"]["completion"]
            print(f"{run['system']:<22}{run['model']:<16}{nums}"
                  f"{status.get('errors', 0):>8}{tokens:>12}{run['wall_s']:>9.1f}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from clstream.report.html import render_report
    from clstream.report.summary import summarize

    with ResultsStore(args.dir) as store:
        summary = summarize(store, _load_prices(args.prices))
    out = Path(args.out) if args.out else Path(args.dir) / "report.html"
    path = render_report(summary, out)
    print(path.resolve())
    return 0
