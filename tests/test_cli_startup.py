"""``clstream run NAME`` and ``score NAME`` import only protocol NAME (start-up is most of a
scoring command's cost); other verbs and help still see every protocol.

Building the command line imports no protocol's code: ``--version`` and ``--help`` load the
protocol packages (names, one line of help, ``"module:name"`` targets) and nothing under them,
and ``run oaks --help`` loads only what oaks's flags need. These are checked by what the
process imported, not by its time (``benchmarks/bench_startup.py`` measures that).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clstream.cli import build_parser
from clstream.core.registry import names, resolve
from clstream.protocols.oaks.babi import write_oaks_babi

PROBE = ("import sys; from clstream.cli import build_parser; build_parser({argv!r}); "
         "print(sorted(m.split('.')[2] for m in sys.modules "
         "if m.count('.') == 2 and m.startswith('clstream.protocols.') "
         "and m.split('.')[2] in {known!r}))")


@pytest.mark.parametrize("argv, loaded", [
    (["score", "oaks", "data.json", "pred.jsonl"], ["oaks"]),
    (["run", "imprint", "data/", "--system", "oracle"], ["imprint"]),
    (["summary", "results/"], None),
    (["run", "nosuch"], None),
])
def test_only_the_named_protocol_is_imported(argv: list[str], loaded: list[str] | None) -> None:
    known = names("protocol")
    code = PROBE.format(argv=argv, known=known)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == repr(sorted(known) if loaded is None else loaded)


def test_the_full_parser_still_has_every_verb() -> None:
    parser = build_parser(["--help"])
    text = parser.format_help()
    for verb in ("generate", "run", "score", "summary", "report", "export"):
        assert verb in text


# Runs the command line in a fresh interpreter, then reports every module it imported.
MODULES = """
import json, sys
from clstream.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""

# What building the parser must never import: numeric and web libraries, pydantic models, and
# the layers below the protocols (store, model backends, systems, judges, report).
HEAVY = ("numpy", "pydantic", "jinja2", "matplotlib", "httpx", "clstream.store",
         "clstream.models", "clstream.systems", "clstream.judges", "clstream.retrieval",
         "clstream.metrics", "clstream.report", "clstream.render", "clstream.core.specs",
         "clstream.core.types")


def imported(argv: list[str]) -> tuple[str, set[str]]:
    """The standard output of ``clstream ARGV`` and the modules the process imported."""
    done = subprocess.run([sys.executable, "-c", MODULES.format(argv=argv)], capture_output=True,
                          text=True, check=True, env={**os.environ, "COLUMNS": "200"})
    return done.stdout, set(json.loads(done.stderr.rpartition("\nMODULES ")[2]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def protocol_modules(modules: set[str]) -> list[str]:
    """The modules imported from inside protocol packages (not the packages themselves)."""
    return sorted(m for m in modules if m.startswith("clstream.protocols.") and m.count(".") > 2)


def test_version_imports_no_protocol_code() -> None:
    out, modules = imported(["--version"])
    assert out.startswith("clstream ")
    assert heavy(modules) == []
    assert protocol_modules(modules) == []  # no verb's flags were built


def test_run_oaks_help_imports_only_what_its_flags_need() -> None:
    out, modules = imported(["run", "oaks", "--help"])
    assert "--docs-in-flight" in out and "--temperature" in out and "--base-url" in out
    assert heavy(modules) == []
    assert protocol_modules(modules) == ["clstream.protocols.oaks.arguments"]
    assert "clstream.protocols.oaks.runner" not in modules
    assert "clstream.protocols.oaks.commands" not in modules


@pytest.mark.parametrize("verb", ["run", "score"])
def test_verb_help_lists_every_protocol_without_its_code(verb: str) -> None:
    out, modules = imported([verb, "--help"])
    text = " ".join(out.split())
    for name in names("protocol"):
        command = getattr(resolve("protocol", name), f"{verb}_command")
        assert f"{name} {command.help}" in text
    assert heavy(modules) == []
    assert protocol_modules(modules) == []


def test_top_level_help_lists_every_verb_without_protocol_code() -> None:
    out, modules = imported(["--help"])
    for verb in ("generate", "run", "score", "summary", "report", "export", "runs", "list",
                 "check", "view"):
        assert verb in out
    assert heavy(modules) == []
    assert protocol_modules(modules) == []


def test_a_context_window_run_imports_no_numpy_generator_or_metrics(tmp_path: Path) -> None:
    """A small run's start-up is most of its cost: numpy (BM25's vector search, the dense
    index, the OAKS metrics) and the OAKS generator are left for the verbs that use them."""
    data = tmp_path / "oaks.json"
    write_oaks_babi(data, seed=0, docs=1, chunks=2, chunk_tokens=200, max_questions=2)
    out, modules = imported(["run", "oaks", str(data), "--model", "builtin", "--system",
                             "window:w=1", "--no-progress", "--out", str(tmp_path / "runs")])
    assert out.strip().endswith("runs")
    assert "clstream.protocols.oaks.runner" in modules  # it did run
    assert sorted(m for m in modules if m == "numpy" or m.startswith("numpy.")) == []
    assert "clstream.protocols.oaks.metrics" not in modules
    assert "clstream.protocols.oaks.babi" not in modules
    assert "clstream.retrieval.dense" not in modules
