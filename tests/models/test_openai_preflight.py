"""The endpoint check of the OpenAI-compatible backend, and secrets kept out of its errors.

What is checked: each definite failure (closed port, refused credentials, a model the server
does not serve, a rejected sampling parameter, a reply that is no chat completion, a static web
server's HTML page, a 5xx that stays after the check's retries) raises one line quoting the
server's reason; a busy server (429, a stall) is a note, not a failure, and a
5xx that goes away on the retry is nothing; the check sends the run's sampling parameters with
max_tokens 1; a model without the optional part checks nothing; an error body echoing the
Authorization header never carries the key into a result.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, StaticWebServer, always, first_attempts

from clstream.core.contracts import Preflight, check_model
from clstream.core.secrets import REDACTED
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.driver.flags import OPENAI_DEFAULT_BASE_URL
from clstream.models import openai_preflight
from clstream.models.builtin import BuiltinReader
from clstream.models.openai_compat import DEFAULT_BASE_URL, EndpointError, OpenAICompatModel

SAMPLING = SamplingParams(temperature=0.3, top_p=0.9, top_k=5, max_tokens=512, n=2, seed=7)
KEY = "sk-test-preflight-0123456789"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(model: OpenAICompatModel) -> list[str]:
    return asyncio.run(check_model(model, SAMPLING))


def failure(model: OpenAICompatModel) -> str:
    with pytest.raises(EndpointError) as info:
        asyncio.run(check_model(model, SAMPLING))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_healthy_endpoint_passes_with_the_run_sampling_and_one_token() -> None:
    with FakeOpenAIServer(model="served") as srv:
        assert check(OpenAICompatModel("served", base_url=srv.base_url)) == []
        assert srv.model_listings == 1 and srv.requests == []
        (body,) = srv.preflights
    assert body["model"] == "served" and body["max_tokens"] == 1
    assert (body["temperature"], body["top_p"], body["top_k"], body["n"], body["seed"]) == (
        0.3, 0.9, 5, 2, 7)


def test_a_server_without_a_model_listing_is_judged_by_the_request() -> None:
    with FakeOpenAIServer() as srv:  # /models is a 404 here, and any name is served
        assert check(OpenAICompatModel("anything", base_url=srv.base_url)) == []
        assert len(srv.preflights) == 1


def test_a_closed_port_fails_at_once() -> None:
    port = closed_port()
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1")
    message = failure(model)
    assert message == (f"model openai:m at http://127.0.0.1:{port}/v1: cannot connect "
                       "(Connection refused)")


def test_an_unknown_model_name_quotes_the_listing_and_the_server() -> None:
    with FakeOpenAIServer(model="served") as srv:
        message = failure(OpenAICompatModel("wrong", base_url=srv.base_url))
    assert "does not list model 'wrong' (it serves 'served')" in message
    assert "HTTP 404: The model `wrong` does not exist." in message


def test_a_404_from_the_server_names_the_model() -> None:
    with FakeOpenAIServer(preflight_plan=always("404")) as srv:
        message = failure(OpenAICompatModel("gone", base_url=srv.base_url))
    assert "does not serve model 'gone' (HTTP 404: injected 404)" in message


def test_a_rejected_parameter_quotes_the_server_message() -> None:
    def reject(body: dict[str, Any]) -> str | None:
        return "top_k must be -1 (disable), or at least 1, got 5." if body["top_k"] == 5 else None

    with FakeOpenAIServer(model="m", reject=reject) as srv:
        message = failure(OpenAICompatModel("m", base_url=srv.base_url))
    assert message.endswith("rejected a 1-token request with the run's sampling parameters "
                            "(HTTP 400: top_k must be -1 (disable), or at least 1, got 5.)")


def test_refused_credentials_are_one_line_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(model="m", api_key=KEY) as srv:
        message = failure(OpenAICompatModel("m", base_url=srv.base_url))
        assert "refused the credentials (HTTP 401: Incorrect API key provided)" in message
        assert message.endswith("give the key with --api-key-env NAME")
        monkeypatch.setenv("CLSTREAM_TEST_PREFLIGHT_KEY", KEY)
        good = OpenAICompatModel("m", base_url=srv.base_url,
                                 api_key_env="CLSTREAM_TEST_PREFLIGHT_KEY")
        assert check(good) == []


@pytest.fixture
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_preflight, "PREFLIGHT_RETRY_WAITS", (0.0, 0.0))


def test_a_busy_server_is_a_note_not_a_failure() -> None:
    with FakeOpenAIServer(model="m", preflight_plan=always("429")) as srv:
        notes = check(OpenAICompatModel("m", base_url=srv.base_url))
    assert len(notes) == 1 and "HTTP 429" in notes[0] and "going on" in notes[0]
    with FakeOpenAIServer(model="m", preflight_plan=always("stall"), stall_s=3.0) as srv:
        notes = check(OpenAICompatModel("m", base_url=srv.base_url, request_timeout=1))
    assert len(notes) == 1 and "no answer to a 1-token request within 1s" in notes[0]


@pytest.mark.usefixtures("no_retry_waits")
def test_a_5xx_that_goes_away_on_a_retry_passes() -> None:
    with FakeOpenAIServer(model="m", preflight_plan=first_attempts(2, "503")) as srv:
        notes = check(OpenAICompatModel("m", base_url=srv.base_url))
        assert notes == [] and len(srv.preflights) == 3


@pytest.mark.usefixtures("no_retry_waits")
@pytest.mark.parametrize("fault", ["500", "503"])
def test_a_5xx_that_stays_fails_after_the_retries(fault: str) -> None:
    with FakeOpenAIServer(model="m", preflight_plan=always(fault)) as srv:
        message = failure(OpenAICompatModel("m", base_url=srv.base_url))
        assert len(srv.preflights) == 3
    assert message.endswith(f"a 1-token chat request failed 3 times (HTTP {fault}: "
                            f"injected {fault})")


@pytest.mark.parametrize(("fault", "problem"), [
    ("malformed", "a body that is not JSON"), ("missing_choices", "JSON without choices")])
def test_a_reply_that_is_no_chat_completion_fails(fault: str, problem: str) -> None:
    with FakeOpenAIServer(model="m", preflight_plan=always(fault)) as srv:
        message = failure(OpenAICompatModel("m", base_url=srv.base_url))
    assert f"got HTTP 200 with {problem}, not a chat completion" in message


def test_a_static_web_server_fails_in_one_line_summarizing_its_page(tmp_path: Path) -> None:
    with StaticWebServer(tmp_path) as static:
        message = failure(OpenAICompatModel("m", base_url=static.base_url))
    assert "does not answer POST /chat/completions (HTTP 501: HTML page: Error response; " \
           "Error code: 501; Message: Unsupported method ('POST')" in message
    assert "<" not in message and len(message) < 400


def test_other_models_check_nothing() -> None:
    model = BuiltinReader()
    assert not isinstance(model, Preflight)
    assert asyncio.run(check_model(model, SAMPLING)) == []
    assert isinstance(OpenAICompatModel("m"), Preflight)


def test_the_default_base_url_is_the_one_the_help_shows() -> None:
    assert OPENAI_DEFAULT_BASE_URL == DEFAULT_BASE_URL == OpenAICompatModel("m").base_url


def test_an_error_body_echoing_the_key_never_reaches_a_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLSTREAM_TEST_ECHO", KEY)
    with FakeOpenAIServer(plan=always("400"), echo_headers=True) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, api_key_env="CLSTREAM_TEST_ECHO")
        request = GenerationRequest(key="k", messages=(Message(role="user", content="hi"),))
        (result,) = asyncio.run(model.generate([request]))
        assert srv.headers[0]["authorization"] == f"Bearer {KEY}"  # the server did see it
    assert result.error is not None and "request headers" in result.error
    assert KEY not in result.error and f"Bearer {REDACTED}" in result.error
    assert KEY[:12] not in result.error  # no part of it survives the cut either


def test_a_server_that_never_answers_fails_after_the_short_timeout() -> None:
    with socket.socket() as listener:  # accepts connections (backlog), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1",
                                  request_timeout=1)
        message = failure(model)
    assert message.endswith("no answer within 1s (is the server up and the address right?)")
