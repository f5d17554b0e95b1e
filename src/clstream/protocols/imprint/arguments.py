"""The flags of the ImprintBench verbs: ``generate imprint``, ``run imprint`` and ``score
imprint`` (docs/imprint.md §2, §3).

They live apart from the verbs themselves (:mod:`clstream.protocols.imprint.commands`) so that
building a verb's parser, for ``--help`` or before it runs, imports only argparse and the shared
option groups, not the dataset schema (pydantic), judges, runner or store. The supervision
choices are therefore written out here; a test checks them against
:data:`clstream.protocols.imprint.schema.SUPERVISIONS`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from clstream.arguments.groups import (
    add_backend_arguments,
    add_driver_arguments,
    add_run_arguments,
    count_type,
    endpoint_url,
    seed_value,
)

# What a method takes in (docs/imprint.md §2): the corpus C, the training pairs Q, or both.
SUPERVISIONS: tuple[str, ...] = ("C", "Q", "C+Q")

# How an item is asked (docs/imprint.md §2); checked against
# :data:`clstream.protocols.imprint.prompts.PROMPT_STYLES` by a test.
PROMPT_STYLES: tuple[str, ...] = ("bare", "coached")

# ImprintBench App. C.3: 8 samples, temperature 0.7, top-p 0.95, top-k 20, 4096 new tokens.
PAPER_SAMPLING = {"temperature": 0.7, "top_p": 0.95, "top_k": 20, "max_tokens": 4096,
                  "samples": 8}


def add_judge_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--judge`` and ``--strict-abstention``, the same on ``run`` and ``score``."""
    p.add_argument("--judge", default=None, metavar="MODEL",
                   help="judge model: the paper's LLM judges (Y/N consistency, MATCH / "
                        "NONMATCH / REFUSAL rubric, identifier fallback) decide the families "
                        "the paper judges with an LLM, e.g. openai:<name>; without it the "
                        "deterministic judges decide (items judged 'llm' need it)")
    p.add_argument("--strict-abstention", action="store_true",
                   help="the abstention judge takes no denial ('No, ...') as abstaining "
                        "(ImprintBench App. D.1 instead of E.1)")


def add_run_imprint_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="dataset directory written by 'clstream generate imprint'")
    add_run_arguments(p, "method NAME or NAME:key=value,... (repeatable), e.g. rag:k=5")
    p.add_argument("--supervision", choices=SUPERVISIONS, default="C",
                   help="what the method takes in: the corpus C, the training pairs Q, or both")
    p.add_argument("--prompt", choices=PROMPT_STYLES, default="bare",
                   help="how items are asked: bare, the question alone as the paper asks it "
                        "(default), or coached, which also tells the model to say it has no "
                        "record rather than guess and to end with an answer line")
    p.add_argument("--batch", type=int, default=16, help="items asked per batch (default 16)")
    p.add_argument("--parallel", type=int, default=4, metavar="N",
                   help="batches asked at once (default 4)")
    j = p.add_argument_group("judges (docs/imprint.md §6)")
    add_judge_arguments(j)
    j.add_argument("--judge-base-url", default=None, type=endpoint_url, help="the judge's OpenAI-compatible server")
    j.add_argument("--judge-api-key-env", default=None,
                   help="name of the environment variable holding the judge's API key")
    add_driver_arguments(p)
    p.set_defaults(**PAPER_SAMPLING)


@dataclass(frozen=True)
class RunOptions:
    """The flags of ``run imprint`` that are its own: the dataset, the supervision and prompt
    style, batching, and the judge (:class:`~clstream.driver.request.RunRequest`'s
    ``options``)."""

    data: str
    supervision: str
    prompt: str
    batch: int
    parallel: int
    judge: str | None
    strict_abstention: bool
    judge_base_url: str | None
    judge_api_key_env: str | None


def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("items", help="items JSONL (docs/imprint.md §3.2)")
    p.add_argument("predictions", help='predictions JSONL: {"item_id", "samples": [...]}')
    p.add_argument("--json", action="store_true")
    p.add_argument("--k", default=None, metavar="K,...",
                   help="k values of Pass@k and AllCorrect@k (default: 1 and n)")
    p.add_argument("--allow-missing", action="store_true",
                   help="leave out items with no prediction (counted on stderr) instead of "
                        "failing")
    add_judge_arguments(p)
    p.add_argument("--judge-cache", default=None, metavar="FILE",
                   help="verdict cache of the LLM judge (default: next to PREDICTIONS)")
    add_backend_arguments(p)


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setting", choices=("news", "code", "persona"), required=True)
    p.add_argument("--seed", type=seed_value, default=0)
    p.add_argument("--out", required=True, help="dataset directory to write")
    p.add_argument("--size", choices=("small", "default", "paper"), default="default",
                   help="procedural world size (small: for tests and demos; paper: persona "
                        "histories of the paper's length, about 38.7K tokens per chunk)")
    g = p.add_argument_group("from your own files (instead of a procedural world)")
    g.add_argument("--articles", default=None, metavar="JSONL",
                   help="news: a JSONL of dated articles {id, date, title, text}; needs "
                        "--model to write questions")
    g.add_argument("--old-wheel", default=None, metavar="WHL", help="code: the older wheel")
    g.add_argument("--new-wheel", default=None, metavar="WHL", help="code: the newer wheel")
    g.add_argument("--between-wheel", action="append", default=[], metavar="WHL",
                   help="code: a wheel of a release between the two (repeatable, in release "
                        "order); each feature is dated by the first release that has it")
    g.add_argument("--package", default=None, help="code: the top-level package name")
    g.add_argument("--usage-dir", default=None, help="code: client scripts using the package")
    g.add_argument("--personamem", default=None, metavar="DIR",
                   help="persona: a PersonaMem directory (questions_*.csv, "
                        "shared_contexts_*.jsonl)")
    g.add_argument("--horizon", default=None, metavar="JSONL",
                   help="persona: a HorizonBench-style export")
    f = p.add_argument_group("filters (with a model; recorded on every kept item)")
    f.add_argument("--model", default=None,
                   help="model that writes questions (--articles; code: RefRes and CompRel "
                        "through the paper's writer, validator and golden subset) and "
                        "answers the filters")
    f.add_argument("--filter", action="store_true",
                   help="drop items the model answers without the source, and items it cannot "
                        "answer with it")
    f.add_argument("--filter-samples", type=count_type(1, 1_024), default=8)
    f.add_argument("--blind-max-open", type=count_type(0, 1_024), default=0,
                   help="open items: dropped when more than this many blind samples are correct")
    f.add_argument("--blind-max-binary", type=count_type(0, 1_024), default=6,
                   help="yes/no and choice items: dropped when more than this many are correct")
    f.add_argument("--ctx-min", type=count_type(0, 1_024), default=1,
                   help="kept only when at least this many with-context samples are correct")
    add_backend_arguments(p)

