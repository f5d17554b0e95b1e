"""Bad input of every kind gets one line naming file, record and field, exit 2, no traceback,
and leaves stored results untouched."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clstream", *args], capture_output=True,
                          text=True, timeout=120)


def _one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("clstream: error:")
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("d") / "s.json"
    assert cli(["generate", "oaks-babi", "--seed", "1", "--docs", "1", "--chunks", "10",
                "--chunk-tokens", "300", "--out", str(path)]) == 0
    return path


def _mutate(stream: Path, tmp_path: Path, edit: Callable[[list[Any]], None]) -> Path:
    docs = json.loads(stream.read_text())
    edit(docs)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(docs))
    return bad


def test_malformed_data_files(stream: Path, tmp_path: Path) -> None:
    syntax = tmp_path / "syntax.json"
    syntax.write_text('[{"meta": ')
    _one_line_error(_run("score", "oaks", str(syntax), str(syntax)), "syntax.json")

    def drop_gold(docs: list[Any]) -> None:
        qa = next(iter(docs[0]["data"]["qas"].values()))
        del qa["chunk_to_answer"]["3"]

    bad = _mutate(stream, tmp_path, drop_gold)
    qid = next(iter(json.loads(bad.read_text())[0]["data"]["qas"].values()))["question_id"]
    _one_line_error(_run("run", "oaks", str(bad), "--system", "full", "--out",
                         str(tmp_path / "o")), "bad.json", qid, "chunk_to_answer")

    def drop_chunk(docs: list[Any]) -> None:
        del docs[0]["data"]["chunks"]["2"]

    _one_line_error(_run("run", "oaks", str(_mutate(stream, tmp_path, drop_chunk)), "--system",
                         "full", "--out", str(tmp_path / "o")), "bad.json", "chunks")


def test_malformed_predictions(stream: Path, tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"question_id": "x", "t": 1}\n')
    _one_line_error(_run("score", "oaks", str(stream), str(preds)), "p.jsonl", "output")
    preds.write_text("not json\n")
    _one_line_error(_run("score", "oaks", str(stream), str(preds)), "p.jsonl", "1")
    preds.write_text("")
    _one_line_error(_run("score", "oaks", str(stream), str(preds)), "missing")


def test_bad_specs_and_flags(stream: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "o")
    _one_line_error(_run("run", "oaks", str(stream), "--system", "nope", "--out", out), "nope")
    _one_line_error(_run("run", "oaks", str(stream), "--system", "rag:z=1", "--out", out), "z")
    _one_line_error(_run("run", "oaks", str(stream), "--system", "rag:k", "--out", out), "rag:k")
    _one_line_error(_run("run", "oaks", str(stream), "--system", "full", "--out", out,
                         "--temperature", "-1"), "--temperature")
    _one_line_error(_run("run", "oaks", str(stream), "--system", "full", "--out", out,
                         "--top-k", "many"), "--top-k")
    _one_line_error(_run("run", "oaks", str(stream), "--out", out), "--system")
    _one_line_error(_run("run", "oaks", str(stream), "--system", "full", "--model", "zzz:x",
                         "--out", out), "zzz")
    _one_line_error(_run("run", "oaks", str(tmp_path / "absent.json"), "--system", "full",
                         "--out", out), "absent.json")
    _one_line_error(_run("summary", str(tmp_path / "nowhere")), "nowhere")
    _one_line_error(_run("generate", "oaks-babi", "--docs", "0", "--out", out), "--docs")


def test_bad_input_leaves_store_untouched(stream: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    assert cli(["run", "oaks", str(stream), "--system", "window", "--out", str(out),
                "--no-progress"]) == 0
    db = out / "results.sqlite"
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    _one_line_error(_run("run", "oaks", str(stream), "--system", "window", "--system", "rag:q=1",
                         "--out", str(out)), "q")
    _one_line_error(_run("export", str(out), "--system", "nope", "--out", str(tmp_path / "e")),
                    "nope")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(("argv", "line"), [
    (["run", "oaks", "d.json", "--system", "full", "--out", "o", "--temperature", "warm"],
     "clstream run oaks: --temperature: expected a number, got 'warm'"),
    (["run", "oaks", "d.json", "--system", "full", "--out", "o", "--top-k", "1.5"],
     "clstream run oaks: --top-k: expected an integer, got '1.5'"),
    (["run", "oaks", "d.json", "--system", "full"],
     "clstream run oaks: the following arguments are required: --out"),
    (["export", "r"], "clstream export: the following arguments are required: --system, --out"),
    (["run", "oaks", "d.json", "--system", "full", "--out", "o", "--bogus", "1"],
     "clstream run oaks: unrecognized arguments: --bogus 1"),
    (["generate", "oaks-babi", "--out", "x", "--docs"],
     "clstream generate oaks-babi: --docs: expected one argument"),
])
def test_a_usage_error_is_one_line_naming_the_verb_and_the_flag(
        argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err == f"clstream: error: {line}\n"  # no usage lines


def test_endpoint_flags_with_a_model_served_by_no_endpoint_name_the_flag(
        stream: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert cli(["run", "oaks", str(stream), "--system", "full", "--max-concurrency", "4",
                "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "clstream: error: flag --max-concurrency: model 'builtin' is not served by an endpoint; "
        "--max-concurrency applies to models served over HTTP (openai:NAME)\n")
    assert not out.exists()
