"""``make demo``: generate an OAKS-BABI stream, run four context strategies with the builtin
offline model, write the HTML report and print its path. Takes well under a minute on 2 cores."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clstream.cli import main as cli

DEMO_SYSTEMS = ("full", "window:w=4", "rag:k=4", "rag+window:k=2,w=2")


def run_demo(out: Path, docs: int = 3, chunks: int = 40, chunk_tokens: int = 2000) -> int:
    out.mkdir(parents=True, exist_ok=True)
    data = out / "oaks-babi.json"
    steps = [
        ["generate", "oaks-babi", "--seed", "7", "--docs", str(docs), "--chunks", str(chunks),
         "--chunk-tokens", str(chunk_tokens), "--out", str(data)],
        ["run", "oaks", str(data), "--model", "builtin", "--out", str(out / "results"),
         *[arg for s in DEMO_SYSTEMS for arg in ("--system", s)]],
        ["summary", str(out / "results")],
        ["report", str(out / "results"), "--out", str(out / "report.html")],
    ]
    for step in steps:
        print("$ clstream " + " ".join(step), file=sys.stderr)
        code = cli(step)
        if code:
            return code
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m clstream.demo")
    parser.add_argument("--out", default="demo-out")
    args = parser.parse_args()
    return run_demo(Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
