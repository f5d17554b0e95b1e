"""The same records every time (docs/design.md §8): every system the builtin model serves runs
the matrix of every protocol (oaks, seqmem, clbench, imprint; docs/design.md §11.5) twice, in
separate processes under different ``PYTHONHASHSEED`` values, and every run exports byte for
byte the same. Anything that depends on the process -- iteration over a set of strings under
hash randomization, which unit of a run first computed a shared cached value, the clock, object
ids -- would show as a difference here. About 50 s of CPU for the two matrices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clstream.cli import main
from clstream.core.registry import names, resolve
from clstream.store.db import ResultsStore
from clstream.systems.parametric import ParametricMethod

ROOT = Path(__file__).resolve().parents[2]


def served_systems() -> list[str]:
    """Every registered system but those answering with trained weights (the builtin model
    serves none)."""
    out = []
    for name in names("system"):
        target = resolve("system", name)
        if not (isinstance(target, type) and issubclass(target, ParametricMethod)):
            out.append(name)
    return out


def clstream(*argv: str, hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "clstream", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, (argv, done.stderr[-2000:])


def exports(out: Path, dest: Path) -> dict[str, dict[str, bytes]]:
    """Each run of ``out`` exported (here: reading a store depends on nothing of the process
    that wrote it), by run id: every file its export wrote, by name, and its bytes."""
    with ResultsStore(out) as store:
        run_ids = [run.run_id for run in store.runs()]
    found = {}
    for run_id in run_ids:
        folder = dest / run_id
        folder.mkdir(parents=True)
        assert main(["export", str(out), "--system", run_id, "--out",
                     str(folder / "records.jsonl")]) == 0
        found[run_id] = {f.name: f.read_bytes() for f in sorted(folder.iterdir())}
    return found


def test_every_system_exports_the_same_records_from_separate_processes(tmp_path: Path) -> None:
    systems = served_systems()
    assert {"memory-free", "icl", "notepad", "mem0", "ace", "full", "rag"} <= set(systems)
    results = {}
    for seed in ("1", "2"):
        out = tmp_path / f"hash{seed}"
        clstream("run", "matrix", "--protocols", "oaks,seqmem,clbench,imprint",
                 "--systems", ",".join(systems), "--model", "builtin", "--out", str(out),
                 "--no-progress", hash_seed=seed)
        results[seed] = exports(out, tmp_path / f"export{seed}")
    first, second = results["1"], results["2"]
    assert sorted(first) == sorted(second)
    assert len(first) == 4 * len(systems)
    differ = [run_id for run_id in first if first[run_id] != second[run_id]]
    assert not differ, f"runs exported differently: {differ}"
    assert all(files["records.jsonl"] for files in first.values())
