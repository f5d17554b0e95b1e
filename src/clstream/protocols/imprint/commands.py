"""ImprintBench verbs: ``generate imprint``, ``run imprint`` and ``score imprint`` (SPECS §4, §5).

``generate imprint --setting news|code|persona`` writes a dataset directory
(:mod:`clstream.protocols.imprint.schema`) from a seeded procedural world, or from the user's
own files (a JSONL of articles, two wheels of a package, PersonaMem or HorizonBench exports),
optionally passed through the no-context and with-context filters with a model.
``run imprint DATA`` runs methods over it; ``score imprint ITEMS PREDICTIONS`` scores a user's
own predictions in the SPECS §5 format.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from clstream.core.contracts import supervision_of
from clstream.core.errors import SpecError
from clstream.core.files import write_atomic
from clstream.core.specs import RunSpec
from clstream.protocols.common import build_model, parse_components, run_info, system_factory
from clstream.protocols.imprint.judging import LLM_JUDGE_PROMPT_HASH
from clstream.protocols.imprint.prompts import template_fingerprint
from clstream.protocols.imprint.runner import ImprintRunner
from clstream.protocols.imprint.schema import (
    SUPERVISIONS,
    Dataset,
    load_dataset,
    load_items,
    write_dataset,
)
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

__all__ = ["add_generate_arguments", "add_run_imprint_arguments", "add_score_arguments",
           "generate", "run", "score"]

# ImprintBench App. C.3: 8 samples, temperature 0.7, top-p 0.95, top-k 20, 4096 new tokens.
PAPER_SAMPLING = {"temperature": 0.7, "top_p": 0.95, "top_k": 20, "max_tokens": 4096,
                  "samples": 8}


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
    """Tokens of C per instance with the evaluated model's tokenizer (SPECS §4)."""
    out: dict[str, int] = {}
    for doc in data.corpus:
        out[doc.instance_id] = out.get(doc.instance_id, 0) + int(tokenizer.count(doc.text))
    return out


# -- run ------------------------------------------------------------------------------------
def add_run_imprint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="dataset directory written by 'clstream generate imprint'")
    add_run_arguments(p, "method NAME or NAME:key=value,... (repeatable), e.g. rag:k=5")
    p.add_argument("--supervision", choices=SUPERVISIONS, default="C",
                   help="what the method takes in: the corpus C, the training pairs Q, or both")
    p.add_argument("--batch", type=int, default=16, help="items asked per batch (default 16)")
    p.add_argument("--parallel", type=int, default=4, metavar="N",
                   help="batches asked at once (default 4)")
    p.add_argument("--no-progress", action="store_true")
    j = p.add_argument_group("LLM judge (items judged 'llm')")
    j.add_argument("--judge", default=None, metavar="MODEL",
                   help="model judging answers MATCH / NONMATCH / REFUSAL, e.g. openai:<name>")
    j.add_argument("--judge-base-url", default=None, help="the judge's OpenAI-compatible server")
    j.add_argument("--judge-api-key-env", default=None,
                   help="name of the environment variable holding the judge's API key")
    add_sampling_arguments(p)
    add_backend_arguments(p)
    p.set_defaults(**PAPER_SAMPLING)


def run(args: argparse.Namespace) -> int:
    positive("--batch", args.batch)
    positive("--parallel", args.parallel)
    data = load_dataset(args.data)
    if not data.items:
        raise SpecError(f"{args.data}: the dataset has no items")
    sampling = sampling_from_args(args)
    model_spec, systems = parse_components(args.model, args.model_args, args.system)
    llm_items = [i.item_id for i in data.items if i.judge == "llm"]
    if llm_items and args.judge is None:
        raise SpecError(f"{args.data}: item {llm_items[0]!r} is judged 'llm'; give --judge "
                        "MODEL (the model that judges its answers)")
    digest = dataset_hash(data)
    params = {"supervision": args.supervision, "setting": data.setting}
    specs = [RunSpec(protocol="imprint", dataset_hash=digest, system=s, model=model_spec,
                     sampling=sampling, seed=args.seed, params=params) for s in systems]
    model = build_model(model_spec, **backend_options(args))
    factories = [system_factory(spec, model) for spec in specs]  # validate before writing
    for spec, make in zip(specs, factories, strict=True):
        accepted = supervision_of(make())
        if args.supervision not in accepted:
            raise SpecError(f"system {spec.system.label!r} takes supervision "
                            f"{', '.join(accepted)}, not {args.supervision}")
    check_endpoint(model, sampling, systems)
    judge = None
    if llm_items:
        from clstream.protocols.imprint.judging import LLMJudge
        judge_spec, _ = parse_components(args.judge, None, [])
        judge_model = build_model(judge_spec, base_url=args.judge_base_url,
                                  api_key_env=args.judge_api_key_env)
        judge = LLMJudge(judge_model, Path(args.out) / "judge_cache.jsonl")
    view = dataset_view(data)
    view["corpus_tokens"] = corpus_tokens(data, model.tokenizer)
    failures: list[Failure] = []
    with ResultsStore(args.out, writer=True) as store:
        store.put_dataset(digest, str(Path(args.data).resolve()), view)
        for spec, make in zip(specs, factories, strict=True):
            runner = ImprintRunner(spec, store, make, data, args.supervision, model,
                                   batch=args.batch, parallel=args.parallel,
                                   show_progress=not args.no_progress, judge=judge)
            extra: dict[str, Any] = {"prompt_template_hash": template_fingerprint(),
                                     "supervision": args.supervision, "setting": data.setting}
            if judge is not None:
                extra["judge"] = {"model": judge.model.describe(),
                                  "prompt_hash": LLM_JUDGE_PROMPT_HASH}
            resumed = runner.register(run_info(model, make(), extra))
            result = run_interruptible(runner.run())
            state = "resumed" if resumed else "ran"
            print(f"{state} {spec.system.label} ({result.run_id}): {result.items_done}/"
                  f"{result.items_total} items, {result.errors} errors, {result.wall_s:.1f}s",
                  file=sys.stderr)
            if result.items_done < result.items_total:
                failures.append(Failure(
                    spec.system.label, result.run_id, result.errors,
                    result.items_total - result.items_done - result.errors,
                    result.items_total, first_error(store, result.run_id,
                                                    ("item", "call", "judgment"))))
    finish("imprint", "item", failures, resume_command("imprint", add_run_imprint_arguments,
                                                       args))
    print(args.out)
    return 0


# -- score ----------------------------------------------------------------------------------
def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("items", help="items JSONL (SPECS 5)")
    p.add_argument("predictions", help='predictions JSONL: {"item_id", "samples": [...]}')
    p.add_argument("--json", action="store_true")
    p.add_argument("--k", default=None, metavar="K,...",
                   help="k values of Pass@k and AllCorrect@k (default: 1 and n)")
    p.add_argument("--allow-missing", action="store_true",
                   help="leave out items with no prediction (counted on stderr) instead of "
                        "failing")
    p.add_argument("--judge", default=None, metavar="MODEL",
                   help="model for items judged 'llm' (e.g. openai:gpt-4.1-mini)")
    p.add_argument("--judge-cache", default=None, metavar="FILE",
                   help="verdict cache of the LLM judge (default: next to PREDICTIONS)")
    add_backend_arguments(p)


def _ks(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        ks = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise SpecError(f"flag --k: expected integers separated by commas, got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise SpecError(f"flag --k: every k must be >= 1, got {text!r}")
    return ks


def score(args: argparse.Namespace) -> int:
    from clstream.protocols.imprint.judging import LLMJudge
    from clstream.protocols.imprint.scoring import load_predictions, score_imprint

    items = load_items(args.items)
    predictions = load_predictions(args.predictions)
    ks = _ks(args.k)
    llm = None
    if args.judge is not None:
        judge_spec, _ = parse_components(args.judge, None, [])
        judge_model = build_model(judge_spec, **backend_options(args))
        cache = args.judge_cache or str(Path(args.predictions).with_suffix(".judge.jsonl"))
        llm = LLMJudge(judge_model, cache)
    missing = [i.item_id for i in items if i.item_id not in predictions]
    if missing and args.allow_missing:
        print(f"clstream: left out {len(missing)} item(s) with no prediction", file=sys.stderr)
    result = score_imprint(items, predictions, ks=ks, allow_missing=args.allow_missing, llm=llm)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['n_items']} items, {result['n_samples']} samples each")
    for family, row in result["by_family"].items():
        pk = "  ".join(f"pass@{k} {v:.3f}" for k, v in row["pass_at_k"].items())
        ac = "  ".join(f"allcorrect@{k} {v:.3f}" for k, v in row["all_correct_at_k"].items())
        se = "n/a" if row["se"] is None else f"{row['se']:.3f}"
        print(f"  {family:<9} n {row['n_items']:>5}  pass@1 {row['pass_at_1']:.3f} ± {se}  "
              f"{pk}  {ac}")
    avg = result["avg"]
    print(f"  {'Avg':<9}          pass@1 {avg['pass_at_1']:.3f}  "
          f"allcorrect@n {avg['all_correct_at_n']:.3f}")
    return 0


# -- generate -------------------------------------------------------------------------------
def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setting", choices=("news", "code", "persona"), required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="dataset directory to write")
    p.add_argument("--size", choices=("small", "default"), default="default",
                   help="procedural world size (small: for tests and demos)")
    g = p.add_argument_group("from your own files (instead of a procedural world)")
    g.add_argument("--articles", default=None, metavar="JSONL",
                   help="news: a JSONL of dated articles {id, date, title, text}; needs "
                        "--model to write questions")
    g.add_argument("--old-wheel", default=None, metavar="WHL", help="code: the older wheel")
    g.add_argument("--new-wheel", default=None, metavar="WHL", help="code: the newer wheel")
    g.add_argument("--package", default=None, help="code: the top-level package name")
    g.add_argument("--usage-dir", default=None, help="code: client scripts using the package")
    g.add_argument("--personamem", default=None, metavar="DIR",
                   help="persona: a PersonaMem directory (questions_*.csv, "
                        "shared_contexts_*.jsonl)")
    g.add_argument("--horizon", default=None, metavar="JSONL",
                   help="persona: a HorizonBench-style export")
    f = p.add_argument_group("filters (with a model; recorded on every kept item)")
    f.add_argument("--model", default=None,
                   help="model that writes questions (--articles) and answers the filters")
    f.add_argument("--filter", action="store_true",
                   help="drop items the model answers without the source, and items it cannot "
                        "answer with it")
    f.add_argument("--filter-samples", type=int, default=8)
    f.add_argument("--blind-max-open", type=int, default=0,
                   help="open items: dropped when more than this many blind samples are correct")
    f.add_argument("--blind-max-binary", type=int, default=6,
                   help="yes/no and choice items: dropped when more than this many are correct")
    f.add_argument("--ctx-min", type=int, default=1,
                   help="kept only when at least this many with-context samples are correct")
    add_backend_arguments(p)


def _build(args: argparse.Namespace) -> Dataset:
    small = args.size == "small"
    if args.setting == "news":
        if args.articles:
            from clstream.protocols.imprint.settings.news.local import load_local_news
            if args.model is None:
                raise SpecError("flag --articles needs --model (it writes the questions)")
            model = _model(args)
            return load_local_news(args.articles, model, seed=args.seed,
                                   cache_path=str(Path(args.out) / "question_cache.json"))
        from clstream.protocols.imprint.settings.news.generate import NewsConfig, generate_news
        news = (NewsConfig(seed=args.seed, n_people=16, n_orgs=8, n_roles=4, n_quantities=3,
                           days=21, n_deals=3, n_launches=2, n_votes=2, qa_per_article=8)
                if small else NewsConfig(seed=args.seed))
        return generate_news(news)
    if args.setting == "code":
        from clstream.protocols.imprint.settings.code.dataset import (
            build_code_dataset,
            generate_code,
        )
        from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig
        if args.old_wheel or args.new_wheel:
            if not (args.old_wheel and args.new_wheel and args.package):
                raise SpecError("flags --old-wheel, --new-wheel and --package go together")
            return build_code_dataset(args.old_wheel, args.new_wheel, args.package,
                                      seed=args.seed, usage_dir=args.usage_dir)
        code = (CodeWorldConfig(seed=args.seed, n_modules=5, n_functions=16, n_classes=4,
                                n_added=6, n_added_methods=3, n_added_params=4, n_moved=2,
                                n_aliased=1, n_removed=2)
                if small else CodeWorldConfig(seed=args.seed))
        return generate_code(code)
    from clstream.protocols.imprint.settings.persona.synthetic import (
        PersonaConfig,
        generate_persona,
    )
    if args.personamem:
        from clstream.protocols.imprint.settings.persona.local import load_personamem
        return load_personamem(args.personamem)
    if args.horizon:
        from clstream.protocols.imprint.settings.persona.local import load_horizon
        return load_horizon(args.horizon)
    persona = (PersonaConfig(seed=args.seed, n_personas=2, chunks=2, sessions_per_chunk=3)
               if small else PersonaConfig(seed=args.seed))
    return generate_persona(persona)


def _model(args: argparse.Namespace) -> Any:
    spec, _ = parse_components(args.model, None, [])
    return build_model(spec, **backend_options(args))


def generate(args: argparse.Namespace) -> int:
    if args.articles or args.filter:  # their model replies are cached in the dataset directory
        Path(args.out).mkdir(parents=True, exist_ok=True)
    data = _build(args)
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
    if isinstance(pipeline, dict):
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
