"""Every command under hostile input (docs/design.md §7): bad paths, empty and binary files,
numbers that are huge, negative, infinite or not numbers, unknown names, damaged databases,
spec files nested or sized without bound. Each row of :data:`ROWS` is one command line; each
must exit non-zero with exactly one line on stderr and no traceback, and leave a reference
results directory (one small OAKS run, built once) byte for byte as it was.

Rows run in this process (the CLI's ``main``); :data:`SUBPROCESS_ROWS` run a few of them as a
user would, through ``python -m clstream``. ``{static}`` in a row is the /v1 URL of a plain
static web server (404 on GET, 501 on POST, as ``python -m http.server`` answers): no
endpoint check may take it for a model server.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli_main

Setup = Callable[[Path], None]
HUGE = "1" + "0" * 5000  # more digits than Python converts
BIG = str(2**64)
NESTED = "[" * 5000 + "]" * 5000


def main(argv: list[str]) -> int:
    """The CLI in this process; argparse's own refusals exit through SystemExit."""
    try:
        return cli_main(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1


def digest(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` by content, but for what SQLite keeps beside a database
    a reader opens: its shared-memory index (``-shm``) and an empty write-ahead log."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()
            and not p.name.endswith("-shm")
            and not (p.name.endswith("-wal") and p.stat().st_size == 0)}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny OAKS stream and the reference results directory ``res`` (two runs)."""
    base = tmp_path_factory.mktemp("hostile")
    assert main(["generate", "oaks-babi", "--docs", "1", "--chunks", "3", "--chunk-tokens",
                 "150", "--max-questions", "4", "--out", str(base / "oaks.json")]) == 0
    assert main(["run", "oaks", str(base / "oaks.json"), "--model", "builtin", "--system",
                 "full", "--system", "rag:k=2", "--no-progress", "--out", str(base / "res")]) == 0
    assert main(["generate", "seqmem-synthetic", "--tasks", "8", "--holdout", "2", "--out",
                 str(base / "seqmem.json")]) == 0
    (base / "empty").write_bytes(b"")
    (base / "binary").write_bytes(bytes(range(256)) * 8)
    (base / "emptydir").mkdir()
    return base


@pytest.fixture(scope="module")
def static(root: Path) -> Iterator[str]:
    """The /v1 URL of a static web server over an empty directory, for the module."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Nothing on stderr: the rows read it."""

    handler = functools.partial(Quiet, directory=str(root / "emptydir"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


# -- setups: files a row needs, written under the module's directory ------------------------


def _write(name: str, text: str) -> Setup:
    def setup(root: Path) -> None:
        (root / name).write_text(text, encoding="utf-8")
    return setup


def _copy_res(name: str, damage: Callable[[Path], None]) -> Setup:
    """A copy of the reference results directory, damaged by ``damage(database)``."""
    def setup(root: Path) -> None:
        target = root / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(root / "res", target)
        damage(target / "results.sqlite")
    return setup


def _copy_store_file(name: str) -> Setup:
    """The reference results database copied to ``name``, outside any results directory."""
    def setup(root: Path) -> None:
        shutil.copyfile(root / "res" / "results.sqlite", root / name)
    return setup


def _random_bytes(db: Path) -> None:
    db.write_bytes(hashlib.sha512(b"not a database").digest() * 64)


def _truncated(db: Path) -> None:
    db.write_bytes(db.read_bytes()[:6000])


def _spec_not_json(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET spec='{x' WHERE system='full'")
    conn.commit()
    conn.close()


def _prices(rate: str) -> Setup:
    return _write("prices.json", f'{{"builtin": {{"prompt": {rate}, "completion": 1}}}}')


def _spec(name: str, body: str, entries: int = 1) -> Setup:
    entry = '[[run]]\nprotocol = "oaks"\ndata = "oaks.json"\nsystems = ["full"]\n'
    return _write(name, f'out = "res"\n{body}\n' + entry * entries)


def _spec_entry(name: str, line: str) -> Setup:
    return _write(name, 'out = "res"\n[[run]]\nprotocol = "oaks"\ndata = "oaks.json"\n'
                        f'systems = ["full"]\n{line}\n')


RUN = ["run", "oaks", "{root}/oaks.json", "--model", "builtin", "--no-progress",
       "--out", "{res}"]
RUN_FULL = [*RUN, "--system", "full"]
SEQMEM = ["run", "seqmem", "{root}/seqmem.json", "--model", "builtin", "--system", "memory-free",
          "--no-progress", "--out", "{res}"]
NO_SETUP: Setup | None = None

# (id, argv, setup): {root} is the module's directory, {res} the reference results directory.
ROWS: list[tuple[str, list[str], Setup | None]] = [
    # sampling flags: finite and in range
    ("temperature inf", [*RUN_FULL, "--temperature", "inf"], NO_SETUP),
    ("temperature nan", [*RUN_FULL, "--temperature", "nan"], NO_SETUP),
    ("temperature above 2", [*RUN_FULL, "--temperature", "2.5"], NO_SETUP),
    ("temperature negative", [*RUN_FULL, "--temperature", "-1"], NO_SETUP),
    ("temperature huge", [*RUN_FULL, "--temperature", "1e999"], NO_SETUP),
    ("top-p zero", [*RUN_FULL, "--top-p", "0"], NO_SETUP),
    ("top-p nan", [*RUN_FULL, "--top-p", "nan"], NO_SETUP),
    ("min-p inf", [*RUN_FULL, "--min-p", "inf"], NO_SETUP),
    ("top-k huge", [*RUN_FULL, "--top-k", HUGE], NO_SETUP),
    ("max-tokens zero", [*RUN_FULL, "--max-tokens", "0"], NO_SETUP),
    ("max-tokens huge", [*RUN_FULL, "--max-tokens", BIG], NO_SETUP),
    ("samples negative", [*RUN_FULL, "--samples", "-2"], NO_SETUP),
    ("request-timeout inf", [*RUN_FULL, "--request-timeout", "inf"], NO_SETUP),
    ("request-timeout zero", [*RUN_FULL, "--request-timeout", "0"], NO_SETUP),
    ("max-retries negative", [*RUN_FULL, "--max-retries", "-1"], NO_SETUP),
    # seeds: 0..2**63-1
    ("seed negative", [*RUN_FULL, "--seed", "-1"], NO_SETUP),
    ("seed of 5,000 digits", [*RUN_FULL, "--seed", HUGE], NO_SETUP),
    ("seed beyond 64 bits", [*RUN_FULL, "--seed", BIG], NO_SETUP),
    ("seeds of 5,000 digits", [*RUN_FULL, "--seeds", f"1,{HUGE}"], NO_SETUP),
    ("seeds empty", [*RUN_FULL, "--seeds", ","], NO_SETUP),
    ("seeds too many", [*RUN_FULL, "--seeds", ",".join(map(str, range(1001)))], NO_SETUP),
    ("seeds not integers", [*RUN_FULL, "--seeds", "1,two"], NO_SETUP),
    # systems and models
    ("system unknown", [*RUN, "--system", "nope"], NO_SETUP),
    ("system parameter nan", [*RUN, "--system", "ace:dedupe=nan"], NO_SETUP),
    ("system parameter inf", [*RUN, "--system", "rag:dedupe=inf"], NO_SETUP),
    ("system parameter huge", [*RUN, "--system", f"rag:k={BIG}"], NO_SETUP),
    ("system parameter of 5,000 digits", [*RUN, "--system", f"rag:k={HUGE}"], NO_SETUP),
    ("system parameter negative", [*RUN, "--system", "rag:k=-3"], NO_SETUP),
    ("system parameter above its maximum", [*RUN, "--system", "hipporag:damping=2"],
     NO_SETUP),
    ("system parameter unknown", [*RUN, "--system", "rag:zz=1"], NO_SETUP),
    ("system argument without a value", [*RUN, "--system", "rag:k="], NO_SETUP),
    ("system name empty", [*RUN, "--system", ":"], NO_SETUP),
    ("model unknown", [*RUN_FULL, "--model", "nowhere:thing"], NO_SETUP),
    ("model argument infinite", [*RUN_FULL, "--model", "hf:{root}/emptydir", "--model-args",
                                 "max_model_len=1e999"], NO_SETUP),
    ("thinking unknown", [*RUN_FULL, "--thinking", "maybe"], NO_SETUP),
    ("cache a directory", [*RUN_FULL, "--cache", "{root}/emptydir"], NO_SETUP),
    ("cache binary", [*RUN_FULL, "--cache", "{root}/binary"], NO_SETUP),
    ("model args malformed", [*RUN_FULL, "--model-args", "novalue"], NO_SETUP),
    # endpoints
    ("base-url port out of range", [*RUN_FULL, "--model", "openai:m", "--base-url",
                                    "http://127.0.0.1:99999/v1"], NO_SETUP),
    ("base-url broken IPv6", [*RUN_FULL, "--model", "openai:m", "--base-url", "http://[::1"],
     NO_SETUP),
    ("base-url not http", [*RUN_FULL, "--model", "openai:m", "--base-url", "file:///etc"],
     NO_SETUP),
    ("check port out of range", ["check", "--model", "m", "--base-url",
                                 "http://127.0.0.1:99999/v1"], NO_SETUP),
    ("check broken IPv6", ["check", "--model", "m", "--base-url", "http://[::1"], NO_SETUP),
    ("base-url a static web server", [*RUN_FULL, "--model", "openai:m", "--base-url",
                                      "{static}"], NO_SETUP),
    ("base-url replicas, one a static web server", [
        *RUN_FULL, "--model", "openai:m", "--base-url", "{static}", "--base-url",
        "http://127.0.0.1:9/v1"], NO_SETUP),
    ("check a static web server", ["check", "--model", "m", "--base-url", "{static}"],
     NO_SETUP),
    ("judge-base-url a static web server", [
        "run", "imprint", "{root}/emptydir", "--model", "builtin", "--system", "rag",
        "--judge", "openai:j", "--judge-base-url", "{static}", "--out", "{res}"], NO_SETUP),
    ("judge endpoint given as --base-url", [
        "run", "imprint", "{root}/emptydir", "--model", "builtin", "--system", "rag",
        "--judge", "openai:j", "--base-url", "{static}", "--out", "{res}"], NO_SETUP),
    ("generate imprint writer a static web server", [
        "generate", "imprint", "--setting", "news", "--size", "small", "--model", "openai:w",
        "--base-url", "{static}", "--filter", "--out", "{root}/gen"], NO_SETUP),
    ("max-concurrency with the builtin model", [*RUN_FULL, "--max-concurrency", "4"],
     NO_SETUP),
    # data files
    ("run data missing", ["run", "oaks", "{root}/absent.json", "--model", "builtin",
                          "--system", "full", "--out", "{res}"], NO_SETUP),
    ("run data empty", ["run", "oaks", "{root}/empty", "--model", "builtin", "--system",
                        "full", "--out", "{res}"], NO_SETUP),
    ("run data binary", ["run", "oaks", "{root}/binary", "--model", "builtin", "--system",
                         "full", "--out", "{res}"], NO_SETUP),
    ("run data a directory", ["run", "oaks", "{root}/emptydir", "--model", "builtin",
                              "--system", "full", "--out", "{res}"], NO_SETUP),
    ("run data the results database", ["run", "oaks", "{res}/results.sqlite", "--model",
                                       "builtin", "--system", "full", "--out", "{res}"],
     NO_SETUP),
    ("run data an endless device", ["run", "oaks", "/dev/zero", "--model", "builtin",
                                    "--system", "full", "--out", "{res}"], NO_SETUP),
    ("run seqmem binary", ["run", "seqmem", "{root}/binary", "--model", "builtin", "--system",
                           "memory-free", "--out", "{res}"], NO_SETUP),
    ("run seqmem retro-sample nan", [*SEQMEM, "--retro-sample", "nan"], NO_SETUP),
    ("run seqmem retro-sample inf", [*SEQMEM, "--retro-sample", "inf"], NO_SETUP),
    ("run seqmem checkpoints huge", [*SEQMEM, "--checkpoints", f"0,{BIG}"], NO_SETUP),
    ("run seqmem horizons of 5,000 digits", [*SEQMEM, "--horizons", HUGE], NO_SETUP),
    ("run seqmem data of another protocol", ["run", "seqmem", "{root}/oaks.json", "--model",
                                             "builtin", "--system", "memory-free", "--out",
                                             "{res}"], NO_SETUP),
    ("run imprint data a file", ["run", "imprint", "{root}/binary", "--model", "builtin",
                                 "--system", "rag", "--out", "{res}"], NO_SETUP),
    ("run imprint judge endpoint", ["run", "imprint", "{root}/emptydir", "--system", "rag",
                                    "--judge-base-url", "http://[::1", "--out", "{res}"],
     NO_SETUP),
    ("run clbench rollouts zero", ["run", "clbench", "--model", "builtin", "--system",
                                   "full", "--rollouts", "0", "--out", "{res}"], NO_SETUP),
    ("run clbench seed negative", ["run", "clbench", "--system", "full", "--seed", "-4",
                                   "--out", "{res}"], NO_SETUP),
    ("docs-in-flight zero", [*RUN_FULL, "--docs-in-flight", "0"], NO_SETUP),
    ("docs-in-flight huge", [*RUN_FULL, "--docs-in-flight", BIG], NO_SETUP),
    # run matrix
    ("matrix protocols empty", ["run", "matrix", "--protocols", "", "--systems", "full",
                                "--out", "{res}"], NO_SETUP),
    ("matrix protocols only commas", ["run", "matrix", "--protocols", " , ", "--systems",
                                      "full", "--out", "{res}"], NO_SETUP),
    ("matrix protocol unknown", ["run", "matrix", "--protocols", "chess", "--systems", "full",
                                 "--out", "{res}"], NO_SETUP),
    ("matrix systems empty", ["run", "matrix", "--protocols", "oaks", "--systems", "",
                              "--out", "{res}"], NO_SETUP),
    # spec files
    ("spec missing", ["run", "--spec", "{root}/absent.toml"], NO_SETUP),
    ("spec empty", ["run", "--spec", "{root}/empty"], NO_SETUP),
    ("spec binary", ["run", "--spec", "{root}/binary"], NO_SETUP),
    ("spec a directory", ["run", "--spec", "{root}/emptydir"], NO_SETUP),
    ("spec an endless device", ["run", "--spec", "/dev/zero"], NO_SETUP),
    ("spec nested 5,000 deep", ["run", "--spec", "{root}/deep.toml"],
     _spec_entry("deep.toml", f"top_k = {NESTED}")),
    ("spec nested 40 deep", ["plan", "--spec", "{root}/deep40.toml"],
     _spec_entry("deep40.toml", "top_k = " + "[" * 40 + "]" * 40)),
    ("spec of 10,001 entries", ["run", "--spec", "{root}/many.toml"],
     _spec("many.toml", "", entries=10_001)),
    ("spec integer of 5,000 digits", ["run", "--spec", "{root}/digits.toml"],
     _spec_entry("digits.toml", f"seed = {HUGE}")),
    ("spec seed negative", ["run", "--spec", "{root}/seedneg.toml"],
     _spec("seedneg.toml", "seeds = [0, -1]")),
    ("spec seed beyond 64 bits", ["plan", "--spec", "{root}/seedbig.toml"],
     _spec("seedbig.toml", f"seeds = [{2**63}]")),
    ("spec temperature inf", ["run", "--spec", "{root}/inf.toml"],
     _spec_entry("inf.toml", "temperature = inf")),
    ("spec temperature above 2", ["run", "--spec", "{root}/hot.toml"],
     _spec_entry("hot.toml", "temperature = 7.0")),
    ("spec system parameter nan", ["run", "--spec", "{root}/sysnan.toml"],
     _spec_entry("sysnan.toml", 'system = ["ace:dedupe=nan"]')),
    ("spec out with a NUL", ["run", "--spec", "{root}/nulout.toml"],
     _write("nulout.toml", 'out = "r\\u0000s"\n[[run]]\nprotocol = "oaks"\n'
                           'systems = ["full"]\n')),
    ("spec data with a NUL", ["plan", "--spec", "{root}/nuldata.toml"],
     _write("nuldata.toml", 'out = "res"\n[[run]]\nprotocol = "oaks"\n'
                            'data = "oaks\\u0000.json"\nsystems = ["full"]\n')),
    ("spec unknown setting", ["run", "--spec", "{root}/unknown.toml"],
     _spec_entry("unknown.toml", "colour = 1")),
    ("spec without out", ["run", "--spec", "{root}/noout.toml"],
     _write("noout.toml", '[[run]]\nprotocol = "oaks"\nsystems = ["full"]\n')),
    ("spec data missing", ["run", "--spec", "{root}/nodata.toml"],
     _write("nodata.toml", 'out = "res"\n[[run]]\nprotocol = "oaks"\ndata = "absent.json"\n'
                           'systems = ["full"]\n')),
    ("spec entry seeds with the file's seeds", ["plan", "--spec", "{root}/twoseeds.toml"],
     _spec("twoseeds.toml", "seeds = [0, 1]\n[defaults]\nseeds = \"2,3\"")),
    ("spec entry seeds beyond its runs", ["run", "--spec", "{root}/manyseeds.toml"],
     _write("manyseeds.toml", 'out = "res"\n' + "".join(
         f'[[run]]\nprotocol = "oaks"\ndata = "oaks.json"\nsystems = ["full"]\n'
         f'seeds = "{",".join(map(str, range(i, i + 1000)))}"\n' for i in range(11)))),
    ("spec data a name too long for the file system", ["run", "--spec", "{root}/long.toml"],
     _write("long.toml", f'out = "res"\n[[run]]\nprotocol = "oaks"\ndata = "{"x" * 260}"\n'
                         'systems = ["full"]\n')),
    ("spec protocol unknown", ["run", "--spec", "{root}/chess.toml"],
     _write("chess.toml", 'out = "res"\n[[run]]\nprotocol = "chess"\nsystems = ["full"]\n')),
    # generate: every count bounded
    ("generate tasks 1e9", ["generate", "seqmem-synthetic", "--tasks", "1000000000", "--out",
                            "{root}/gen.json"], NO_SETUP),
    ("generate tasks negative", ["generate", "seqmem-synthetic", "--tasks", "-5", "--out",
                                 "{root}/gen.json"], NO_SETUP),
    ("generate holdout huge", ["generate", "seqmem-synthetic", "--holdout", BIG, "--out",
                               "{root}/gen.json"], NO_SETUP),
    ("generate seed of 5,000 digits", ["generate", "seqmem-synthetic", "--seed", HUGE,
                                       "--out", "{root}/gen.json"], NO_SETUP),
    ("generate docs zero", ["generate", "oaks-babi", "--docs", "0", "--out",
                            "{root}/gen.json"], NO_SETUP),
    ("generate chunks huge", ["generate", "oaks-babi", "--chunks", BIG, "--out",
                              "{root}/gen.json"], NO_SETUP),
    ("generate text beyond its bound", ["generate", "oaks-babi", "--docs", "100000",
                                        "--chunks", "100000", "--out", "{root}/gen.json"],
     NO_SETUP),
    ("generate max-questions zero", ["generate", "oaks-babi", "--max-questions", "0",
                                     "--out", "{root}/gen.json"], NO_SETUP),
    ("generate haystack binary", ["generate", "oaks-babi", "--haystack", "{root}/binary",
                                  "--out", "{root}/gen.json"], NO_SETUP),
    ("generate haystack an endless device", ["generate", "oaks-babi", "--haystack",
                                             "/dev/zero", "--out", "{root}/gen.json"],
     NO_SETUP),
    ("generate haystack missing", ["generate", "oaks-babi", "--haystack", "{root}/absent",
                                   "--out", "{root}/gen.json"], NO_SETUP),
    ("generate imprint seed negative", ["generate", "imprint", "--setting", "news", "--seed",
                                        "-1", "--out", "{root}/gen"], NO_SETUP),
    ("generate imprint filter-samples huge", ["generate", "imprint", "--setting", "news",
                                              "--filter-samples", BIG, "--out", "{root}/gen"],
     NO_SETUP),
    ("generate clbench task unknown", ["generate", "clbench", "--task", "chess", "--out",
                                       "{root}/gen"], NO_SETUP),
    ("generate clbench schedule unknown", ["generate", "clbench", "--schedule", "forever",
                                           "--out", "{root}/gen"], NO_SETUP),
    ("generate clbench seed huge", ["generate", "clbench", "--seed", HUGE, "--out",
                                    "{root}/gen"], NO_SETUP),
    # score
    ("score oaks predictions empty", ["score", "oaks", "{root}/oaks.json", "{root}/empty"],
     NO_SETUP),
    ("score oaks predictions binary", ["score", "oaks", "{root}/oaks.json", "{root}/binary"],
     NO_SETUP),
    ("score oaks data missing", ["score", "oaks", "{root}/absent", "{root}/empty"], NO_SETUP),
    ("score seqmem binary", ["score", "seqmem", "{root}/binary"], NO_SETUP),
    ("score seqmem random device", ["score", "seqmem", "/dev/urandom"], NO_SETUP),
    ("score oaks predictions an endless device", ["score", "oaks", "{root}/oaks.json",
                                                  "/dev/zero"], NO_SETUP),
    ("score seqmem empty", ["score", "seqmem", "{root}/empty"], NO_SETUP),
    ("score clbench binary", ["score", "clbench", "{root}/binary"], NO_SETUP),
    ("score imprint binary", ["score", "imprint", "{root}/binary", "{root}/binary"],
     NO_SETUP),
    ("score imprint k not numbers", ["score", "imprint", "{root}/empty", "{root}/empty",
                                     "--k", "x"], NO_SETUP),
    # summary, report, export
    ("score clbench empty", ["score", "clbench", "{root}/empty"], NO_SETUP),
    ("summary missing", ["summary", "{root}/absent"], NO_SETUP),
    ("report missing", ["report", "{root}/absent", "--out", "{root}/r.html"], NO_SETUP),
    ("summary a file", ["summary", "{root}/binary"], NO_SETUP),
    ("summary an empty directory", ["summary", "{root}/emptydir"], NO_SETUP),
    ("summary random bytes", ["summary", "{root}/random"], _copy_res("random", _random_bytes)),
    ("summary truncated", ["summary", "{root}/truncated"], _copy_res("truncated", _truncated)),
    ("summary spec not JSON", ["summary", "{root}/badspec"],
     _copy_res("badspec", _spec_not_json)),
    ("summary prices huge", ["summary", "{res}", "--json", "--prices", "{root}/prices.json"],
     _prices("1e308")),
    ("summary prices inf", ["summary", "{res}", "--prices", "{root}/prices.json"],
     _prices("Infinity")),
    ("summary prices negative", ["summary", "{res}", "--prices", "{root}/prices.json"],
     _prices("-1")),
    ("summary prices binary", ["summary", "{res}", "--prices", "{root}/binary"], NO_SETUP),
    ("summary prices an endless device", ["summary", "{res}", "--prices", "/dev/zero"],
     NO_SETUP),
    ("summary prices missing", ["summary", "{res}", "--prices", "{root}/absent"], NO_SETUP),
    ("report prices huge", ["report", "{res}", "--out", "{root}/r.html", "--prices",
                            "{root}/prices.json"], _prices("1e300")),
    ("report spec not JSON", ["report", "{root}/badspec", "--out", "{root}/r.html"],
     _copy_res("badspec", _spec_not_json)),
    ("export unknown system", ["export", "{res}", "--system", "nope", "--out",
                               "{root}/e.jsonl"], NO_SETUP),
    ("export spec not JSON", ["export", "{root}/badspec", "--system", "full", "--out",
                              "{root}/e.jsonl"], _copy_res("badspec", _spec_not_json)),
    ("export missing", ["export", "{root}/absent", "--system", "full", "--out",
                        "{root}/e.jsonl"], NO_SETUP),
    # runs, merge, list, plan
    ("runs missing", ["runs", "{root}/absent"], NO_SETUP),
    ("runs spec of spec not JSON", ["runs", "{root}/badspec", "--spec"],
     _copy_res("badspec", _spec_not_json)),
    ("runs rm unknown run", ["runs", "rm", "{res}", "0123456789abcdef"], NO_SETUP),
    ("resume a run whose spec is not JSON", ["run", "oaks", "{root}/oaks.json", "--model",
                                             "builtin", "--system", "full", "--no-progress",
                                             "--out", "{root}/badspec"],
     _copy_res("badspec", _spec_not_json)),
    ("merge random bytes", ["merge", "{root}/merged", "{res}", "{root}/random"],
     _copy_res("random", _random_bytes)),
    ("merge truncated", ["merge", "{root}/merged", "{res}", "{root}/truncated"],
     _copy_res("truncated", _truncated)),
    ("merge into a source", ["merge", "{res}", "{res}"], NO_SETUP),
    # writes: never into a store or a dataset (tests/commands/test_write_guards.py: all)
    ("report over the results database", ["report", "{res}", "--out", "{res}/results.sqlite"],
     NO_SETUP),
    ("summary cross-csv over the dataset", ["summary", "{res}", "--cross-csv",
                                            "{root}/oaks.json"], NO_SETUP),
    ("export into the store's artifacts", ["export", "{res}", "--system", "full", "--out",
                                           "{res}/artifacts/e.jsonl"], NO_SETUP),
    ("check save over the results database", ["check", "--model", "m", "--base-url",
                                              "http://127.0.0.1:9/v1", "--save",
                                              "{res}/results.sqlite"], NO_SETUP),
    ("generate over the dataset", ["generate", "oaks-babi", "--out", "{root}/oaks.json"],
     NO_SETUP),
    ("view static into the results directory", ["view", "{res}", "--static", "{res}/site"],
     NO_SETUP),
    ("run out inside the data it reads", ["run", "oaks", "{root}/oaks.json", "--model",
                                          "builtin", "--system", "full", "--no-progress",
                                          "--out", "{root}/oaks.json/res"], NO_SETUP),
    ("run cache the results database", [*RUN_FULL, "--cache", "{res}/results.sqlite"],
     NO_SETUP),
    ("run cache a copy of a results database", [*RUN_FULL, "--cache", "{root}/copy.sqlite"],
     _copy_store_file("copy.sqlite")),
    ("merge a missing source", ["merge", "{root}/merged", "{res}", "{root}/absent"], NO_SETUP),
    ("list unknown", ["list", "nope"], NO_SETUP),
    ("plan prices huge", ["plan", "oaks", "{root}/oaks.json", "--system", "full", "--prices",
                          "{root}/prices.json"], _prices("1e308")),
    ("plan cache-tokens huge", ["plan", "oaks", "{root}/oaks.json", "--system", "full",
                                "--cache-tokens", BIG], NO_SETUP),
    ("plan prefill nan", ["plan", "oaks", "{root}/oaks.json", "--system", "full",
                          "--prefill-tps", "nan"], NO_SETUP),
    ("plan tokenizer a device", ["plan", "oaks", "{root}/oaks.json", "--system", "full",
                                 "--tokenizer", "/dev/zero"], NO_SETUP),
    ("plan tokenizer not one", ["plan", "oaks", "{root}/oaks.json", "--system", "full",
                                "--tokenizer", "{root}/emptydir"], NO_SETUP),
    ("plan data binary", ["plan", "oaks", "{root}/binary", "--system", "full"], NO_SETUP),
    ("unknown command", ["teleport"], NO_SETUP),
]


def _stores(root: Path) -> dict[str, dict[str, str]]:
    """The reference results directory and every damaged copy of it, by content."""
    return {d.name: digest(d) for d in sorted(root.iterdir()) if (d / "results.sqlite").exists()}


def _argv(argv: list[str], root: Path, static: str) -> list[str]:
    return [a.replace("{root}", str(root)).replace("{res}", str(root / "res"))
            .replace("{static}", static) for a in argv]


@pytest.mark.parametrize(("argv", "setup"), [pytest.param(a, s, id=i) for i, a, s in ROWS])
def test_a_hostile_input_is_one_line_and_changes_nothing(
        root: Path, static: str, capsys: pytest.CaptureFixture[str], argv: list[str],
        setup: Setup | None) -> None:
    if setup is not None:
        setup(root)
    before = _stores(root)
    capsys.readouterr()
    code = main(_argv(argv, root, static))
    err = capsys.readouterr().err
    assert code != 0, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("clstream: error: "), err
    assert len(err) < 600, err  # a 5,000-digit value is not echoed back
    assert _stores(root) == before
    assert not (root / "merged").exists() and not (root / "gen.json").exists()
    assert not (root / "gen").exists()


SUBPROCESS_ROWS = ["temperature inf", "base-url port out of range", "spec nested 5,000 deep",
                   "summary spec not JSON", "base-url a static web server"]


@pytest.mark.parametrize("row", SUBPROCESS_ROWS)
def test_a_hostile_input_from_a_shell_is_one_line(root: Path, static: str, row: str) -> None:
    _, argv, setup = next(r for r in ROWS if r[0] == row)
    if setup is not None:
        setup(root)
    before = _stores(root)
    done = subprocess.run([sys.executable, "-m", "clstream", *_argv(argv, root, static)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert _stores(root) == before


def test_summary_json_never_holds_nan_or_infinity(root: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (root / "prices-max.json").write_text(
        json.dumps({"builtin": {"prompt": 1e6, "completion": 1e6}}), encoding="utf-8")
    capsys.readouterr()
    assert main(["summary", str(root / "res"), "--json", "--prices",
                 str(root / "prices-max.json")]) == 0
    text = capsys.readouterr().out
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in summary --json"))
