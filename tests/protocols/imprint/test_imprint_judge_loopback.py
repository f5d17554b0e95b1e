"""``--judge`` against a loopback OpenAI-compatible server that plays the paper's judges
(docs/imprint.md §6.8): every LLM-judged family of the three small procedural datasets is
judged through it, the verdicts are stored in the run and cached, a rerun and a re-score make
no judge call; a reply that does not end in a verdict is an error, never a wrong answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import FakeOpenAIServer, StaticWebServer, is_preflight  # noqa: E402

LLM_FAMILIES = {"news": {"TempUpd": "yn", "CompRel": "yn", "ImpRel": "yn"},
                "code": {"DirAcq": "rubric", "RefRes": "identifier",
                         "CompRel": "identifier+fallback", "ImpRel": "list"},
                "persona": {f: "rubric" for f in ("TempUpd", "RefRes", "CompRel", "ImpRel",
                                                  "BoundAbs")}}
DETERMINISTIC = {"news": {"DirAcq", "BoundAbs"}, "code": {"BoundAbs"}, "persona": set()}


def judge_kind(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    if "single letter" in system:
        return "yn"
    if "lists of Python names" in system:
        return "list"
    if "YES or NO" in system:
        return "identifier"
    return "rubric"


class JudgeServer(FakeOpenAIServer):
    """Plays each judge: a verdict word by the parity of the judged answer's length, after
    a line of reasoning; with ``garble`` every reply ends in a sentence instead."""

    def __init__(self, garble: bool = False) -> None:
        super().__init__()
        self.garble = garble
        self.kinds: list[str] = []

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        if is_preflight(body):
            return payload
        kind = judge_kind(body)
        self.kinds.append(kind)
        answer = body["messages"][-1]["content"].split("Answer to check:\n", 1)[1]
        even = len(answer) % 2 == 0
        word = {"yn": ("Y", "N"), "identifier": ("YES", "NO"), "list": ("YES", "NO"),
                "rubric": ("MATCH", "NONMATCH")}[kind][0 if even else 1]
        text = "It is not a MATCH." if self.garble else f"Checked the key fact.\n{word}"
        for choice in payload["choices"]:
            choice["message"]["content"] = text
        return payload


def generate(tmp: Path, setting: str) -> Path:
    out = tmp / f"data-{setting}"
    assert main(["generate", "imprint", "--setting", setting, "--size", "small",
                 "--out", str(out)]) == 0
    return out


def run_argv(data: Path, out: Path, url: str) -> list[str]:
    return ["run", "imprint", str(data), "--model", "builtin", "--system", "memory-free",
            "--samples", "2", "--out", str(out), "--no-progress",
            "--judge", "openai:judge", "--judge-base-url", url]


def test_a_judge_endpoint_that_is_no_chat_server_is_refused_before_anything_is_registered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = generate(tmp_path, "news")
    out = tmp_path / "results"
    capsys.readouterr()
    with StaticWebServer(tmp_path / "site") as static:
        assert main(run_argv(data, out, static.base_url)) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"clstream: error: flag --judge-base-url: model openai:judge at "
                           f"{static.base_url}: the server does not answer POST "
                           "/chat/completions (HTTP 501: HTML page: ")
    assert not out.exists()


def test_an_endpoint_flag_given_to_the_builtin_model_names_the_judge_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = generate(tmp_path, "news")
    out = tmp_path / "results"
    argv = run_argv(data, out, "http://127.0.0.1:9/v1")
    argv[argv.index("--judge-base-url")] = "--base-url"
    capsys.readouterr()
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == ("clstream: error: flag --base-url: the answering model 'builtin' is served "
                    "by no endpoint; give the judge's server with --judge-base-url")
    assert not out.exists()


@pytest.mark.parametrize("setting", ["news", "code", "persona"])
def test_every_llm_judged_family_goes_through_the_judge(
        setting: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = generate(tmp_path, setting)
    out = tmp_path / "results"
    server = JudgeServer()
    with server:
        assert main(run_argv(data, out, server.base_url)) == 0
        calls = len(server.requests)
        assert calls > 0
        assert main(run_argv(data, out, server.base_url)) == 0
        assert len(server.requests) == calls  # the rerun asks the judge nothing
        capsys.readouterr()
        assert main(["summary", str(out), "--json"]) == 0
        run = json.loads(capsys.readouterr().out)["runs"][0]
        # re-scoring the export through the run's judge cache asks nothing either
        predictions = tmp_path / "predictions.jsonl"
        assert main(["export", str(out), "--system", "memory-free", "--out",
                     str(predictions)]) == 0
        capsys.readouterr()
        assert main(["score", "imprint", str(tmp_path / "predictions.items.jsonl"),
                     str(predictions), "--json", "--judge", "openai:judge", "--base-url",
                     server.base_url, "--judge-cache", str(out / "judge_cache.jsonl")]) == 0
        scored = json.loads(capsys.readouterr().out)
        assert len(server.requests) == calls
    assert set(server.kinds) == {k.split("+")[0] for k in LLM_FAMILIES[setting].values()}
    by_family = run["metrics"]["by_family"]
    for family, kind in LLM_FAMILIES[setting].items():
        if family in by_family:
            assert by_family[family]["judge"] == f"llm:openai:judge ({kind})"
    for family in DETERMINISTIC[setting] & set(by_family):
        assert by_family[family]["judge"] == "deterministic"
    assert run["coverage"]["scored"] == run["coverage"]["total"]
    assert run["details"]["llm_judged_items"]
    assert scored["by_family"] == by_family
    assert run["metrics"]["n_items"] == scored["n_items"]
    with ResultsStore(out) as store:
        (row,) = store.runs()
        recorded = row.spec["params"]["judge"]
        stored = list(store.read_records(row.run_id, "judgment"))
    assert recorded["model"] == "openai:judge"
    for family, kind in LLM_FAMILIES[setting].items():
        assert recorded["families"][family] == f"llm:openai:judge ({kind})"
    for family in DETERMINISTIC[setting]:
        assert recorded["families"][family] == "deterministic"
    assert stored and all(r.error is None for r in stored)
    verdicts = [v for r in stored for v in r.payload["verdicts"]]
    assert {v["judge"] for v in verdicts} >= ({"yn"} if setting == "news" else {"rubric"})
    # every verdict is the judge model's, but for the trailing-component check's passes,
    # which CompRel alone keeps without asking the judge (App. D.2)
    for v in verdicts:
        if v.get("judge_model") is None:
            assert setting == "code" and v["judge"] == "identifier" and v["correct"], v
        else:
            assert v["judge_model"] == "openai:judge", v


def test_a_reply_without_a_verdict_is_an_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = generate(tmp_path, "news")
    out = tmp_path / "results"
    server = JudgeServer(garble=True)
    with server:
        # answered, the judgments are errors: the run is incomplete, with the resume line
        assert main(run_argv(data, out, server.base_url)) == 3
        assert "clstream run" in capsys.readouterr().err
        first = len(server.requests)
        assert main(["summary", str(out), "--json"]) == 0
        run = json.loads(capsys.readouterr().out)["runs"][0]
        # never cached: the next run asks again
        assert main(run_argv(data, out, server.base_url)) == 3
        assert len(server.requests) == 2 * first
    judged = sum(run["metrics"]["by_family"].get(f, {}).get("n_items", 0)
                 for f in ("TempUpd", "CompRel", "ImpRel"))
    assert judged == 0  # left out, not scored as wrong
    assert run["coverage"]["errors"] > 0
    assert run["coverage"]["scored"] < run["coverage"]["total"]
    assert not (out / "judge_cache.jsonl").exists()
