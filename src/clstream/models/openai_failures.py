"""How the OpenAI-compatible backend (:mod:`clstream.models.openai_compat`) names what went
wrong: the failures of one attempt (congestion, no answer, a refused stream), the endpoint
check's :class:`EndpointError`, a server's reason on one scrubbed line, and the checks of its
settings (URLs, the API key's variable, positive numbers).

The API key is read once, from the environment variable named by ``api_key_env``
(:func:`read_key`), registered as a secret (:mod:`clstream.core.secrets`) and held by a
:class:`Secret` that never shows it and refuses to be pickled; the text of an error body (which
some servers fill with the request's headers) is scrubbed of every known secret before it
becomes an error message (:func:`reason_of`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from clstream.core.errors import ClstreamError, SpecError
from clstream.core.secrets import redacted_url, register_secret, scrub
from clstream.models.endpoint import HTML_SUMMARY_CHARS, html_summary, looks_like_html
from clstream.models.retry import AttemptFailure

if TYPE_CHECKING:
    import httpx

REASON_CHARS = 240  # of a server's reason quoted in one line
SNIPPET_CHARS = 300  # of an error body kept in a stored error
CONGESTION_STATUSES = frozenset({429, 503})
UNFINISHED = "stream ended before the answer finished"


class EndpointError(ClstreamError):
    """The model endpoint cannot serve the run (found by the check before it starts)."""


class Congestion(AttemptFailure):
    """A failed attempt that says the server is full: a silence timeout or an interrupted
    stream (``free``: sent again at once when others were in flight) or a 429/503 (retried
    after the usual wait). ``silent``: nothing at all came back before the timeout."""

    def __init__(self, reason: str, free: bool, retry_after: float | None = None,
                 silent: bool = False):
        super().__init__(reason, True, retry_after)
        self.free = free
        self.silent = silent


class Unanswered(AttemptFailure):
    """A failed attempt that got no response at all (``cause``: the operating system's
    reason), which the circuit breaker counts."""

    def __init__(self, reason: str, cause: str):
        super().__init__(reason, True)
        self.cause = cause


class NoStream(Exception):
    """The server refused the streaming fields of a request."""


class Secret:
    """Holds the API key without ever showing it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    def __reduce__(self) -> Any:
        raise TypeError("an API key cannot be pickled")




def check_base_url(base_url: str) -> str:
    if not isinstance(base_url, str):
        raise SpecError(f"base_url {base_url!r} must be an http:// or https:// URL with a host")
    parts = urlsplit(base_url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise SpecError(f"base_url {base_url!r} must be an http:// or https:// URL with a host")
    return base_url.strip().rstrip("/")


def check_base_urls(base_url: str | Sequence[str]) -> list[str]:
    """One URL, or the URLs of several replicas of one model (each once)."""
    given = [base_url] if isinstance(base_url, str) else list(base_url)
    if not given:
        raise SpecError("base_url: give at least one URL")
    urls = [check_base_url(u) for u in given]
    repeated = sorted({u for u in urls if urls.count(u) > 1})
    if repeated:
        raise SpecError(f"base_url {redacted_url(repeated[0])!r} is given twice")
    return urls


def read_key(api_key_env: str | None) -> Secret | None:
    if api_key_env is None:
        return None
    if not api_key_env:
        raise SpecError("api_key_env must name an environment variable")
    value = os.environ.get(api_key_env)
    if not value:
        raise SpecError(f"api_key_env: environment variable {api_key_env} is not set or empty")
    register_secret(value)  # never written anywhere, whatever the variable is called
    return Secret(value)


def shorten(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def response_reason(response: httpx.Response, secrets: list[str], limit: int = REASON_CHARS
                    ) -> str:
    """The server's own words on a failed response (:func:`reason_of`)."""
    return reason_of(response.status_code, response.text, secrets, limit)


def reason_of(status: int, body: str, secrets: list[str], limit: int = REASON_CHARS) -> str:
    """The server's own words on a failed response, scrubbed of secrets, on one short line:
    the message of an OpenAI-style error body (``{"error": {"message"}}``, ``{"message"}``,
    ``{"detail"}``), an HTML page's title and first words, else the body text."""
    text = scrub(body, secrets)
    if looks_like_html(text):
        return f"HTTP {status}: HTML page: {html_summary(text, min(limit, HTML_SUMMARY_CHARS))}"
    message: Any = None
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if not message:
            message = payload.get("message") or payload.get("detail")
    if message and not isinstance(message, str):
        message = json.dumps(message)
    reason = shorten(message if isinstance(message, str) and message.strip() else text, limit)
    return f"HTTP {status}: {reason}" if reason else f"HTTP {status}"


def lower_first(text: str) -> str:
    """``Connection refused`` as it reads inside a sentence."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def positive(name: str, value: Any, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        raise SpecError(f"{name} must be a {'whole ' if integer else ''}number, got {value!r}")
    if value <= 0:
        raise SpecError(f"{name} must be > 0, got {value!r}")

