"""Seconds to read two wheels with ``ast`` and diff their public API (brief §3.2(b)), and the
features found, for package pairs given on the command line; optionally the seconds to build
the whole code dataset (snippets and items) from the same pair.

    .venv/bin/python benchmarks/bench_imprint_wheels.py numpy OLD.whl NEW.whl [PKG OLD NEW ...]
    .venv/bin/python benchmarks/bench_imprint_wheels.py --dataset scipy OLD.whl NEW.whl
    .venv/bin/python benchmarks/bench_imprint_wheels.py    # no pairs: see below

With no pair given (as ``make bench`` runs it) it times the generated fictional library's two
wheels, then every pair of wheels of one package in the directory ``$CLSTREAM_REAL_WHEELS``
names (oldest and newest version of each package there), with ``--dataset``.

Wheels are local files (e.g. from ``pip download --no-deps numpy==2.0.2 --only-binary :all:``);
nothing is fetched and nothing in them is imported.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from clstream.protocols.imprint.settings.code.dataset import build_code_dataset
from clstream.protocols.imprint.settings.code.wheels import diff_surfaces, read_wheel


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


def _version_key(wheel: Path) -> tuple[int, ...]:
    version = wheel.name.split("-")[1]
    return tuple(int(part) for part in re.findall(r"\d+", version))


def default_pairs(tmp: str) -> list[str]:
    """The fictional library's wheels, then the oldest and newest wheel of each package in
    ``$CLSTREAM_REAL_WHEELS``."""
    from clstream.protocols.imprint.settings.code.synthetic import (
        CodeWorldConfig,
        write_library_wheels,
    )

    old, new, _ = write_library_wheels(CodeWorldConfig(seed=0), tmp)
    args = ["quillkit", str(old), str(new)]
    directory = os.environ.get("CLSTREAM_REAL_WHEELS")
    if directory:
        by_package: dict[str, list[Path]] = {}
        for wheel in Path(directory).glob("*.whl"):
            by_package.setdefault(wheel.name.split("-")[0], []).append(wheel)
        for package, wheels in sorted(by_package.items()):
            if len(wheels) >= 2:
                wheels.sort(key=_version_key)
                args += [package, str(wheels[0]), str(wheels[-1])]
    return args


def main(argv: list[str]) -> None:
    dataset = "--dataset" in argv
    args = [a for a in argv if a != "--dataset"]
    if not args:
        with tempfile.TemporaryDirectory() as tmp:
            pairs = default_pairs(tmp)
            for i in range(0, len(pairs), 3):
                bench(pairs[i], pairs[i + 1], pairs[i + 2], True)
        return
    if len(args) % 3:
        raise SystemExit(__doc__)
    for i in range(0, len(args), 3):
        bench(args[i], args[i + 1], args[i + 2], dataset)


if __name__ == "__main__":
    main(sys.argv[1:])
