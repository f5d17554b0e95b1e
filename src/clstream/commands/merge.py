"""``clstream merge OUT DIR...``: several results directories combined into a new one
(docs/design.md §11.6; the rules are :mod:`clstream.store.merge`'s)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def merge(args: argparse.Namespace) -> int:
    from clstream.core.outputs import claim_directory
    from clstream.store.merge import merge_results

    # never into a results store or a dataset; an existing directory is merge's own refusal
    claim_directory(args.out, force=True)
    counts = merge_results(args.out, args.dirs)
    shared = f" ({counts.shared_runs} found in more than one)" if counts.shared_runs else ""
    print(f"merged {len(args.dirs)} directories into {args.out}: {counts.runs} runs{shared}, "
          f"{counts.records:,} records, {counts.states:,} memory snapshots", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("merge", help="combine results directories into a new one")
    p.add_argument("out", help="the new results directory (absent or empty)")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="results directories to combine")
    p.set_defaults(handler=merge)
