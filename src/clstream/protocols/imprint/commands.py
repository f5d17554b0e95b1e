"""ImprintBench verbs: ``generate imprint``, ``run imprint`` and ``score imprint`` (docs/imprint.md §2, §3).

``generate imprint --setting news|code|persona`` writes a dataset directory
(:mod:`clstream.protocols.imprint.schema`) from a seeded procedural world, or from the user's
own files (a JSONL of articles, two wheels of a package, PersonaMem or HorizonBench exports),
optionally passed through the no-context and with-context filters with a model.
``run imprint DATA`` runs methods over it; ``score imprint ITEMS PREDICTIONS`` scores a user's
own predictions in the docs/imprint.md §3.3 format. The verbs' flags are in
:mod:`clstream.protocols.imprint.arguments`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from clstream.arguments.requests import backend_flags, seed_requests
from clstream.core.contracts import System, supervision_of
from clstream.core.data_kinds import load_checked
from clstream.core.errors import SpecError
from clstream.core.files import write_atomic
from clstream.core.jsonio import dumps_finite
from clstream.core.outputs import claim_directory
from clstream.core.specs import RunSpec
from clstream.core.types import SamplingParams
from clstream.driver.assemble import plan_job, run_basics, shared_models
from clstream.driver.components import build_model, parse_components, takes_endpoint
from clstream.driver.execute import drive
from clstream.driver.flags import (
    MOST_IN_FLIGHT,
    SEED_MAX,
    bounded_int,
    positive,
)
from clstream.driver.plan import RunJob, StoredDataset
from clstream.driver.preflight import check_endpoint
from clstream.driver.request import RunRequest
from clstream.protocols.imprint.arguments import (
    RunOptions,
    add_generate_arguments,
    add_run_imprint_arguments,
    add_score_arguments,
)
from clstream.protocols.imprint.prompts import template_fingerprint
from clstream.protocols.imprint.runner import ImprintRunner
from clstream.protocols.imprint.schema import (
    Dataset,
    load_dataset,
    load_items,
    write_dataset,
)
from clstream.protocols.imprint.stage_timings import TIMINGS_NAME, recording

__all__ = ["add_generate_arguments", "add_run_imprint_arguments", "add_score_arguments",
           "generate", "run", "score"]


# -- the dataset a run reads ----------------------------------------------------------------
def dataset_view(data: Dataset) -> dict[str, Any]:
    """What the store keeps of a dataset: enough to judge and summarize a run without the
    directory (manifest, items, per-instance corpus sizes)."""
    sizes: dict[str, dict[str, int]] = {}
    for doc in data.corpus:
        entry = sizes.setdefault(doc.instance_id, {"documents": 0, "chars": 0})
        entry["documents"] += 1
        entry["chars"] += len(doc.text)
    return {"manifest": data.manifest.model_dump(),
            "items": [i.model_dump(exclude_defaults=True) | {"item_id": i.item_id}
                      for i in data.items],
            "instances": sizes}


def dataset_hash(data: Dataset) -> str:
    """sha256 of the dataset's content (documents, pairs, items), whatever its directory."""
    digest = hashlib.sha256()
    for part in (data.corpus, data.qa, data.items):
        for row in part:
            digest.update(json.dumps(row.model_dump(), sort_keys=True).encode())
            digest.update(b"\n")
        digest.update(b"\x00")
    return digest.hexdigest()


def corpus_tokens(data: Dataset, tokenizer: Any) -> dict[str, int]:
    """Tokens of C per instance with the evaluated model's tokenizer (docs/imprint.md §7.9)."""
    out: dict[str, int] = {}
    for doc in data.corpus:
        out[doc.instance_id] = out.get(doc.instance_id, 0) + int(tokenizer.count(doc.text))
    return out


# -- run ------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    """``run imprint``: the runs of every seed, the model built once, through one driver."""
    requests = seed_requests(args, "imprint", add_run_imprint_arguments, RunOptions)
    with shared_models():
        jobs = [plan_run(request) for request in requests]
    return drive(jobs)


def plan_run(request: RunRequest[RunOptions]) -> RunJob:
    """``run imprint``: one planned run per system; each instance (the corpus of news and
    code, each persona) is a cell."""
    own = request.options
    positive("--batch", own.batch, 100_000)
    positive("--parallel", own.parallel, MOST_IN_FLIGHT)
    data = load_checked(own.data, "imprint-dataset", lambda: load_dataset(own.data))
    if not data.items:
        raise SpecError(f"{own.data}: the dataset has no items")
    llm_items = [i.item_id for i in data.items if i.judge == "llm"]
    if llm_items and own.judge is None:
        raise SpecError(f"{own.data}: item {llm_items[0]!r} is judged 'llm'; give --judge "
                        "MODEL (the model that judges its answers)")
    if own.judge is not None and request.backend.base_url is not None \
            and own.judge_base_url is None \
            and not takes_endpoint(parse_components(request.model or "builtin", None, [])[0]):
        raise SpecError("flag --base-url: the answering model "
                        f"{request.model or 'builtin'!r} is served by no endpoint; give the "
                        "judge's server with --judge-base-url")
    basics = run_basics(request)
    judge = None
    endpoints = []
    params: dict[str, Any] = {"supervision": own.supervision, "setting": data.setting,
                              "prompt": own.prompt}
    view = dataset_view(data)
    view["corpus_tokens"] = corpus_tokens(data, basics.model.tokenizer)
    info: dict[str, Any] = {"prompt_template_hash": template_fingerprint(),
                            "supervision": own.supervision, "setting": data.setting}
    if own.judge is not None:
        from clstream.protocols.imprint.judge_plan import judge_mapping
        from clstream.protocols.imprint.llm_judges import (
            LLM_JUDGE_PARAMS,
            PROMPT_HASHES,
            LLMJudge,
        )
        judge_spec, _ = parse_components(own.judge, None, [])
        judge_model = build_model(judge_spec, {"base_url": "--judge-base-url",
                                               "api_key_env": "--judge-api-key-env"},
                                  base_url=own.judge_base_url,
                                  api_key_env=own.judge_api_key_env)
        judge = LLMJudge(judge_model, Path(request.out) / "judge_cache.jsonl")
        endpoints.append(("--judge-base-url", judge_model, LLM_JUDGE_PARAMS))
        # The judge decides the run's numbers, so it is part of the run spec (and its id).
        params["judge"] = {"model": judge_model.name, "spec": judge_spec.label,
                           "families": judge_mapping(data.setting, judge_model.name)}
        info["judge"] = {"model": judge_model.describe(), "prompt_hashes": PROMPT_HASHES}
    if own.strict_abstention:
        params["strict_abstention"] = True

    def takes_supervision(spec: RunSpec, system: System) -> None:
        accepted = supervision_of(system)
        if own.supervision not in accepted:
            raise SpecError(f"system {spec.system.label!r} takes supervision "
                            f"{', '.join(accepted)}, not {own.supervision}")

    return plan_job(
        request, basics, protocol="imprint", unit="item",
        dataset=StoredDataset(dataset_hash(data), str(Path(own.data).resolve()), view),
        params=params, info=info,
        units={"item": "items"}, error_kinds=("item", "call", "judgment"),
        check_system=takes_supervision, endpoints=endpoints,
        open_runner=lambda spec, make: partial(
            ImprintRunner, spec, make_system=make, data=data, supervision=own.supervision,
            model=basics.model, batch=own.batch, parallel=own.parallel, judge=judge,
            prompt_style=own.prompt))


# -- score ----------------------------------------------------------------------------------
def _ks(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    shown = repr(text) if len(text) <= 40 else f"a value of {len(text):,} characters"
    try:
        ks = tuple(bounded_int(part, -SEED_MAX, SEED_MAX) for part in text.split(","))
    except ValueError:
        raise SpecError(f"flag --k: expected integers separated by commas, got {shown}") from None
    if not ks or any(k < 1 for k in ks):
        raise SpecError(f"flag --k: every k must be >= 1, got {shown}")
    return ks


def score(args: argparse.Namespace) -> int:
    from clstream.protocols.imprint.chance import CONSTANT_ANSWERS, floor_text
    from clstream.protocols.imprint.llm_judges import LLMJudge
    from clstream.protocols.imprint.scoring import load_predictions, score_imprint

    items = load_checked(args.items, "imprint-items", lambda: load_items(args.items))
    predictions = load_checked(args.predictions, "imprint-predictions",
                               lambda: load_predictions(args.predictions))
    ks = _ks(args.k)
    llm = None
    if args.judge is not None:
        judge_spec, _ = parse_components(args.judge, None, [])
        judge_model = build_model(judge_spec, **backend_flags(args).options())
        cache = args.judge_cache or str(Path(args.predictions).with_suffix(".judge.jsonl"))
        llm = LLMJudge(judge_model, cache)
    missing = [i.item_id for i in items if i.item_id not in predictions]
    if missing and args.allow_missing:
        print(f"clstream: left out {len(missing)} item(s) with no prediction (first: "
              f"{', '.join(missing[:5])})", file=sys.stderr)
    result = score_imprint(items, predictions, ks=ks, allow_missing=args.allow_missing, llm=llm,
                           strict_abstention=args.strict_abstention)
    if result["left_out"]["judge_errors"]:
        print(f"clstream: left out {result['left_out']['judge_errors']} item(s) the judge gave "
              "no verdict for (its reply did not end in a verdict word)", file=sys.stderr)
    if args.json:
        print(dumps_finite(result, indent=2))
        return 0
    left = result["left_out"]
    print(f"{result['n_items']} items scored, {result['n_samples']} samples each; "
          "pass@1 ± one standard error over items"
          + (f" ({left['missing']} without a prediction and {left['judge_errors']} without "
             "a verdict left out)" if left["missing"] or left["judge_errors"] else ""))
    for family, row in result["by_family"].items():
        pk = "  ".join(f"pass@{k} {v:.3f}" for k, v in row["pass_at_k"].items())
        ac = "  ".join(f"allcorrect@{k} {v:.3f}" for k, v in row["all_correct_at_k"].items())
        se = "n/a" if row["se"] is None else f"{row['se']:.3f}"
        print(f"  {family:<9} n {row['n_items']:>5}  pass@1 {row['pass_at_1']:.3f} ± {se}  "
              f"{pk}  {ac}  judge: {row['judge']}")
    avg = result["avg"]
    print(f"  {'Avg':<9}          pass@1 {avg['pass_at_1']:.3f}  "
          f"allcorrect@n {avg['all_correct_at_n']:.3f}")
    print(f"constant answers, pass@1 % ({' / '.join(CONSTANT_ANSWERS.values())}; "
          f"{result['chance']['judge']} judges):")
    print(f"  {floor_text(result['chance'])}")
    return 0


# -- generate -------------------------------------------------------------------------------
def _build(args: argparse.Namespace) -> Dataset:
    small = args.size == "small"
    if args.setting == "news":
        if args.articles:
            from clstream.protocols.imprint.settings.news.from_articles import load_local_news
            if args.model is None:
                raise SpecError("flag --articles needs --model (it writes the questions)")
            model = _model(args)
            return load_local_news(args.articles, model, seed=args.seed,
                                   cache_path=str(Path(args.out) / "question_cache.json"))
        from clstream.protocols.imprint.settings.news.generate import NewsConfig, generate_news
        news = (NewsConfig(seed=args.seed, n_people=16, n_orgs=8, n_roles=4, n_quantities=3,
                           days=21, n_deals=3, n_launches=2, n_votes=2, qa_per_article=8)
                if small else NewsConfig(seed=args.seed))
        if args.model is None:
            return generate_news(news)
        from clstream.protocols.imprint.settings.news.stages import news_stages
        return news_stages(generate_news(news), _model(args), args.out)
    if args.setting == "code":
        from clstream.protocols.imprint.settings.code.dataset import (
            build_code_dataset,
            generate_code,
        )
        from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig
        if args.old_wheel or args.new_wheel or args.between_wheel:
            if not (args.old_wheel and args.new_wheel and args.package):
                raise SpecError("flags --old-wheel, --new-wheel and --package go together")
            return build_code_dataset(args.old_wheel, args.new_wheel, args.package,
                                      seed=args.seed, usage_dir=args.usage_dir,
                                      between_wheels=args.between_wheel)
        code = (CodeWorldConfig(seed=args.seed, n_modules=5, n_functions=16, n_classes=4,
                                n_added=6, n_added_methods=3, n_added_params=4, n_moved=2,
                                n_aliased=1, n_removed=2)
                if small else CodeWorldConfig(seed=args.seed))
        return generate_code(code)
    from clstream.protocols.imprint.settings.persona.synthetic import (
        PAPER_CHUNK_TOKENS,
        PersonaConfig,
        generate_persona,
    )
    if args.personamem:
        from clstream.protocols.imprint.settings.persona.from_exports import load_personamem
        return load_personamem(args.personamem)
    if args.horizon:
        from clstream.protocols.imprint.settings.persona.from_exports import load_horizon
        return load_horizon(args.horizon)
    persona = (PersonaConfig(seed=args.seed, n_personas=2, chunks=2, sessions_per_chunk=3,
                             chunk_tokens=600) if small
               else PersonaConfig(seed=args.seed, chunk_tokens=PAPER_CHUNK_TOKENS)
               if args.size == "paper" else PersonaConfig(seed=args.seed))
    if args.model is None:
        return generate_persona(persona)
    from clstream.protocols.imprint.settings.persona.stages import persona_stages
    return persona_stages(generate_persona(persona), _model(args), args.out)


def _model(args: argparse.Namespace) -> Any:
    """The model that writes questions (``--articles``) or filters items (``--filter``), built
    once, its endpoint checked before anything is written (as a run's are)."""
    built = getattr(args, "built_model", None)
    if built is None:
        spec, _ = parse_components(args.model, None, [])
        built = build_model(spec, **backend_flags(args).options())
        check_endpoint(built, SamplingParams(temperature=0.0, max_tokens=1))
        args.built_model = built
    return built


# What an interrupted generation of the same dataset leaves in its directory and a rerun reuses.
_REPLY_CACHES = ("question_cache.json", "filter_cache.jsonl", "filter_report.json",
                 "judge_cache.jsonl", "stage_cache.json", "code_writer_cache.json",
                 "golden_cache.jsonl", TIMINGS_NAME)


def _runs_stages(args: argparse.Namespace) -> bool:
    """Whether ``--model`` writes and audits the items of a procedural world (news and
    persona; docs/imprint.md §4.7)."""
    return ((args.setting == "news" and not args.articles)
            or (args.setting == "persona" and not (args.personamem or args.horizon)))


def generate(args: argparse.Namespace) -> int:
    claim_directory(args.out, role="dataset", reusable=_REPLY_CACHES)
    with recording() as timings:  # stage_timings.json, beside the card (docs/imprint.md §4.8)
        code = _generate(args)
    timings.write(args.out, args.setting, args.model)
    return code


def _generate(args: argparse.Namespace) -> int:
    staged = args.model is not None and _runs_stages(args)
    writes_code = args.setting == "code" and args.model is not None
    if args.model is not None and (args.articles or args.filter or staged or writes_code):
        _model(args)
    if args.articles or args.filter or staged or writes_code:  # model replies cached there
        Path(args.out).mkdir(parents=True, exist_ok=True)
    data = _build(args)
    if writes_code:  # the paper's code stages (docs/imprint.md §4.3)
        from clstream.protocols.imprint.settings.code.writer import write_code_items
        data = asyncio.run(write_code_items(
            data, _model(args), cache_path=Path(args.out) / "code_writer_cache.json",
            seed=args.seed, golden_n=args.filter_samples,
            filter_cache=Path(args.out) / "golden_cache.jsonl"))
    if args.filter:
        if args.model is None:
            raise SpecError("flag --filter needs --model")
        from clstream.protocols.imprint.filters import apply_filters
        data, report = asyncio.run(apply_filters(
            data, _model(args), n=args.filter_samples, blind_max_open=args.blind_max_open,
            blind_max_binary=args.blind_max_binary, ctx_min=args.ctx_min,
            cache_path=str(Path(args.out) / "filter_cache.jsonl")))
        write_atomic(Path(args.out) / "filter_report.json",
                     json.dumps(report, indent=2, sort_keys=True) + "\n")
        kept = ", ".join(f"{fam} {row['kept']}/{row['items']}"
                         for fam, row in sorted(report.get("families", {}).items()))
        print(f"filters: kept {kept} (details in {Path(args.out) / 'filter_report.json'})",
              file=sys.stderr)
    pipeline = data.manifest.config.get("pipeline")
    if isinstance(pipeline, dict) and args.model is not None:  # what the model stages did
        print(f"pipeline: {json.dumps(pipeline, sort_keys=True)}", file=sys.stderr)
    if not data.items:
        raise SpecError(f"{args.out}: no usable item came out "
                        + ("(every model reply was unreadable or failed: see the pipeline "
                           "counts above; a model that writes the asked-for JSON is needed)"
                           if args.articles else "(nothing to write)"))
    out = write_dataset(args.out, data)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(
        {i.family: sum(1 for j in data.items if j.family == i.family)
         for i in data.items}.items()))
    print(f"{data.setting}: {len(data.corpus)} documents, {len(data.qa)} training pairs, "
          f"{len(data.items)} items ({counts})", file=sys.stderr)
    print(out)
    return 0
