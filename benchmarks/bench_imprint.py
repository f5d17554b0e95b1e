"""ImprintBench runs as users start them: ``clstream generate / run imprint`` as processes.

Two measurements, each a fresh results directory and a fresh ``clstream`` process:

- items: each setting's default procedural dataset (``generate imprint --setting S --seed 0``),
  then ``run imprint DATA --model builtin --samples 8`` with the base model, the oracle and
  ``rag:k=3``: items answered per second of the process's wall and CPU time (start-up, judging
  nothing, store writes included), with the start-up of a bare ``clstream --help`` process
  reported apart, and the same run's own wall time as the store records it;
- n in one request: the news dataset run with the oracle against an OpenAI-compatible server on
  127.0.0.1 started in this process (``tests/models/fake_openai_server.py``; it counts prompt
  tokens as words plus 3 per message), once with ``--samples 8`` (one request per item asking
  for n = 8, what the runner sends) and once with ``--samples 1``: requests and prompt tokens
  the server received. Eight separate requests per item would send the ``--samples 1`` prompt
  tokens eight times over; the ratio is the prefill the one request saves.

    .venv/bin/python benchmarks/bench_imprint.py [--skip-items] [--skip-server]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))
from fake_openai_server import FakeOpenAIServer  # noqa: E402

from clstream.store.db import ResultsStore  # noqa: E402

CLSTREAM = [sys.executable, "-m", "clstream"]
SYSTEMS = ("base", "oracle", "rag:k=3")


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one child process; fails loudly on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def items(root: Path) -> None:
    start_wall, start_cpu = timed([*CLSTREAM, "--help"])
    print(f"start-up (clstream --help): {start_wall:.2f} s wall, {start_cpu:.2f} s CPU")
    print(f"{'setting':<9}{'items':>7}{'runs':>6}{'gen s':>8}{'run wall s':>12}"
          f"{'run CPU s':>11}{'items/s':>9}{'items/CPU s':>13}{'in-run items/s':>16}")
    for setting in ("news", "code", "persona"):
        data = root / f"data-{setting}"
        gen_wall, _ = timed([*CLSTREAM, "generate", "imprint", "--setting", setting, "--seed",
                             "0", "--out", str(data)])
        out = root / f"results-{setting}"
        argv = [*CLSTREAM, "run", "imprint", str(data), "--model", "builtin", "--samples", "8",
                "--out", str(out), "--no-progress"]
        for system in SYSTEMS:
            argv += ["--system", system]
        wall, cpu = timed(argv)
        with ResultsStore(out) as store:
            runs = store.runs()
            answered = sum(store.count(r.run_id, "item", errors=False) for r in runs)
            in_run = sum(r.wall_s for r in runs)
        print(f"{setting:<9}{answered // len(runs):>7}{len(runs):>6}{gen_wall:>8.2f}"
              f"{wall:>12.2f}{cpu:>11.2f}{answered / wall:>9.0f}{answered / cpu:>13.0f}"
              f"{answered / in_run:>16.0f}")


def one_request(root: Path) -> None:
    data = root / "data-news"
    if not data.exists():
        timed([*CLSTREAM, "generate", "imprint", "--setting", "news", "--seed", "0", "--out",
               str(data)])
    rows = []
    for samples in (8, 1):
        with FakeOpenAIServer(model="bench") as server:
            out = root / f"results-server-{samples}"
            env = {**os.environ, "OPENAI_API_KEY": "unused"}
            wall, cpu = timed([*CLSTREAM, "run", "imprint", str(data), "--model",
                               "openai:bench", "--base-url", server.base_url, "--samples",
                               str(samples), "--system", "oracle", "--out", str(out),
                               "--no-progress"], env)
            prompt = sum(u["prompt_tokens"] for u in server.reported)
            rows.append((samples, len(server.requests), prompt, wall, cpu))
    print(f"{'samples':>8}{'requests':>10}{'prompt tokens':>15}{'wall s':>8}{'CPU s':>7}")
    for samples, requests, prompt, wall, cpu in rows:
        print(f"{samples:>8}{requests:>10}{prompt:>15}{wall:>8.2f}{cpu:>7.2f}")
    single = rows[1][2]
    print(f"n = 8 as one request: {rows[0][2]} prompt tokens; as 8 requests: {8 * single} "
          f"({8 * single / rows[0][2]:.2f}x)")


def code_stages(root: Path) -> None:
    import asyncio

    from clstream.models.builtin import BuiltinReader
    from clstream.protocols.imprint.settings.code.dataset import generate_code
    from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig
    from clstream.protocols.imprint.settings.code.writer import write_code_items

    model = BuiltinReader()
    start = time.perf_counter()
    data = generate_code(CodeWorldConfig(seed=0))
    build = time.perf_counter() - start
    written = [i for i in data.items if i.family in ("RefRes", "CompRel")]
    cache = root / "code_writer_cache.json"
    start = time.perf_counter()
    after = asyncio.run(write_code_items(data, model, cache_path=cache, golden_n=0))
    write = time.perf_counter() - start
    comprel = sum(1 for i in after.items if i.family == "CompRel")
    start = time.perf_counter()
    asyncio.run(write_code_items(data, model, cache_path=cache, golden_n=8,
                                 filter_cache=root / "golden_cache.jsonl"))
    golden = time.perf_counter() - start
    print(f"{'code stage':<40}{'items':>7}{'s':>8}{'items/s':>10}")
    for label, n, seconds in (("template build (all families)", len(data.items), build),
                              ("writer + validator (RefRes, CompRel)", len(written), write),
                              ("golden subset n=8 (CompRel)", comprel, golden)):
        print(f"{label:<40}{n:>7}{seconds:>8.2f}{n / seconds:>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-items", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--skip-code-stages", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-imprint-"))
    try:
        if not args.skip_items:
            items(root)
        if not args.skip_server:
            one_request(root)
        if not args.skip_code_stages:
            code_stages(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
