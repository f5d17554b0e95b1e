"""Client CPU per request of a whole ``clstream run`` against a served model, over a bare
aiohttp loop.

``bench_client.py`` times the OpenAI-compatible backend alone; a run adds the driver around it:
the response-cache and accounting middleware, transcripts noted and stored with the records they
served, routing, the transport log, progress counters, the runner's prompts and the results
store. This script times ``clstream run oaks DATA --model openai:loop --system window:w=1`` as a
process, the way a user starts it, against the loopback engine of the tests in a process of its
own (none of its CPU counted), on two generated OAKS-BABI streams:

- a long run, 2 documents x 30 chunks x 2,000 tokens: 2,400 probes, so 2,401 chat requests
  with the endpoint check's one-token request;
- a small run, 1 document x 2 chunks, 5 questions: 10 probes, 11 requests.

Client CPU per request is the long run's CPU less the small run's (start-up, imports, the
endpoint check and everything else a run pays once), over the 2,390 requests between them. The
floor is a bare aiohttp loop posting the same number of ~8,000-character streamed bodies in
this process (``bench_client.bare_aiohttp``). Medians of ``--repeats``; the command's own
start-up (``clstream --version``) is shown beside the small run. Byte code is written and
read as it is for users (``PYTHONDONTWRITEBYTECODE`` cleared for the timed processes).

    python benchmarks/bench_run_client.py [--repeats 5] [--readme]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_client import ENGINE, bare_aiohttp, requests_of
from cli_timing import ProcessTime, machine, markdown_table, run_cli, write_section

from clstream.protocols.oaks.babi import write_oaks_babi

SYSTEM = "window:w=1"
# Documents, chunks, questions per document.
LONG = (2, 30, 40)  # 2,400 probes
SMALL = (1, 2, 5)  # 10 probes
LONG_REQUESTS, SMALL_REQUESTS = 2401, 11  # the probes and the endpoint check's request
BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}  # empty: unset, as for a user
TARGET_MS, TARGET_SMALL_S = 0.8, 0.5


def floor_ms(url: str, requests: int, repeats: int) -> float:
    """A bare aiohttp loop's CPU per streamed request, ms (8 in flight)."""
    batch = requests_of(requests)
    runs = []
    for _ in range(repeats):
        start = time.process_time()
        asyncio.run(bare_aiohttp(url, batch, 8, True))
        runs.append(time.process_time() - start)
    return 1000 * statistics.median(runs) / requests


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--readme", action="store_true", help="rewrite the README table")
    args = p.parse_args()
    server = subprocess.Popen([sys.executable, str(ENGINE), "--slots", "256", "--service",
                               "0.0", "--tokens", "4"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for name, (docs, chunks, questions) in (("long", LONG), ("small", SMALL)):
                write_oaks_babi(root / f"{name}.json", seed=0, docs=docs, chunks=chunks,
                                chunk_tokens=2000, max_questions=questions)

            def run(name: str, k: int, *extra: str) -> ProcessTime:
                out = root / f"{name}{'-'.join(extra)}-{k}"
                return run_cli(["run", "oaks", str(root / f"{name}.json"), "--model",
                                "openai:loop", "--base-url", url, "--system", SYSTEM,
                                "--no-progress", "--out", str(out), *extra], env=BYTECODE)

            timed: dict[str, list[ProcessTime]] = {"long": [], "small": [], "none": []}
            for k in range(args.repeats + 1):  # the first round warms the caches, uncounted
                rounds = (("long", run("long", k)), ("small", run("small", k)),
                          ("none", run("long", k, "--transcripts", "none")))
                if k:
                    for key, figure in rounds:
                        timed[key].append(figure)
            startup = run_cli(["--version"], repeats=args.repeats, env=BYTECODE)
        floor = floor_ms(url, LONG_REQUESTS - SMALL_REQUESTS, args.repeats)
    finally:
        server.kill()
        server.wait()
    cpu = {key: statistics.median(t.cpu_s for t in runs) for key, runs in timed.items()}
    wall = {key: statistics.median(t.wall_s for t in runs) for key, runs in timed.items()}
    between = LONG_REQUESTS - SMALL_REQUESTS
    per = {key: 1000 * (cpu[key] - cpu["small"]) / between for key in ("long", "none")}
    rows = [
        ["run, transcripts stored (default)", f"{LONG_REQUESTS:,}", f"{cpu['long']:.2f}",
         f"{wall['long']:.2f}", f"{per['long']:.3f}", f"{per['long'] / floor:.2f}",
         "met" if per["long"] <= TARGET_MS else "NOT met"],
        ["run, --transcripts none", f"{LONG_REQUESTS:,}", f"{cpu['none']:.2f}",
         f"{wall['none']:.2f}", f"{per['none']:.3f}", f"{per['none'] / floor:.2f}", "-"],
        ["small run", f"{SMALL_REQUESTS}", f"{cpu['small']:.2f}", f"{wall['small']:.2f}",
         "-", "-", "met" if cpu["small"] <= TARGET_SMALL_S else "NOT met"],
        ["clstream --version", "0", f"{startup.cpu_s:.2f}", f"{startup.wall_s:.2f}", "-", "-",
         "-"],
        ["bare aiohttp loop (floor)", f"{between:,}", "-", "-", f"{floor:.3f}", "1.00", "-"],
    ]
    header = ["command", "requests", "CPU s", "wall s", "client ms CPU/request", "x floor",
              f"target (<= {TARGET_MS} ms/request, small run <= {TARGET_SMALL_S} s)"]
    table = markdown_table(header, rows)
    text = (f"Machine: {machine()}. OAKS `{SYSTEM}`, loopback engine, streamed answers of 4 "
            f"chunks; medians of {args.repeats}.\n\n{table}")
    print(text)
    if args.readme:
        write_section("run-client", text)


if __name__ == "__main__":
    main()
