"""The flags of the OAKS verbs: ``generate oaks-babi``, ``run oaks`` and ``score oaks``
(docs/oaks.md §2, §3).

They live apart from the verbs themselves (:mod:`clstream.protocols.oaks.commands`) so that
building a verb's parser, for ``--help`` or before it runs, imports only argparse and the shared
option groups: the loader, runner, store and numeric libraries are imported when the verb runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from clstream.arguments.groups import (
    add_driver_arguments,
    add_run_arguments,
    count_type,
    seed_value,
)


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed_value, default=0)
    p.add_argument("--docs", type=int, default=2)
    p.add_argument("--chunks", type=int, default=20)
    p.add_argument("--chunk-tokens", type=int, default=2000)
    p.add_argument("--max-questions", type=count_type(1, 100_000), default=None, help="per document")
    p.add_argument("--haystack", action="append", default=None, metavar="FILE",
                   help="text file(s) to use as distractor prose instead of generated prose")
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true",
                   help="replace an existing file at --out (runs made from it keep their "
                        "stored copy; results stores are never replaced)")


def add_run_oaks_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="OAKS JSON file")
    add_run_arguments(p, "NAME or NAME:key=value,... (repeatable), e.g. rag:k=8")
    p.add_argument("--docs-in-flight", type=int, default=1, help="documents processed concurrently")
    p.add_argument("--cache-budget-tokens", type=int, default=None, metavar="N",
                   help="prefix-cache size of the server in tokens: run max(1, N // largest "
                        "per-document context) documents at once (replaces --docs-in-flight)")
    add_driver_arguments(p)


@dataclass(frozen=True)
class RunOptions:
    """The flags of ``run oaks`` that are its own: the stream and how many documents run at
    once (:class:`~clstream.driver.request.RunRequest`'s ``options``)."""

    data: str
    docs_in_flight: int
    cache_budget_tokens: int | None


def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data")
    p.add_argument("predictions")
    p.add_argument("--json", action="store_true")
    p.add_argument("--allow-missing", action="store_true")
