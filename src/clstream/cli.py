"""The ``clstream`` command line.

Every user error (bad file, record, field, flag or spec) is printed as one line
``clstream: error: ...`` with exit status 2 and no traceback; nothing stored is touched.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import NoReturn

from clstream import __version__
from clstream.core.errors import ClstreamError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the flag, and exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"clstream: error: {self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def _add_sampling(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sampling (defaults: the OAKS paper's setup)")
    g.add_argument("--temperature", type=float, default=0.7)
    g.add_argument("--top-p", type=float, default=0.8)
    g.add_argument("--top-k", type=int, default=20)
    g.add_argument("--min-p", type=float, default=0.0)
    g.add_argument("--max-tokens", type=int, default=4096)
    g.add_argument("--samples", type=int, default=1, help="completions per probe (n)")
    g.add_argument("--seed", type=int, default=0, help="run seed; per-request seeds derive from it")
    g.add_argument("--thinking", choices=["on", "off"], default=None,
                   help="thinking mode through chat_template_kwargs, where the model supports it")


def _add_backend(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model backend")
    g.add_argument("--model-args", default=None, metavar="KEY=VALUE,...",
                   help="backend settings that are part of the run spec, e.g. dtype=bfloat16")
    g.add_argument("--base-url", default=None, help="OpenAI-compatible server, e.g. http://host:8000/v1")
    g.add_argument("--api-key-env", default=None, help="name of the environment variable holding the API key")
    g.add_argument("--max-concurrency", type=int, default=None, help="requests in flight at most")
    g.add_argument("--request-timeout", type=float, default=None, help="seconds per request attempt")
    g.add_argument("--max-retries", type=int, default=None)
    g.add_argument("--cache", default=None, help="response cache (SQLite file) shared across runs")


def build_parser() -> argparse.ArgumentParser:
    from clstream.protocols.seqmem.commands import (
        add_generate_seqmem_parser,
        add_run_seqmem_parser,
        add_score_seqmem_parser,
    )

    parser = _Parser(prog="clstream", description="Measure continual learning of LLM systems on streams.")
    parser.add_argument("--version", action="version", version=f"clstream {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    gen = sub.add_parser("generate", help="write a procedural benchmark stream")
    gsub = gen.add_subparsers(dest="benchmark", required=True, parser_class=_Parser)
    babi = gsub.add_parser("oaks-babi", help="bAbI-style OAKS stream (SPECS 1.5)")
    babi.add_argument("--seed", type=int, default=0)
    babi.add_argument("--docs", type=int, default=2)
    babi.add_argument("--chunks", type=int, default=20)
    babi.add_argument("--chunk-tokens", type=int, default=2000)
    babi.add_argument("--max-questions", type=int, default=None, help="per document")
    babi.add_argument("--haystack", action="append", default=None, metavar="FILE",
                      help="text file(s) to use as distractor prose instead of generated prose")
    babi.add_argument("--out", required=True)
    add_generate_seqmem_parser(gsub)

    run = sub.add_parser("run", help="run systems over a benchmark into a results directory")
    rsub = run.add_subparsers(dest="protocol", required=True, parser_class=_Parser)
    roaks = rsub.add_parser("oaks", help="streaming knowledge (OAKS)")
    roaks.add_argument("data", help="OAKS JSON file")
    roaks.add_argument("--system", action="append", required=True,
                       help="NAME or NAME:key=value,... (repeatable), e.g. rag:k=8")
    roaks.add_argument("--model", default="builtin", help="builtin | openai:<model> | hf:<path> | vllm:<path>")
    roaks.add_argument("--out", required=True, help="results directory")
    roaks.add_argument("--docs-in-flight", type=int, default=1, help="documents processed concurrently")
    roaks.add_argument("--cache-budget-tokens", type=int, default=None, metavar="N",
                       help="prefix-cache size of the server in tokens: run max(1, N // largest "
                            "per-document context) documents at once (replaces --docs-in-flight)")
    roaks.add_argument("--no-progress", action="store_true")
    _add_sampling(roaks)
    _add_backend(roaks)
    add_run_seqmem_parser(rsub)

    score = sub.add_parser("score", help="score a predictions or records file")
    ssub = score.add_subparsers(dest="protocol", required=True, parser_class=_Parser)
    soaks = ssub.add_parser("oaks", help="score OAKS predictions (SPECS 5)")
    soaks.add_argument("data")
    soaks.add_argument("predictions")
    soaks.add_argument("--json", action="store_true")
    soaks.add_argument("--allow-missing", action="store_true")
    add_score_seqmem_parser(ssub)

    exp = sub.add_parser("export", help="write a run's predictions file (SPECS 5)")
    exp.add_argument("dir")
    exp.add_argument("--system", required=True, help="system label or run id")
    exp.add_argument("--model", default=None, help="model label, when a system ran with several")
    exp.add_argument("--out", required=True)

    summ = sub.add_parser("summary", help="metrics, counts, tokens and time per run")
    summ.add_argument("dir")
    summ.add_argument("--json", action="store_true")
    summ.add_argument("--prices", default=None, help="JSON: dollars per million tokens per model")

    rep = sub.add_parser("report", help="write a self-contained HTML report")
    rep.add_argument("dir")
    rep.add_argument("--out", default=None, help="HTML file (default: DIR/report.html)")
    rep.add_argument("--prices", default=None)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from clstream import commands

    args = build_parser().parse_args(argv)
    handler = getattr(args, "handler", None) or getattr(commands, f"cmd_{args.command}")
    try:
        result = handler(args)
        return int(result or 0)
    except ClstreamError as exc:
        print(f"clstream: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except FileNotFoundError as exc:
        print(f"clstream: error: {exc.filename}: no such file", file=sys.stderr)
        return 2
    except (IsADirectoryError, PermissionError) as exc:
        print(f"clstream: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `clstream summary DIR --json | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("clstream: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


def run_sync(coro) -> object:  # small helper so commands stay synchronous
    return asyncio.run(coro)


if __name__ == "__main__":
    sys.exit(main())
