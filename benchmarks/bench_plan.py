"""How close ``clstream plan`` comes to the run it plans (docs/plan.md).

For OAKS and SeqMem-Eval, each with a few systems, this plans a run with ``--model
openai:NAME`` against a loopback OpenAI-compatible server that answers every request with the
builtin reader's reply and reports usage counted with the approximate tokenizer
(``tests/models/fake_openai_server.py``, ``PolicyServer``), then makes the run and reads its
``summary --json``. Printed per run: requests, prompt tokens and completion tokens, predicted
and measured, and the ratio predicted / measured (1.000 is exact). The request count and the
prompt tokens should match (the plan replays the run); the completion tokens the plan
expects are the builtin reader's replies, the same replies the server gives here, so they
match too (an OAKS run of more than 128 requests has them estimated from a sample of its
replies, docs/plan.md §2; these runs are smaller); against a real model only the bound
(``max_tokens`` x ``n``) holds.

    .venv/bin/python benchmarks/bench_plan.py [--readme]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cli_timing import machine, markdown_table, write_section

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))

from fake_openai_server import PolicyServer  # noqa: E402

from clstream.cli import main  # noqa: E402

MODEL = "policy-model"
CASES = {
    "oaks": (["generate", "oaks-babi", "--seed", "3", "--docs", "2", "--chunks", "8",
              "--chunk-tokens", "400", "--max-questions", "6"],
             ["full", "rag:k=2", "window:w=3"]),
    "seqmem": (["generate", "seqmem-synthetic", "--seed", "2", "--tasks", "40", "--holdout",
                "8"],
               ["memory-free", "exp-recent", "exp-rag"]),
}


def _cli(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    if status != 0:
        raise SystemExit(f"clstream {' '.join(argv)}: exit {status}")
    return out.getvalue()


def measure(protocol: str, workdir: Path) -> list[list[object]]:
    generate, systems = CASES[protocol]
    data = workdir / f"{protocol}.json"
    _cli([*generate, "--out", str(data)])
    out = workdir / f"{protocol}-results"
    rows: list[list[object]] = []
    with PolicyServer(model=MODEL) as server:
        argv = [protocol, str(data), *[a for s in systems for a in ("--system", s)],
                "--model", f"openai:{MODEL}", "--base-url", server.base_url,
                "--max-concurrency", "4", "--out", str(out)]
        start = time.perf_counter()
        plan = json.loads(_cli(["plan", *argv, "--json"]))
        plan_s = time.perf_counter() - start
        _cli(["run", *argv, "--no-progress"])
    measured = {r["system"]: r for r in json.loads(_cli(["summary", str(out), "--json"]))["runs"]}
    for run in plan["runs"]:
        real: dict[str, Any] = measured[run["system"]]
        requests = sum(int(s["records"]) for s in real["tokens_by_stage"].values()
                       if s["prompt"] > 0)
        prompt, completion = real["tokens"]["prompt"], real["tokens"]["completion"]
        rows.append([
            f"{protocol} {run['system']}",
            f"{run['requests']:,} / {requests:,}", f"{run['requests'] / requests:.3f}",
            f"{run['prompt_tokens']:,} / {prompt:,}", f"{run['prompt_tokens'] / prompt:.3f}",
            f"{run['completion_tokens']['expected']:,} / {completion:,}",
            f"{run['completion_tokens']['expected'] / completion:.3f}",
            f"{run['prefill_tokens']['computed']:,}", f"{plan_s:.1f}",
        ])
    return rows


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true",
                        help="rewrite the bench:plan section of benchmarks/README.md")
    args = parser.parse_args()
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for protocol in CASES:
            rows += measure(protocol, Path(tmp))
    table = markdown_table(
        ["run", "requests (plan / run)", "ratio", "prompt tokens (plan / run)", "ratio",
         "completion (plan expected / run)", "ratio", "prefill after caching (plan)",
         "plan wall s (all systems)"], rows)
    text = f"{machine()}\n\n{table}"
    print(text)
    if args.readme:
        write_section("plan", text)


if __name__ == "__main__":
    main_bench()
