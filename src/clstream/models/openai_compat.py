"""A Model backed by any OpenAI-compatible chat server (vLLM, SGLang, hosted APIs).

DESIGN.md: "talk to model servers (vLLM, SGLang) over the OpenAI-compatible API" and "caching,
retries, concurrency limits and cost accounting wrap any backend". This backend adds:

- a bound on requests in flight (an asyncio semaphore shared by all ``generate`` calls of the
  model on one event loop; a request waiting out a backoff does not hold a slot);
- retries with exponential backoff and full jitter on 408/409/429, 5xx, timeouts, dropped
  connections and malformed bodies (:mod:`clstream.models.retry`); a request that still fails
  is returned as an error result with no samples, never as a guessed answer;
- an optional :class:`~clstream.models.cache.ResponseCache` (hits send nothing), given as an
  object or opened from ``cache_path``;
- usage as the server reports it, else counted with the tokenizer; latency is the wall time of
  the attempt that succeeded (backoff waits are not part of it).

The API key is read once, from the environment variable named by ``api_key_env``, and goes only
into the ``Authorization`` header: it is absent from ``describe()``, results, cache entries and
the object's repr, and the object refuses to be pickled with it. It is registered as a secret
(:mod:`clstream.core.secrets`), and the text of an error body (which some servers fill with the
request's headers) is scrubbed of every known secret before it becomes an error message.

Before a run, :meth:`OpenAICompatModel.preflight` checks the endpoint in seconds instead of
letting every request of the run retry into the same wall: ``GET /models`` (the server is
reachable, the credentials are accepted, the model is listed) and one chat request of one token
with the run's sampling parameters (the model is served and the parameters are accepted). A
definite failure (unreachable, refused credentials, unknown model, rejected parameter) raises
:class:`EndpointError`, one line quoting the server's reason; a transient one (429, 5xx, a slow
answer) is returned as a note and the run goes on, since its requests are retried anyway.

Tool calling: requests with ``tools`` are sent with them and the calls come back on the
samples (:mod:`clstream.models.wire`), so ``describe()["tools"]`` is True: the backend can carry
tool calls. Whether the server honours them is the server's setting (vLLM needs
``--enable-auto-tool-choice`` and a ``--tool-call-parser``); a server that refuses a request
with tools answers 400, and the request fails with the server's reason.

Connections: inside ``async with model:`` all ``generate`` calls share one connection pool
(keep-alive, one TLS handshake); outside it each ``generate`` call opens and closes its own, so
nothing is ever left open. The in-flight bound is per event loop; the model is meant to be used
from one event loop at a time (a new loop gets a fresh bound).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from clstream.core.contracts import Tokenizer
from clstream.core.errors import ClstreamError, SpecError
from clstream.core.params import Param
from clstream.core.secrets import register_secret, scrub
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Message,
    Sample,
    SamplingParams,
    Usage,
)
from clstream.models.cache import ResponseCache
from clstream.models.retry import (
    AttemptFailure,
    RetryPolicy,
    is_retryable_status,
    jitter_rng,
    parse_retry_after,
)
from clstream.models.tokenizers import approx_tokenizer
from clstream.models.wire import (
    MalformedResponse,
    build_body,
    check_extra_body,
    count_usage,
    parse_samples,
    parse_usage,
)

BACKEND = "openai"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

# The endpoint check: seconds per call at most, and the one prompt it sends (one token back).
PREFLIGHT_TIMEOUT = 5.0
PREFLIGHT_PROMPT = "Reply with the word OK."
_REASON_CHARS = 240  # of a server's reason quoted in one line
_SNIPPET_CHARS = 300  # of an error body kept in a stored error


class EndpointError(ClstreamError):
    """The model endpoint cannot serve the run (found by the check before it starts)."""


class _Secret:
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


@dataclass
class _LoopState:
    """What requests on one event loop share: the in-flight bound and, inside ``async with``,
    one connection pool."""

    loop: weakref.ReferenceType[asyncio.AbstractEventLoop]
    semaphore: asyncio.Semaphore
    client: httpx.AsyncClient | None = None
    users: int = 0


def _check_base_url(base_url: str) -> str:
    parts = urlsplit(base_url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise SpecError(f"base_url {base_url!r} must be an http:// or https:// URL with a host")
    return base_url.strip().rstrip("/")


def _redact(url: str) -> str:
    """The URL without any user:password part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _read_key(api_key_env: str | None) -> _Secret | None:
    if api_key_env is None:
        return None
    if not api_key_env:
        raise SpecError("api_key_env must name an environment variable")
    value = os.environ.get(api_key_env)
    if not value:
        raise SpecError(f"api_key_env: environment variable {api_key_env} is not set or empty")
    register_secret(value)  # never written anywhere, whatever the variable is called
    return _Secret(value)


def _shorten(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def _server_reason(response: httpx.Response, secrets: list[str], limit: int = _REASON_CHARS
                   ) -> str:
    """The server's own words on a failed response, scrubbed of secrets, on one short line:
    the message of an OpenAI-style error body (``{"error": {"message"}}``, ``{"message"}``,
    ``{"detail"}``), else the body text."""
    text = scrub(response.text, secrets)
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
    reason = _shorten(message if isinstance(message, str) and message.strip() else text, limit)
    return f"HTTP {response.status_code}: {reason}" if reason else f"HTTP {response.status_code}"


def _transport_reason(exc: BaseException) -> str:
    """Why a connection failed, in the operating system's words where it gave some
    ("Connection refused", "Name or service not known"), else the client's."""
    seen: BaseException | None = exc
    reason = ""
    for _ in range(16):  # the chain of causes, innermost last
        if seen is None:
            break
        if isinstance(seen, OSError) and isinstance(seen.errno, int):
            reason = os.strerror(seen.errno) if seen.errno > 0 else seen.strerror or reason
        seen = seen.__cause__ or seen.__context__
    return reason or str(exc) or type(exc).__name__


def _positive(name: str, value: Any, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        raise SpecError(f"{name} must be a {'whole ' if integer else ''}number, got {value!r}")
    if value <= 0:
        raise SpecError(f"{name} must be > 0, got {value!r}")


class OpenAICompatModel:
    """``openai:<target>``: chat completions from ``{base_url}/chat/completions``."""

    summary: ClassVar[str] = ("openai:<model>: any OpenAI-compatible server (--base-url, "
                              "--api-key-env, --max-concurrency, --cache)")
    # Endpoint, key, concurrency, retries and cache come from flags: none changes an answer.
    params: ClassVar[dict[str, Param]] = {}

    def __init__(
        self,
        target: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key_env: str | None = None,
        max_concurrency: int = 8,
        request_timeout: float = 120.0,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        cache: ResponseCache | None = None,
        tokenizer: Tokenizer | None = None,
        extra_body: dict[str, Any] | None = None,
        cache_path: str | Path | None = None,
    ):
        if not isinstance(target, str) or not target.strip():
            raise SpecError("openai model: target (the served model name) must be non-empty")
        _positive("max_concurrency", max_concurrency, integer=True)
        _positive("request_timeout", request_timeout)
        self.target = target.strip()
        self.name = f"{BACKEND}:{self.target}"
        self.base_url = _check_base_url(base_url)
        self.max_concurrency = max_concurrency
        self.request_timeout = float(request_timeout)
        self.policy = RetryPolicy(max_retries, backoff_base, backoff_max)
        if cache is not None and cache_path is not None:
            raise SpecError("give either cache or cache_path, not both")
        self.cache = ResponseCache(cache_path) if cache_path is not None else cache
        self.tokenizer: Tokenizer = tokenizer if tokenizer is not None else approx_tokenizer()
        self.extra_body = check_extra_body(extra_body)
        self.api_key_env = api_key_env
        self._key = _read_key(api_key_env)
        self._state: _LoopState | None = None

    def __repr__(self) -> str:
        return f"OpenAICompatModel(name={self.name!r}, base_url={_redact(self.base_url)!r})"

    def describe(self) -> dict[str, Any]:
        return {
            "backend": BACKEND,
            "name": self.name,
            "target": self.target,
            "base_url": _redact(self.base_url),
            "api_key_env": self.api_key_env,
            "tokenizer": self.tokenizer.name,
            "tokenizer_exact": self.tokenizer.exact,
            "max_concurrency": self.max_concurrency,
            "request_timeout": self.request_timeout,
            "max_retries": self.policy.max_retries,
            "backoff_base": self.policy.backoff_base,
            "backoff_max": self.policy.backoff_max,
            "extra_body": json.loads(json.dumps(self.extra_body)),
            "cache": str(self.cache.path) if self.cache is not None else None,
            "tools": True,
        }

    # -- lifecycle -------------------------------------------------------------------------

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop() is not loop:
            state = _LoopState(weakref.ref(loop), asyncio.Semaphore(self.max_concurrency))
            self._state = state
        return state

    def _new_client(self, timeout: float | None = None) -> httpx.AsyncClient:
        host = urlsplit(self.base_url).hostname or ""
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.request_timeout if timeout is None else timeout),
            limits=httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            ),
            # Proxy settings from the environment make no sense for a loopback server.
            trust_env=host not in _LOOPBACK,
        )

    async def __aenter__(self) -> OpenAICompatModel:
        """Keep one connection pool open until exit (otherwise each ``generate`` opens its own)."""
        state = self._loop_state()
        if state.client is None:
            state.client = self._new_client()
        state.users += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        state = self._loop_state()
        state.users = max(0, state.users - 1)
        if state.users == 0:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the shared connection pool of the running loop (the model stays usable)."""
        state = self._loop_state()
        client, state.client, state.users = state.client, None, 0
        if client is not None:
            await client.aclose()

    # -- generation ------------------------------------------------------------------------

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        state = self._loop_state()
        if state.client is not None:
            return await self._gather(state, state.client, requests)
        async with self._new_client() as client:
            return await self._gather(state, client, requests)

    async def _gather(
        self,
        state: _LoopState,
        client: httpx.AsyncClient,
        requests: Sequence[GenerationRequest],
    ) -> list[GenerationResult]:
        return list(await asyncio.gather(*(self._one(state, client, r) for r in requests)))

    async def _one(
        self, state: _LoopState, client: httpx.AsyncClient, request: GenerationRequest
    ) -> GenerationResult:
        body = build_body(self.target, request, self.extra_body)
        key = ResponseCache.key(BACKEND, body) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return GenerationResult(
                    key=request.key,
                    samples=hit.samples,
                    usage=hit.usage,
                    cache_hit=True,
                    stage=request.stage,
                )
        result = await self._with_retries(state, client, request, body)
        if result.ok and self.cache is not None:
            self.cache.put(key, BACKEND, self.target, result.samples, result.usage)
        return result

    async def _with_retries(
        self,
        state: _LoopState,
        client: httpx.AsyncClient,
        request: GenerationRequest,
        body: dict[str, Any],
    ) -> GenerationResult:
        rng = jitter_rng(request.key)
        attempts = self.policy.attempts
        last = ""
        for attempt in range(attempts):
            try:
                async with state.semaphore:
                    samples, usage = await self._attempt(client, request, body)
                return GenerationResult(
                    key=request.key, samples=samples, usage=usage, stage=request.stage
                )
            except AttemptFailure as failure:
                last = failure.reason
                if not failure.retryable:
                    return self._error(request, f"{failure.reason} (not retried)")
                if attempt + 1 < attempts:
                    await asyncio.sleep(self.policy.delay(attempt, rng, failure.retry_after))
        return self._error(request, f"failed after {attempts} attempts; last error: {last}")

    def _error(self, request: GenerationRequest, message: str) -> GenerationResult:
        return GenerationResult(
            key=request.key, error=f"{self.name}: {message}", stage=request.stage
        )

    def _secrets(self) -> list[str]:
        return [] if self._key is None else [self._key.reveal()]

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    async def _attempt(
        self, client: httpx.AsyncClient, request: GenerationRequest, body: dict[str, Any]
    ) -> tuple[list[Sample], Usage]:
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        try:
            async with asyncio.timeout(self.request_timeout):
                response = await client.post(url, json=body, headers=self._headers())
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise AttemptFailure(f"no response within {self.request_timeout:g}s", True) from exc
        except httpx.UnsupportedProtocol as exc:
            raise AttemptFailure(f"cannot reach {_redact(url)}: {exc}", False) from exc
        except httpx.TransportError as exc:
            reason = f"connection error ({type(exc).__name__}): {exc}"
            raise AttemptFailure(reason, True) from exc
        latency = time.perf_counter() - start
        status = response.status_code
        if not response.is_success:
            # Scrubbed before it is cut, so no part of a secret can survive the cut.
            raise AttemptFailure(
                _server_reason(response, self._secrets(), _SNIPPET_CHARS),
                is_retryable_status(status),
                parse_retry_after(response.headers.get("retry-after")),
            )
        try:
            payload = json.loads(response.content)
        except ValueError as exc:
            raise AttemptFailure(f"malformed response: body is not JSON ({exc})", True) from exc
        try:
            samples = parse_samples(payload, request.params.n)
        except MalformedResponse as exc:
            raise AttemptFailure(f"malformed response: {exc}", True) from exc
        usage = parse_usage(payload, samples, self.tokenizer)
        if usage is None:
            usage = count_usage(request, samples, self.tokenizer)
        usage.latency_s = latency
        return samples, usage

    # -- the endpoint check ----------------------------------------------------------------

    async def preflight(self, sampling: SamplingParams) -> list[str]:
        """Check in seconds that a run can use this endpoint (module docstring); raises
        :class:`EndpointError` when it cannot, returns notes on transient trouble."""
        timeout = min(self.request_timeout, PREFLIGHT_TIMEOUT)
        where = f"model {self.name} at {_redact(self.base_url)}"
        async with self._new_client(timeout) as client:
            served = await self._served_models(client, timeout, where)
            return await self._one_token(client, sampling, timeout, where, served)

    async def _check_call(self, call: Any, timeout: float) -> httpx.Response:
        async with asyncio.timeout(timeout + 1.0):  # a guard over the client's own timeouts
            response: httpx.Response = await call
            return response

    def _refused(self, where: str, response: httpx.Response) -> EndpointError:
        hint = "" if self._key is not None else "; give the key with --api-key-env NAME"
        return EndpointError(f"{where}: the server refused the credentials "
                             f"({_server_reason(response, self._secrets())}){hint}")

    async def _served_models(
        self, client: httpx.AsyncClient, timeout: float, where: str
    ) -> list[str] | None:
        """The model ids ``GET /models`` lists, or None when the server lists none."""
        try:
            response = await self._check_call(
                client.get(f"{self.base_url}/models", headers=self._headers()), timeout)
        except (TimeoutError, httpx.TimeoutException):
            raise EndpointError(f"{where}: no answer within {timeout:g}s "
                                "(is the server up and the address right?)") from None
        except httpx.TransportError as exc:
            raise EndpointError(f"{where}: cannot connect ({_transport_reason(exc)})") from None
        if response.status_code in (401, 403):
            raise self._refused(where, response)
        if not response.is_success:
            return None
        try:
            data = json.loads(response.content).get("data")
        except (ValueError, AttributeError):
            return None
        if not isinstance(data, list):
            return None
        ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
        return ids or None

    async def _one_token(
        self,
        client: httpx.AsyncClient,
        sampling: SamplingParams,
        timeout: float,
        where: str,
        served: list[str] | None,
    ) -> list[str]:
        request = GenerationRequest(
            key="preflight", messages=(Message(role="user", content=PREFLIGHT_PROMPT),),
            params=sampling.model_copy(update={"max_tokens": 1}),
        )
        body = build_body(self.target, request, self.extra_body)
        unlisted = served is not None and self.target not in served
        try:
            response = await self._check_call(
                client.post(f"{self.base_url}/chat/completions", json=body,
                            headers=self._headers()), timeout)
        except (TimeoutError, httpx.TimeoutException):
            outcome = f"no answer to a 1-token request within {timeout:g}s"
        except httpx.TransportError as exc:
            outcome = f"connection failed ({_transport_reason(exc)})"
        else:
            if response.is_success:
                return []  # served, whatever the listing says
            outcome = _server_reason(response, self._secrets())
            status = response.status_code
            if unlisted:
                pass
            elif status in (401, 403):
                raise self._refused(where, response)
            elif status == 404:
                raise EndpointError(f"{where}: the server does not serve model "
                                    f"{self.target!r} ({outcome})")
            elif not is_retryable_status(status):
                raise EndpointError(f"{where}: the server rejected a 1-token request with "
                                    f"the run's sampling parameters ({outcome})")
        if unlisted:
            listed = ", ".join(repr(m) for m in (served or [])[:8])
            more = ", ..." if len(served or []) > 8 else ""
            raise EndpointError(f"{where}: the server does not list model {self.target!r} "
                                f"(it serves {listed}{more}) and answered {outcome}")
        return [f"{where}: the endpoint check got {outcome}; going on (requests are retried)"]
