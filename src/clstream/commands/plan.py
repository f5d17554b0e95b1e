"""``clstream plan PROTOCOL ...`` and ``clstream plan --spec FILE``: what a run will cost, before
anything is spent (docs/plan.md).

The arguments are those of ``clstream run`` (the same protocol flags, or a run spec file); the
run is dry-run with planning models (:mod:`clstream.driver.dry_run`) and its requests totalled
(:mod:`clstream.models.plan_costs`): requests, prompt tokens, prefill after prefix caching,
completion tokens, and time and money where throughputs (``--prefill-tps``/``--decode-tps``,
or ``--throughput FILE`` as ``clstream check --save`` writes it) and prices (``--prices``) are
given. Nothing is sent to an endpoint and the results directory is not touched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.errors import DataError, SpecError
from clstream.core.jsonio import dumps_finite
from clstream.core.registry import names, resolve

if TYPE_CHECKING:
    from clstream.core.protocol import StreamProtocol
    from clstream.driver.dry_run import DryRun
    from clstream.driver.request import RunRequest

PLAN_VERSION = 2


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``plan`` besides the run's own."""
    g = p.add_argument_group("plan")
    g.add_argument("--cache-tokens", type=int, default=None, metavar="N",
                   help="the server's prefix cache in tokens (default: unbounded)")
    g.add_argument("--prefill-tps", type=float, default=None, metavar="TPS",
                   help="prompt tokens per second the server prefills")
    g.add_argument("--decode-tps", type=float, default=None, metavar="TPS",
                   help="completion tokens per second the server decodes")
    g.add_argument("--throughput", default=None, metavar="FILE",
                   help="throughputs measured by `clstream check --save FILE`")
    g.add_argument("--prices", default=None, metavar="FILE",
                   help="dollars per million tokens per model (as `summary --prices` reads)")
    g.add_argument("--tokenizer", default=None, metavar="DIR",
                   help="a local Hugging Face tokenizer directory to count an openai: model's "
                        "prompts with (default: the approximate tokenizer)")
    g.add_argument("--exact", action="store_true",
                   help="run every run of the plan and read every reply (as costly as the "
                        "run's own model calls): expected completion tokens from every "
                        "request, not a sample")
    g.add_argument("--json", action="store_true", help="the whole plan as JSON")


def _optional_out(p: argparse.ArgumentParser) -> None:
    for action in p._actions:
        if action.dest == "out":
            action.required = False
            action.help = "the run's results directory (not touched by a plan)"


def add_parser(subparsers: Any, protocols: list[StreamProtocol]) -> None:
    """Add ``plan`` with one sub-command per protocol, its flags those of ``run PROTOCOL``."""
    plan = subparsers.add_parser(
        "plan", help="count the requests, tokens, time and money of a run before running it",
        usage="%(prog)s PROTOCOL ... [plan flags] | %(prog)s --spec FILE [plan flags]")
    plan.add_argument("--spec", default=None, metavar="FILE", help="a run spec file (TOML)")
    plan.add_argument("--out", default=None, metavar="DIR", help=argparse.SUPPRESS)
    add_plan_arguments(plan)
    plan.set_defaults(handler=handler)
    psub = plan.add_subparsers(dest="protocol", required=False, parser_class=type(plan))
    for protocol in protocols:
        p = psub.add_parser(protocol.name, help=f"plan a run of {protocol.name}")

        def add(parser: argparse.ArgumentParser, protocol: StreamProtocol = protocol) -> None:
            protocol.run_command.add_to(parser)
            _optional_out(parser)
            add_plan_arguments(parser)

        p.defer(add)


def _entries(args: argparse.Namespace) -> list[tuple[StreamProtocol, RunRequest[Any]]]:
    """Each run to plan: its protocol and one seed's run request, every seed of ``--seeds`` (or
    of a spec file) as ``run`` runs them."""
    from clstream.arguments.requests import command_requests

    if args.protocol is not None:
        if args.spec is not None:
            raise SpecError("plan: give a protocol with its flags, or --spec FILE, not both")
        protocol = resolve("protocol", args.protocol)
        return [(protocol, request)
                for request in command_requests(args, protocol.name, protocol.run_command)]
    if args.spec is None:
        raise SpecError(f"plan: give a protocol ({', '.join(names('protocol'))}) or "
                        "--spec FILE")
    from clstream.commands.specfile import load_spec

    return [(protocol, request)
            for protocol, run_args in load_spec(args.spec,
                                                args.out if args.out is not None else "plan")
            for request in command_requests(run_args, protocol.name, protocol.run_command)]


def _throughputs(args: argparse.Namespace) -> tuple[float | None, float | None, str | None]:
    """Prefill and decode tokens/s: the flags, else the ``--throughput`` file."""
    from clstream.core.jsonio import loads_json_bytes, read_file_bytes
    from clstream.models.plan_costs import positive_rate

    prefill, decode, source = args.prefill_tps, args.decode_tps, "flags"
    if args.throughput is not None:
        path = Path(args.throughput)
        data = loads_json_bytes(read_file_bytes(path), path)
        if not isinstance(data, dict):
            raise DataError(path, None, None, "expected a JSON object (clstream check --save)")
        for key in ("prefill_tokens_per_s", "decode_tokens_per_s"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(
                    value, int | float) or not value > 0):
                raise DataError(path, None, key, f"expected a number > 0, got {value!r}")
        prefill = prefill if prefill is not None else data.get("prefill_tokens_per_s")
        decode = decode if decode is not None else data.get("decode_tokens_per_s")
        source = str(path)
    try:
        return (positive_rate("--prefill-tps", prefill), positive_rate("--decode-tps", decode),
                source if prefill is not None or decode is not None else None)
    except ValueError as exc:
        raise SpecError(str(exc)) from None


def _notes(args: argparse.Namespace, runs: list[DryRun], tokenizers: dict[str, Any]
           ) -> list[str]:
    notes = ["counts assume answers like the builtin reader's: where the next requests depend "
             "on a model's replies (prompts quoting earlier answers, feedback, episodes, "
             "retries, memory updates made from replies), a real model's run differs"]
    if any(run.protocol == "clbench" for run in runs):
        notes.append("CL-Bench episodes are as long as the builtin policies make them; a real "
                     "model's episodes may end sooner or later")
    for run in runs:
        if run.max_tries > 1:
            notes.append(f"{run.system} may try a task up to {run.max_tries} times: counted "
                         "are the tries the builtin reader's answers took")
        if run.replies_read is not None:
            notes.append(f"{run.system}: its requests do not depend on the replies, so "
                         f"expected completion tokens are the builtin reader's replies to "
                         f"{run.replies_read:,} of its {len(run.requests):,} requests (evenly "
                         "spread), scaled to all of them")
        if run.training_skipped:
            notes.append(f"{run.system} trains weights: training is not run in a plan; only "
                         "its answering requests are counted")
    for model, tokenizer in tokenizers.items():
        if not tokenizer["exact"] and not model.startswith("builtin"):
            notes.append(f"{model}: prompt tokens counted with the approximate tokenizer "
                         f"({tokenizer['chat_template']}); give --tokenizer DIR to count "
                         "with the model's own")
    if getattr(args, "cache", None):
        notes.append("the response cache (--cache) is not read: every request counts as sent")
    notes.append("expected completion tokens are the builtin reader's replies, an estimate; "
                 "the bound is max_tokens x n per request")
    return notes


def build_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The whole plan as ``--json`` prints it."""
    from clstream.driver.dry_run import dry_run
    from clstream.driver.flags import positive
    from clstream.models import plan_costs
    from clstream.models.planning import PlanningModel, planning_tokens
    from clstream.models.pricing import load_prices

    positive("--cache-tokens", args.cache_tokens, 10**12)
    prefill_tps, decode_tps, rate_source = _throughputs(args)
    prices = load_prices(args.prices) if args.prices is not None else None
    tokenizers: dict[str, Any] = {}

    def make_model(spec: Any, log: Any) -> Any:
        target = spec.args.get("target")
        name = f"{spec.name}:{target}" if target else spec.name
        tokens = planning_tokens(spec.name, target, args.tokenizer)
        tokenizers[name] = tokens.describe()
        return PlanningModel(name, tokens, log)

    runs = dry_run(_entries(args), make_model, sample=not args.exact,
                   walk=not args.exact and args.cache_tokens is None)
    per_run, total = plan_costs.figures([r.requests for r in runs], args.cache_tokens)
    entries = []
    for run, figures in zip(runs, per_run, strict=True):
        entry: dict[str, Any] = {"protocol": run.protocol, "system": run.system,
                                 "model": run.model, "seed": run.seed, "run_id": run.run_id,
                                 **figures,
                                 "training_skipped": run.training_skipped,
                                 "cost_usd": None}
        if prices is not None and run.model in prices:
            entry["cost_usd"] = plan_costs.cost_usd(figures, prices[run.model])
        entries.append(entry)
    total["cost_usd"] = None
    if prices is not None and entries and all(e["cost_usd"] is not None for e in entries):
        total["cost_usd"] = {k: sum(e["cost_usd"][k] for e in entries)
                             for k in ("max", "expected")}
    notes = _notes(args, runs, tokenizers)
    if prices is not None:
        notes += [f"{m}: not in the prices file, no cost" for m in
                  dict.fromkeys(r.model for r in runs) if m not in prices]
    throughput = None
    if rate_source is not None:
        throughput = {"prefill_tokens_per_s": prefill_tps, "decode_tokens_per_s": decode_tps,
                      "source": rate_source}
    time = None
    if prefill_tps is not None and decode_tps is not None:
        time = plan_costs.time_s(total, prefill_tps, decode_tps)
    elif rate_source is not None:
        notes.append("time needs both the prefill and the decode throughput")
    return {"plan_version": PLAN_VERSION, "runs": entries, "total": total,
            "cache": {"tokens": args.cache_tokens, "block_size": plan_costs.BLOCK_SIZE},
            "tokenizers": tokenizers, "throughput": throughput, "time_s": time,
            "notes": notes}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def lines(plan: dict[str, Any]) -> list[str]:
    """The human-readable plan."""
    cache = plan["cache"]["tokens"]
    seeds = len({r["seed"] for r in plan["runs"]}) > 1  # runs apart only by seed read apart
    rows = [(f"{r['protocol']} {r['system']}" + (f" seed {r['seed']}" if seeds else ""), r)
            for r in plan["runs"]]
    if len(rows) > 1:
        rows.append(("total", plan["total"]))
    header = ("run", "requests", "prompt", "prefill", "prefill lb", "compl. max", "compl. exp")
    from clstream.render.text_columns import aligned_lines

    out = aligned_lines(header, [
        (label, f"{r['requests']:,}", f"{r['prompt_tokens']:,}",
         f"{r['prefill_tokens']['computed']:,}", f"{r['prefill_tokens']['lower_bound']:,}",
         f"{r['completion_tokens']['max']:,}", f"{r['completion_tokens']['expected']:,}")
        for label, r in rows], [False] + [True] * 6)
    total = plan["total"]
    out.append("requests by stage: " + ", ".join(
        f"{stage} {n:,}" for stage, n in total["requests_by_stage"].items()))
    out.append(f"prefill: prompt tokens computed after prefix caching (cache "
               f"{'unbounded' if cache is None else f'{cache:,} tokens'}, blocks of "
               f"{plan['cache']['block_size']}); lb: a cache that never evicts")
    if plan["time_s"] is not None:
        rate = plan["throughput"]
        out.append(f"time at {rate['prefill_tokens_per_s']:,} prefill and "
                   f"{rate['decode_tokens_per_s']:,} decode tokens/s ({rate['source']}): "
                   f"{_duration(plan['time_s']['max'])} at most, "
                   f"{_duration(plan['time_s']['expected'])} expected")
    if total["cost_usd"] is not None:
        out.append(f"cost: ${total['cost_usd']['max']:,.2f} at most, "
                   f"${total['cost_usd']['expected']:,.2f} expected")
    out += [f"note: {n}" for n in plan["notes"]]
    return out


def handler(args: argparse.Namespace) -> int:
    plan = build_plan(args)
    if args.json:
        print(dumps_finite(plan, indent=2))
    else:
        print("\n".join(lines(plan)))
    sys.stdout.flush()
    return 0
