"""How the OpenAI-compatible backend names what went wrong and checks its settings."""

from __future__ import annotations

import pickle

import pytest

from clstream.core.errors import SpecError
from clstream.models.openai_failures import (
    Secret,
    check_base_urls,
    lower_first,
    positive,
    read_key,
    reason_of,
)


def test_a_server_reason_is_one_scrubbed_line() -> None:
    body = '{"error": {"message": "bad key sk-live-0123456789\\n  try again"}}'
    assert reason_of(401, body, ["sk-live-0123456789"]) == "HTTP 401: bad key [redacted] try again"
    assert reason_of(500, "", []) == "HTTP 500"
    assert reason_of(503, "x" * 400, [], limit=20) == "HTTP 503: " + "x" * 17 + "..."


def test_base_urls_are_checked_and_each_given_once() -> None:
    assert check_base_urls(" http://h:1/v1/ ") == ["http://h:1/v1"]
    assert check_base_urls(["http://a/v1", "https://b/v1"]) == ["http://a/v1", "https://b/v1"]
    with pytest.raises(SpecError, match="given twice"):
        check_base_urls(["http://a/v1", "http://a/v1/"])
    with pytest.raises(SpecError, match="http:// or https://"):
        check_base_urls("ftp://a")
    with pytest.raises(SpecError, match="at least one"):
        check_base_urls([])


def test_the_key_is_read_once_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLSTREAM_TEST_FAILURES_KEY", "sk-never-shown-42")
    key = read_key("CLSTREAM_TEST_FAILURES_KEY")
    assert isinstance(key, Secret) and key.reveal() == "sk-never-shown-42"
    assert "sk-never" not in repr(key)
    with pytest.raises(TypeError):
        pickle.dumps(key)
    assert read_key(None) is None
    monkeypatch.delenv("CLSTREAM_TEST_FAILURES_KEY")
    with pytest.raises(SpecError, match="not set or empty"):
        read_key("CLSTREAM_TEST_FAILURES_KEY")


def test_settings_must_be_positive_numbers() -> None:
    positive("request_timeout", 0.5)
    for bad in (0, -1, True, float("nan"), "3"):
        with pytest.raises(SpecError, match="request_timeout"):
            positive("request_timeout", bad)
    with pytest.raises(SpecError, match="whole number"):
        positive("max_concurrency", 1.5, integer=True)


def test_an_os_reason_reads_inside_a_sentence() -> None:
    assert lower_first("Connection refused") == "connection refused"
    assert lower_first("HTTP error") == "HTTP error"
