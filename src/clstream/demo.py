"""``make demo``: for every registered protocol, generate a small stream and run a few systems
with the builtin offline model (each protocol says how, :meth:`StreamProtocol.demo`), then
print the summary, write one HTML report with a section per protocol and print its path."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clstream.cli import main as cli
from clstream.cli import protocols


def run_demo(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results"
    steps = [step for protocol in protocols() for step in protocol.demo(out, results)]
    steps += [["summary", str(results)],
              ["report", str(results), "--out", str(out / "report.html")]]
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
