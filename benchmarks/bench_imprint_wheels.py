"""Seconds to read two wheels with ``ast`` and diff their public API (brief §3.2(b)), and the
features found, for package pairs given on the command line; optionally the seconds to build
the whole code dataset (snippets and items) from the same pair.

    .venv/bin/python benchmarks/bench_imprint_wheels.py numpy OLD.whl NEW.whl [PKG OLD NEW ...]
    .venv/bin/python benchmarks/bench_imprint_wheels.py --dataset scipy OLD.whl NEW.whl

Wheels are local files (e.g. from ``pip download --no-deps numpy==2.0.2 --only-binary :all:``);
nothing is fetched and nothing in them is imported.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from clstream.protocols.imprint.code import build_code_dataset
from clstream.protocols.imprint.wheels import diff_surfaces, read_wheel


def bench(package: str, old: str, new: str, dataset: bool) -> None:
    start = time.perf_counter()
    old_surface = read_wheel(old, package)
    new_surface = read_wheel(new, package)
    read = time.perf_counter() - start
    diff = diff_surfaces(old_surface, new_surface)
    total = time.perf_counter() - start
    kinds = Counter(f.kind for f in diff.features)
    print(f"{package} {old_surface.version} -> {new_surface.version}: "
          f"{len(diff.features)} features ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}), "
          f"{len(diff.rejected)} rejected, {len(diff.deprecations)} deprecations; "
          f"read {read:.2f} s, read+diff {total:.2f} s")
    for feature in diff.features:
        print(f"    {feature.kind:<9} {feature.path}  [{feature.evidence} {feature.version}]")
    if dataset:
        start = time.perf_counter()
        data = build_code_dataset(old, new, package, seed=0)
        families = Counter(i.family for i in data.items)
        print(f"  dataset: {len(data.corpus)} documents, {len(data.qa)} Q pairs, items "
              f"{dict(sorted(families.items()))} in {time.perf_counter() - start:.2f} s")


def main(argv: list[str]) -> None:
    dataset = "--dataset" in argv
    args = [a for a in argv if a != "--dataset"]
    if not args or len(args) % 3:
        raise SystemExit(__doc__)
    for i in range(0, len(args), 3):
        bench(args[i], args[i + 1], args[i + 2], dataset)


if __name__ == "__main__":
    main(sys.argv[1:])
