"""``clstream list``: every registered name with its summary and parameters, text and JSON."""

from __future__ import annotations

import json
import sys

import pytest

from clstream.cli import main
from clstream.commands.listing import show_value
from clstream.core.registry import describe, names, register, unregister


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["list", *argv]) == 0
    return capsys.readouterr().out


def test_text_lists_every_entry_with_its_params(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys)
    blocks = {line for line in out.splitlines() if line and not line.startswith(" ")}
    assert blocks == {"systems", "models", "protocols", "judges", "policies"}
    lines = out.splitlines()
    for kind in ("system", "model", "protocol", "judge"):
        for name in names(kind):
            d = describe(kind, name)
            assert any(line.split()[:1] == [name] for line in lines), name
            if d.summary:
                assert f"{name}  " in out and d.summary in out
            for key, p in (d.params or {}).items():
                row = [line.split() for line in lines if line.split()[:1] == [key]]
                assert any(r[1] == p.type_name and r[2] == show_value(p.default) for r in row), \
                    (name, key)


def test_one_kind_and_its_constraints(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "models")
    assert out.splitlines()[0] == "models" and "systems" not in out
    assert "auto|float32|float16|bfloat16" in out and ">= 1" in out
    assert "unset" in out  # max_model_len has no default of its own
    assert "(no parameters)" in out  # builtin


def test_json_parses_and_holds_everything(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run(capsys, "--json"))
    assert list(data) == ["systems", "models", "protocols", "judges", "policies"]
    assert [e["name"] for e in data["policies"]] == names("policy")
    assert [e["name"] for e in data["systems"]] == names("system")
    assert [e["name"] for e in data["protocols"]] == names("protocol")
    hf = next(e for e in data["models"] if e["name"] == "hf")
    dtype = next(p for p in hf["params"] if p["name"] == "dtype")
    assert dtype["default"] == "auto" and "bfloat16" in dtype["choices"]
    assert dtype["type"] == "str" and dtype["help"]
    only = json.loads(run(capsys, "judges", "--json"))
    assert list(only) == ["judges"] and {e["name"] for e in only["judges"]} == set(names("judge"))


def test_an_entry_missing_its_extra_is_listed_with_a_note(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    register("model", "fake-st", "sentence_transformers:SentenceTransformer")
    try:
        out = run(capsys, "models")
        line = out.splitlines()[out.splitlines().index(
            next(x for x in out.splitlines() if x.split()[:1] == ["fake-st"])) + 1]
        assert "not available" in line and "clstream[embed]" in line
        entry = next(e for e in json.loads(run(capsys, "models", "--json"))["models"]
                     if e["name"] == "fake-st")
        assert entry["params"] is None and "clstream[embed]" in entry["note"]
    finally:
        unregister("model", "fake-st")


def test_an_unknown_kind_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["list", "benchmarks"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
