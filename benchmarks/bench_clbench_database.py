"""The database exploration task's generated databases at each size (docs/clbench.md §4.2).

Per size (option ``size``: ``small``, the default, and ``paper``, 50,000 products per
category): seconds to build the pre-migration rows (SQLite bulk inserts, in memory), to
migrate a copy and to make the question bank (its gold and stale queries run on both
databases); then an environment's copy of both (SQLite's backup); the rows per category, the
size of each database, and whether the migration bites on every post-migration question.

    .venv/bin/python benchmarks/bench_clbench_database.py [--seed 0] [--readme]
"""

from __future__ import annotations

import argparse
import sqlite3
import time

from cli_timing import machine, write_section

from clstream.protocols.clbench.envs.database import generator
from clstream.protocols.clbench.envs.database.environment import SIZES, DatabaseEnv


def _megabytes(conn: sqlite3.Connection) -> float:
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    return float(pages * size / 1e6)


def bench_size(name: str, seed: int) -> list[str]:
    n_products, n_reviews = SIZES[name]
    layout = generator.make_layout(seed)
    start = time.perf_counter()
    pre = generator.build_database(seed, layout, n_products, n_reviews)
    built = time.perf_counter()
    post = generator.migrate(pre, seed, layout)
    migrated = time.perf_counter()
    bank = generator.make_questions(seed, layout, pre, post)
    banked = time.perf_counter()
    env = DatabaseEnv(seed, options={"size": name})  # builds again, then copies (cached after)
    start_copy = time.perf_counter()
    DatabaseEnv(seed, options={"size": name}).close()
    copied = time.perf_counter()
    env.close()
    counts = []
    for category in generator.CATEGORIES:
        g = layout.group[category]
        products = pre.execute(f"SELECT COUNT(*) FROM {g}_products").fetchone()[0]
        reviews = pre.execute(f"SELECT COUNT(*) FROM {g}_reviews").fetchone()[0]
        counts.append(f"{category} {products:,}/{reviews:,}")
    bites = sum(generator.drift_bites(q, pre, post) for q in bank if q.post)
    line = (f"{name:<7}{built - start:>8.1f}{migrated - built:>9.1f}{banked - migrated:>7.1f}"
            f"{copied - start_copy:>7.2f}{_megabytes(pre):>8.0f}{_megabytes(post):>8.0f}"
            f"{bites:>5}/{sum(q.post for q in bank)}")
    pre.close()
    post.close()
    return [line, f"        products/reviews per category: {', '.join(counts)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--readme", action="store_true", help="rewrite the README section")
    args = parser.parse_args()
    lines = [f"seed {args.seed}; seconds; MB per database; post-migration questions on which "
             "the migration bites",
             f"{'size':<7}{'rows s':>8}{'migrate':>9}{'bank':>7}{'copy':>7}{'pre MB':>8}"
             f"{'post MB':>8}{'bites':>8}"]
    for name in SIZES:
        lines += bench_size(name, args.seed)
    text = "\n".join(lines)
    print(f"machine: {machine()}\n{text}")
    if args.readme:
        write_section("output-bench_clbench_database",
                      f"Machine: {machine()}.\n\n```\n{text}\n```")


if __name__ == "__main__":
    main()
