"""``clstream check``: what an endpoint reports and does, in lines or JSON; a dead port, an
unknown model or a static web server is one line naming the flag, and exit 2."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, StaticWebServer
from loopback_engine import LoopbackEngine

from clstream.cli import main


def test_a_streaming_engine_with_props_reports_everything(
        capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackEngine(slots=4, service_s=0.01, tokens=4, props=True, context=8192) as engine:
        assert main(["check", "--base-url", engine.base_url, "--model", "loop", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["models"] == ["loop"]
    assert (found["context_length"], found["slots"]) == (8192, 4)
    assert found["start_concurrency"] == 4
    assert found["streams"] and found["usage_reported"] and found["usage_in_stream"]
    assert found["output_tokens"] == 4 and found["output_tokens_per_s"] > 0
    assert found["chat_template_applied"] and found["seeded_temperature_0_repeats"]
    assert found["cached_tokens_reported"]


def test_the_text_report_names_each_finding(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(model="m") as srv:
        assert main(["check", "--base-url", srv.base_url, "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "slots          not reported" in out
    assert "streaming      no (each request times out as a whole)" in out
    assert "chat template  applied" in out
    assert "a run starts at 4 (the adaptive default)" in out


def test_an_echoing_server_is_reported_as_applying_no_template(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def echo(self: FakeOpenAIServer, body: dict[str, object], fault: str | None
             ) -> dict[str, object]:
        prompt = body["messages"][-1]["content"]  # type: ignore[index]
        return {"choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": prompt + " and"}}]}

    monkeypatch.setattr(FakeOpenAIServer, "completion", echo)
    with FakeOpenAIServer(model="m") as srv:
        assert main(["check", "--base-url", srv.base_url, "--model", "m", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["chat_template_applied"] is False
    assert found["usage_reported"] is False


def test_an_unknown_model_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackEngine() as engine:
        assert main(["check", "--base-url", engine.base_url, "--model", "other"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'other'" in err and "'loop'" in err


def test_a_dead_port_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["check", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Connection refused" in err


def test_a_static_web_server_is_one_line_not_its_page(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with StaticWebServer(tmp_path) as static:
        assert main(["check", "--base-url", static.base_url, "--model", "m"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"clstream: error: flag --base-url: model openai:m at "
                           f"{static.base_url}: the server does not answer POST "
                           "/chat/completions (HTTP 501: HTML page: Error response; ")
    assert "<" not in line


def _strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} in strict JSON output")

    return json.loads(text, parse_constant=refuse)


def test_json_and_save_write_no_nan_or_infinity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from clstream.commands import check as check_command

    real_check = check_command.check

    async def unmeasurable(model: object) -> dict[str, object]:
        found = await real_check(model)  # type: ignore[arg-type]
        return {**found, "output_tokens_per_s": float("inf"), "latency_s": float("nan")}

    async def instant(model: object) -> float:
        return float("inf")

    monkeypatch.setattr(check_command, "check", unmeasurable)
    monkeypatch.setattr(check_command, "measure_prefill", instant)
    saved = tmp_path / "speed.json"
    with FakeOpenAIServer(model="m") as srv:
        assert main(["check", "--base-url", srv.base_url, "--model", "m", "--json",
                     "--save", str(saved)]) == 0
    found = _strict(capsys.readouterr().out)
    assert isinstance(found, dict)
    assert found["output_tokens_per_s"] is None and found["latency_s"] is None
    speed = _strict(saved.read_text())
    assert isinstance(speed, dict)
    assert speed["prefill_tokens_per_s"] is None and speed["decode_tokens_per_s"] is None
