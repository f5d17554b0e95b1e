"""A Model backed by any OpenAI-compatible chat server (vLLM, SGLang, hosted APIs).

docs/design.md §3.2: "talk to model servers (vLLM, SGLang) over the OpenAI-compatible API" and "caching,
retries, concurrency limits and cost accounting wrap any backend". This backend adds:

- a bound on requests in flight shared by all ``generate`` calls of the model on one event
  loop, adaptive by default and fixed by ``max_concurrency``
  (:mod:`clstream.models.concurrency`); a request waiting out a backoff does not hold a slot;
- streamed answers (usage from the final chunk) with timeouts on silence, not on length: an
  attempt times out when no token came for ``request_timeout`` seconds (the wait for the first
  one included), never because a long answer keeps coming; closing a timed-out stream stops the
  server generating it. A server that answers a streamed request with a plain body is read as
  before, and one that refuses streaming is asked without it from then on;
- a timeout or an interrupted stream while other requests are in flight is the server's queue
  speaking: the limit is lowered and the request sent again without spending a retry; a
  request fails only after its retries are spent on faults that met it alone (or at once, on
  an answer that cannot change); a stream cut short with nothing else in flight means the
  server's streams are broken, and its requests are sent plain from then on;
- retries with exponential backoff and full jitter on 408/409/429, 5xx, timeouts, dropped
  connections and malformed bodies (:mod:`clstream.models.retry`); a request that still fails
  is returned as an error result with no samples, never as a guessed answer;
- a circuit breaker (:mod:`clstream.models.breaker`): once the server has stopped answering
  (connections refused or reset, in a row, for a while), every remaining request fails at
  once, unretried, with one error naming the server, instead of spending minutes of retries;
- the response cache of :mod:`clstream.models.middleware`, which wraps any backend: this one
  keys it by the request body it sends (:meth:`OpenAICompatModel.cache_key`) and reports each
  result as it comes (:meth:`OpenAICompatModel.generate_each`), so each answer is stored once
  paid for; given here as an object or opened from ``cache_path``, the same cache applies;
- usage as the server reports it, else counted with the tokenizer (a stream without usage, as
  llama-cpp-python sends, counts its text chunks as completion tokens); latency is the wall
  time of the attempt that succeeded (backoff waits are not part of it);
- request bodies encoded with orjson, and the run's requests sent through aiohttp where it is
  installed, httpx otherwise (:mod:`clstream.models.http`: a tenth of the client CPU per
  request); the endpoint checks always use httpx.

Before the run, the preflight also reads what the server says of itself
(:mod:`clstream.models.endpoint`): its slot count is where the adaptive limit starts, its
context length is :attr:`OpenAICompatModel.server` for the run's checks. :meth:`transport`
gives the limit's history and request counters.

The API key is read once, from the environment variable named by ``api_key_env``, and goes only
into the ``Authorization`` header: it is absent from ``describe()``, results, cache entries and
the object's repr, and the object refuses to be pickled with it. It is registered as a secret
(:mod:`clstream.core.secrets`), and the text of an error body (which some servers fill with the
request's headers) is scrubbed of every known secret before it becomes an error message.

Before a run, :meth:`OpenAICompatModel.preflight` checks the endpoint in seconds instead of
letting every request of the run retry into the same wall: ``GET /models`` (the server is
reachable, the credentials are accepted, the model is listed) and one chat request of one token
with the run's sampling parameters (the model is served and the parameters are accepted). A
definite failure (unreachable, refused credentials, unknown model, rejected parameter, an
answer that is not a chat completion: a static web server's page, JSON without choices, a 5xx
still there after two more tries) raises :class:`EndpointError`, one line quoting the server's
reason (an HTML page by its title and first words); a busy server (429, no answer within the
check's few seconds) is returned as a note and the run goes on, since its requests are retried.

Tool calling: requests with ``tools`` are sent with them and the calls come back on the
samples (:mod:`clstream.models.wire`), so ``describe()["tools"]`` is True: the backend can carry
tool calls. Whether the server honours them is the server's setting (vLLM needs
``--enable-auto-tool-choice`` and a ``--tool-call-parser``); a server that refuses a request
with tools answers 400, and the request fails with the server's reason.

Trained weights (docs/parametric.md §3): with ``lora`` (``--model-args lora=true``) the
server is one that loads LoRA adapters at runtime (vLLM, SGLang). Before the first request
naming an adapter, the model asks the server to load it by its name
(:mod:`clstream.models.lora_endpoint`), once per name; the request is then sent with the
adapter's name as its ``model``, so its body, and its cache key, differ from the base model's.
A load that fails makes the request an error result. Without ``lora`` (or for a full
checkpoint, which such a server cannot load) a request with an adapter is an error result.

Replicas: ``base_url`` may list several servers of one model. Each request goes to the replica
that owns its affinity (the run's cell that sent it), a replica that stops answering is left for
the others without spending a retry, and the endpoint check checks every replica
(:mod:`clstream.models.replicas`); the body, and so the cache key, is the same whichever
replica answers. One URL behaves as it always did.

Connections: inside ``async with model:`` all ``generate`` calls share one connection pool
(keep-alive, one TLS handshake); outside it each ``generate`` call opens and closes its own, so
nothing is ever left open. The in-flight bound is per event loop; the model is meant to be used
from one event loop at a time (a new loop gets a fresh bound).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, NoReturn
from urllib.parse import urlsplit

import httpx

from clstream.core.contracts import Tokenizer
from clstream.core.errors import ClstreamError, SpecError
from clstream.core.params import Param
from clstream.core.secrets import redacted_url, register_secret, scrub
from clstream.core.types import (
    Adapter,
    GenerationRequest,
    GenerationResult,
    Message,
    Sample,
    SamplingParams,
    Usage,
)
from clstream.models.adapters import unserved_adapter
from clstream.models.breaker import CircuitBreaker
from clstream.models.cache import ResponseCache
from clstream.models.concurrency import DEFAULT_CEILING, DEFAULT_START, ConcurrencyLimit, Turn
from clstream.models.endpoint import (
    HTML_SUMMARY_CHARS,
    ServerInfo,
    completion_problem,
    html_summary,
    looks_like_html,
    merge,
    merge_replicas,
    parse_model_listing,
    parse_props,
    server_root,
)
from clstream.models.http import (
    HttpClient,
    HttpFailure,
    HttpTimeout,
    aiohttp_available,
    new_client,
    os_reason,
)
from clstream.models.lora_endpoint import RuntimeAdapters, load_lora_adapter
from clstream.models.middleware import OnResult, generate_cached
from clstream.models.replicas import ReplicaRouter, affinity_of
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
    StreamAssembler,
    build_body,
    check_extra_body,
    count_usage,
    dumps_body,
    loads_reply,
    parse_samples,
    parse_usage,
    stream_body,
)

BACKEND = "openai"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

# The endpoint check: seconds per call at most, and the one prompt it sends (one token back).
PREFLIGHT_TIMEOUT = 5.0
PREFLIGHT_PROMPT = "Reply with the word OK."
# Waits before the endpoint check asks again after a 5xx; a server still failing then fails it.
PREFLIGHT_RETRY_WAITS = (1.0, 2.0)
PREFLIGHT_RETRY_AFTER_MAX = 10.0  # seconds of a server's Retry-After the check waits at most
_REASON_CHARS = 240  # of a server's reason quoted in one line
_SNIPPET_CHARS = 300  # of an error body kept in a stored error
FREE_RESENDS = 16  # sends of one request after congestion that spend no retry, at most
CONGESTION_STATUSES = frozenset({429, 503})
UNFINISHED = "stream ended before the answer finished"


class EndpointError(ClstreamError):
    """The model endpoint cannot serve the run (found by the check before it starts)."""


class _Congestion(AttemptFailure):
    """A failed attempt that says the server is full: a silence timeout or an interrupted
    stream (``free``: sent again at once when others were in flight) or a 429/503 (retried
    after the usual wait). ``silent``: nothing at all came back before the timeout."""

    def __init__(self, reason: str, free: bool, retry_after: float | None = None,
                 silent: bool = False):
        super().__init__(reason, True, retry_after)
        self.free = free
        self.silent = silent


class _Unanswered(AttemptFailure):
    """A failed attempt that got no response at all (``cause``: the operating system's
    reason), which the circuit breaker counts."""

    def __init__(self, reason: str, cause: str):
        super().__init__(reason, True)
        self.cause = cause


class _NoStream(Exception):
    """The server refused the streaming fields of a request."""


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
    limit: ConcurrencyLimit
    breaker: CircuitBreaker
    client: HttpClient | None = None
    users: int = 0


def _check_base_url(base_url: str) -> str:
    if not isinstance(base_url, str):
        raise SpecError(f"base_url {base_url!r} must be an http:// or https:// URL with a host")
    parts = urlsplit(base_url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise SpecError(f"base_url {base_url!r} must be an http:// or https:// URL with a host")
    return base_url.strip().rstrip("/")


def _check_base_urls(base_url: str | Sequence[str]) -> list[str]:
    """One URL, or the URLs of several replicas of one model (each once)."""
    given = [base_url] if isinstance(base_url, str) else list(base_url)
    if not given:
        raise SpecError("base_url: give at least one URL")
    urls = [_check_base_url(u) for u in given]
    repeated = sorted({u for u in urls if urls.count(u) > 1})
    if repeated:
        raise SpecError(f"base_url {redacted_url(repeated[0])!r} is given twice")
    return urls


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
    """The server's own words on a failed response (:func:`_reason`)."""
    return _reason(response.status_code, response.text, secrets, limit)


def _reason(status: int, body: str, secrets: list[str], limit: int = _REASON_CHARS) -> str:
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
    reason = _shorten(message if isinstance(message, str) and message.strip() else text, limit)
    return f"HTTP {status}: {reason}" if reason else f"HTTP {status}"


def _lower_first(text: str) -> str:
    """``Connection refused`` as it reads inside a sentence."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _positive(name: str, value: Any, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        raise SpecError(f"{name} must be a {'whole ' if integer else ''}number, got {value!r}")
    if value <= 0:
        raise SpecError(f"{name} must be > 0, got {value!r}")


class OpenAICompatModel:
    """``openai:<target>``: chat completions from ``{base_url}/chat/completions``."""

    summary: ClassVar[str] = ("openai:<model>: any OpenAI-compatible server (--base-url, "
                              "--api-key-env, --max-concurrency, --request-timeout, --cache)")
    # Endpoint, key, concurrency, retries and cache come from flags: none changes an answer.
    params: ClassVar[dict[str, Param]] = {
        "lora": Param(False, "the server loads LoRA adapters at runtime (vLLM, SGLang), so "
                             "requests can carry them", recorded_at_default=False),
    }

    def __init__(
        self,
        target: str,
        base_url: str | Sequence[str] = DEFAULT_BASE_URL,
        api_key_env: str | None = None,
        max_concurrency: int | None = None,
        request_timeout: float = 120.0,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        cache: ResponseCache | None = None,
        tokenizer: Tokenizer | None = None,
        extra_body: dict[str, Any] | None = None,
        cache_path: str | Path | None = None,
        stream: bool = True,
        http_client: str | None = None,
        lora: bool = False,
    ):
        if not isinstance(target, str) or not target.strip():
            raise SpecError("openai model: target (the served model name) must be non-empty")
        if max_concurrency is not None:
            _positive("max_concurrency", max_concurrency, integer=True)
        _positive("request_timeout", request_timeout)
        self.target = target.strip()
        self.name = f"{BACKEND}:{self.target}"
        # Several URLs: replicas of one model, requests routed by affinity (replicas.py).
        self.base_urls = _check_base_urls(base_url)
        self.base_url = self.base_urls[0]
        self.router = ReplicaRouter(self.base_urls)
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
        self.stream = bool(stream)
        if http_client not in (None, "aiohttp", "httpx"):
            raise SpecError(f"http_client must be aiohttp or httpx, got {http_client!r}")
        self.http_client = http_client
        self.server: ServerInfo | None = None  # what the server reported, after preflight()
        self._orders = itertools.count()
        self._listed_context: int | None = None
        if not isinstance(lora, bool):
            raise SpecError(f"lora must be true or false, got {lora!r}")
        self.lora = lora
        self._adapters = RuntimeAdapters(self._load_adapter)

    def __repr__(self) -> str:
        return f"OpenAICompatModel(name={self.name!r}, base_url={redacted_url(self.base_url)!r})"

    def describe(self) -> dict[str, Any]:
        return {
            "backend": BACKEND,
            "name": self.name,
            "target": self.target,
            "base_url": redacted_url(self.base_url),
            "api_key_env": self.api_key_env,
            "tokenizer": self.tokenizer.name,
            "tokenizer_exact": self.tokenizer.exact,
            "max_concurrency": self.max_concurrency,  # None: adaptive
            "stream": self.stream,
            "http_client": self.http_client or ("aiohttp" if aiohttp_available() else "httpx"),
            "request_timeout": self.request_timeout,
            "max_retries": self.policy.max_retries,
            "backoff_base": self.policy.backoff_base,
            "backoff_max": self.policy.backoff_max,
            "extra_body": json.loads(json.dumps(self.extra_body)),
            "cache": str(self.cache.path) if self.cache is not None else None,
            "tools": True,
            # Recorded only when on, so other runs describe themselves as they always did.
            **({"lora": True} if self.lora else {}),
            **({"replicas": [redacted_url(u) for u in self.base_urls]}
               if len(self.base_urls) > 1 else {}),
        }

    def adapter_kinds(self) -> tuple[str, ...]:
        """LoRA adapters, loaded by name, when the server was declared able to (``lora``)."""
        return ("lora",) if self.lora else ()

    def served_model(self, request: GenerationRequest) -> str:
        """The ``model`` a request's body names: its adapter's name, else the target."""
        return self.target if request.adapter is None else request.adapter.name

    async def _load_adapter(self, adapter: Adapter) -> str | None:
        """Load ``adapter`` on every replica (any of them may serve its requests)."""
        async with self._new_client() as client:
            for base_url in self.base_urls:
                why = await load_lora_adapter(
                    client, base_url, self._headers(), adapter,
                    lambda response: _server_reason(response, self._secrets()))
                if why is not None:
                    return why if len(self.base_urls) == 1 else \
                        f"{why} (at {redacted_url(base_url)})"
            return None

    # -- lifecycle -------------------------------------------------------------------------

    def start_concurrency(self) -> int:
        """Requests in flight at the start: the fixed bound, else the server's slot count where
        it reported one (after :meth:`preflight`), else the adaptive default."""
        if self.max_concurrency is not None:
            return self.max_concurrency
        slots = self.server.slots if self.server is not None else None
        return min(slots, DEFAULT_CEILING) if slots else DEFAULT_START

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop() is not loop:
            limit = ConcurrencyLimit(self.start_concurrency(), self.max_concurrency is None)
            state = _LoopState(weakref.ref(loop), limit, CircuitBreaker(self._where()))
            self._state = state
        return state

    def _where(self) -> str:
        """The server(s), as an error names them."""
        if len(self.base_urls) == 1:
            return redacted_url(self.base_url)
        return "every replica (" + ", ".join(redacted_url(u) for u in self.base_urls) + ")"

    def transport(self) -> dict[str, Any]:
        """The in-flight bound of the latest event loop: its setting, current value, history
        (seconds since start, limit, reason) and request counters; kept with a run. With
        several replicas, also what the router did (:meth:`ReplicaRouter.describe`)."""
        if self._state is None:
            described = ConcurrencyLimit(self.start_concurrency(),
                                         self.max_concurrency is None).describe()
        else:
            described = self._state.limit.describe()
        if len(self.base_urls) > 1:
            described["routing"] = self.router.describe(redacted_url)
        return described

    def _trust_env(self) -> bool:
        """Proxy settings from the environment make no sense for loopback servers."""
        return any((urlsplit(u).hostname or "") not in _LOOPBACK for u in self.base_urls)

    def _new_pool(self) -> HttpClient:
        """The connection pool of a run's requests (:mod:`clstream.models.http`)."""
        pool = self.max_concurrency if self.max_concurrency is not None else DEFAULT_CEILING
        return new_client(self.request_timeout, pool, trust_env=self._trust_env(),
                          prefer=self.http_client)

    def _new_client(self, timeout: float | None = None) -> httpx.AsyncClient:
        """An httpx client for the endpoint checks (a few requests, before the run)."""
        seconds = self.request_timeout if timeout is None else timeout
        pool = self.max_concurrency if self.max_concurrency is not None else DEFAULT_CEILING
        return httpx.AsyncClient(
            # Read: the longest silence; pool: none, the in-flight bound does the waiting.
            timeout=httpx.Timeout(seconds, connect=min(seconds, 30.0), pool=None),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            trust_env=self._trust_env(),
        )

    async def __aenter__(self) -> OpenAICompatModel:
        """Keep one connection pool open until exit (otherwise each ``generate`` opens its own)."""
        state = self._loop_state()
        if state.client is None:
            state.client = self._new_pool()
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

    def cache_key(self, request: GenerationRequest) -> str:
        """The response-cache key of ``request``: the backend and the body sent for it."""
        return ResponseCache.key(BACKEND, build_body(self.served_model(request), request,
                                                     self.extra_body))

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        if self.cache is None:
            return await self.generate_each(requests, None)
        return await generate_cached(self.cache, requests,
                                     [self.cache_key(r) for r in requests],
                                     (BACKEND, self.target), self.generate_each)

    async def generate_each(self, requests: Sequence[GenerationRequest],
                            on_result: OnResult | None) -> list[GenerationResult]:
        """Results of ``requests`` in their order; ``on_result`` hears of each one as soon as
        it is known."""
        state = self._loop_state()
        if state.client is not None:
            return await self._gather(state, state.client, requests, on_result)
        client = self._new_pool()
        try:
            return await self._gather(state, client, requests, on_result)
        finally:
            await client.aclose()

    async def _gather(
        self,
        state: _LoopState,
        client: HttpClient,
        requests: Sequence[GenerationRequest],
        on_result: OnResult | None,
    ) -> list[GenerationResult]:
        # Order numbers are taken here, in the caller's order, so admission follows it.
        return list(await asyncio.gather(*(
            self._one(state, client, r, next(self._orders), i, on_result)
            for i, r in enumerate(requests))))

    async def _one(
        self, state: _LoopState, client: HttpClient, request: GenerationRequest,
        order: int, index: int, on_result: OnResult | None,
    ) -> GenerationResult:
        refused = unserved_adapter(self.name, request, self.adapter_kinds())
        if refused is None and request.adapter is not None:
            why = await self._adapters.ensure(request.adapter)
            if why is not None:
                refused = self._error(request, f"cannot load LoRA adapter "
                                               f"{request.adapter.name!r}: {why}")
        if refused is not None:
            result = refused
        else:
            body = build_body(self.served_model(request), request, self.extra_body)
            result = await self._with_retries(state, client, request, body, order)
        if on_result is not None:
            on_result(index, result)
        return result

    async def _with_retries(
        self,
        state: _LoopState,
        client: HttpClient,
        request: GenerationRequest,
        body: dict[str, Any],
        order: int,
    ) -> GenerationResult:
        rng = jitter_rng(request.key)
        attempts = self.policy.attempts
        limit, breaker, router = state.limit, state.breaker, self.router
        affinity = affinity_of(request.key)
        last = ""
        retry_after: float | None = None
        attempt = free = moves = 0
        while attempt < attempts:
            if breaker.error is not None:
                return self._stopped(limit, request, breaker.error)
            ticket = await limit.acquire(order)
            if breaker.error is not None:
                limit.released(ticket)
                return self._stopped(limit, request, breaker.error)
            replica = router.route(affinity)
            try:
                samples, usage, first_token_s = await self._attempt(
                    client, request, body, ticket.turn, self.base_urls[replica])
            except _NoStream:
                limit.released(ticket)
                self.stream = False  # this server answers plain requests only
                continue
            except _Congestion as failure:
                others = limit.in_flight > 1
                limit.congested(ticket, failure.reason)
                if not failure.silent:
                    breaker.answered()
                    router.answered(replica)
                last, retry_after = failure.reason, failure.retry_after
                if failure.free and others and free < FREE_RESENDS:
                    free += 1
                    limit.note_resend()
                    continue  # the queue was full, not the request wrong: no retry spent
                if failure.reason == UNFINISHED:
                    self.stream = False  # cut short with nothing else waiting: streams break
            except _Unanswered as failure:
                limit.released(ticket)
                last, retry_after = failure.reason, None
                if router.unanswered(replica) and moves < len(self.base_urls):
                    moves += 1
                    continue  # another replica is up: sent there at once, no retry spent
                if breaker.failed(failure.cause) or breaker.error is not None:
                    return self._stopped(limit, request, breaker.error or last)
            except AttemptFailure as failure:
                limit.released(ticket, error=not failure.retryable)
                breaker.answered()
                router.answered(replica)
                last, retry_after = failure.reason, failure.retry_after
                if not failure.retryable:
                    return self._error(request, f"{failure.reason} (not retried)")
            except BaseException:
                limit.released(ticket)
                raise
            else:
                breaker.answered()
                router.answered(replica)
                limit.succeeded(ticket, first_token_s, usage.latency_s, usage.completion_tokens)
                return GenerationResult(
                    key=request.key, samples=samples, usage=usage, stage=request.stage,
                    first_token_s=first_token_s,
                )
            attempt += 1
            if attempt < attempts:
                await breaker.sleep(self.policy.delay(attempt - 1, rng, retry_after))
        limit.stats.errors += 1
        return self._error(request, f"failed after {attempts} attempts; last error: {last}")

    def _stopped(self, limit: ConcurrencyLimit, request: GenerationRequest, why: str
                 ) -> GenerationResult:
        """A request failed by the open circuit breaker (no further attempt)."""
        limit.stats.errors += 1
        return self._error(request, why)

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
        self, client: HttpClient, request: GenerationRequest, body: dict[str, Any],
        turn: Turn | None = None, base_url: str | None = None,
    ) -> tuple[list[Sample], Usage, float]:
        """One attempt, to ``base_url`` (the first replica by default): samples, usage
        (latency: the attempt's wall time) and the seconds to the first token (the whole
        latency when the answer was not streamed). With ``turn`` the body goes out after
        those of the requests admitted before it."""
        url = f"{base_url or self.base_url}/chat/completions"
        streamed = self.stream
        content = dumps_body(stream_body(body) if streamed else body)
        headers = self._headers()
        headers["Content-Type"] = "application/json"
        timeout = self.request_timeout
        start = time.perf_counter()
        first_token: float | None = None
        chunks = 0  # stream chunks that carried text: tokens, on servers that send one each
        try:
            async with client.post(url, content, headers, turn) as reply:
                if not 200 <= reply.status < 300:
                    self._refuse(reply.status, reply.headers, await reply.body(), streamed)
                if reply.headers.get("content-type", "").startswith("text/event-stream"):
                    assembler = StreamAssembler()
                    last = start
                    async for line in reply.lines():
                        now = time.perf_counter()
                        if assembler.feed(line):
                            if first_token is None:
                                first_token = now - start
                            last = now
                        elif now - last > timeout:  # only keep-alive comments lately
                            raise TimeoutError
                        if assembler.done:
                            break
                    if not assembler.finished:
                        raise _Congestion(UNFINISHED, True)
                    payload: Any = assembler.payload()
                    chunks = assembler.tokens
                else:
                    payload = loads_reply(await reply.body())
        except (TimeoutError, HttpTimeout) as exc:
            if isinstance(exc, HttpTimeout) and exc.connect:
                what = f"no connection within {min(timeout, 30.0):g}s"
                raise _Unanswered(what, what) from exc
            what = (f"no response within {timeout:g}s" if first_token is None
                    else f"no token for {timeout:g}s")
            raise _Congestion(what, True, silent=first_token is None) from exc
        except HttpFailure as exc:
            if exc.unanswered is not None and not exc.fatal:
                raise _Unanswered(exc.reason, _lower_first(exc.unanswered)) from exc
            raise AttemptFailure(exc.reason, not exc.fatal) from exc
        except MalformedResponse as exc:
            raise AttemptFailure(f"malformed response: {exc}", True) from exc
        latency = time.perf_counter() - start
        try:
            samples = parse_samples(payload, request.params.n)
        except MalformedResponse as exc:
            raise AttemptFailure(f"malformed response: {exc}", True) from exc
        usage = parse_usage(payload, samples, self.tokenizer)
        if usage is None:
            usage = count_usage(request, samples, self.tokenizer)
            if chunks and request.params.n == 1:  # a stream without usage (llama-cpp-python)
                usage.completion_tokens = max(chunks, usage.reasoning_tokens)
        usage.latency_s = latency
        return samples, usage, latency if first_token is None else first_token

    def _refuse(self, status: int, headers: Any, body: bytes, streamed: bool) -> None:
        """Raise the failure a non-2xx answer stands for."""
        # Scrubbed before it is cut, so no part of a secret can survive the cut.
        reason = _reason(status, body.decode("utf-8", "replace"), self._secrets(),
                         _SNIPPET_CHARS)
        if streamed and status in (400, 422) and "stream" in reason.lower():
            raise _NoStream(reason)
        retry_after = parse_retry_after(headers.get("retry-after"))
        if status in CONGESTION_STATUSES:
            raise _Congestion(reason, False, retry_after)
        raise AttemptFailure(reason, is_retryable_status(status), retry_after)

    # -- the endpoint check ----------------------------------------------------------------

    async def preflight(self, sampling: SamplingParams) -> list[str]:
        """Check in seconds that a run can use this endpoint (module docstring); raises
        :class:`EndpointError` when it cannot, returns notes on transient trouble."""
        timeout = min(self.request_timeout, PREFLIGHT_TIMEOUT)
        notes: list[str] = []
        infos: list[ServerInfo] = []
        async with self._new_client(timeout) as client:
            for base_url in self.base_urls:  # every replica must serve the model
                where = f"model {self.name} at {redacted_url(base_url)}"
                served = await self._served_models(client, timeout, where, base_url)
                props = await self._props(client, timeout, base_url)
                infos.append(merge((None if served is None else tuple(served),
                                    self._listed_context), props))
                notes += await self._one_token(client, sampling, timeout, where, served,
                                               base_url)
        self.server = infos[0] if len(infos) == 1 else merge_replicas(infos)
        return notes

    async def _props(self, client: httpx.AsyncClient, timeout: float, base_url: str
                     ) -> tuple[int | None, int | None] | None:
        """Context length and slots from a llama.cpp ``/props`` (None where not answered)."""
        try:
            response = await self._check_call(
                client.get(f"{server_root(base_url)}/props", headers=self._headers()),
                timeout)
        except (TimeoutError, httpx.HTTPError):
            return None
        return parse_props(response.content) if response.is_success else None

    async def _check_call(self, call: Any, timeout: float) -> httpx.Response:
        async with asyncio.timeout(timeout + 1.0):  # a guard over the client's own timeouts
            response: httpx.Response = await call
            return response

    def _refused(self, where: str, response: httpx.Response) -> EndpointError:
        hint = "" if self._key is not None else "; give the key with --api-key-env NAME"
        return EndpointError(f"{where}: the server refused the credentials "
                             f"({_server_reason(response, self._secrets())}){hint}")

    async def _served_models(
        self, client: httpx.AsyncClient, timeout: float, where: str, base_url: str
    ) -> list[str] | None:
        """The model ids ``GET /models`` lists, or None when the server lists none."""
        try:
            response = await self._check_call(
                client.get(f"{base_url}/models", headers=self._headers()), timeout)
        except (TimeoutError, httpx.TimeoutException):
            raise EndpointError(f"{where}: no answer within {timeout:g}s "
                                "(is the server up and the address right?)") from None
        except httpx.TransportError as exc:
            raise EndpointError(f"{where}: cannot connect ({os_reason(exc)})") from None
        if response.status_code in (401, 403):
            raise self._refused(where, response)
        self._listed_context = None
        if not response.is_success:
            return None
        ids, self._listed_context = parse_model_listing(response.content, self.target)
        return None if ids is None else list(ids)

    async def _one_token(
        self,
        client: httpx.AsyncClient,
        sampling: SamplingParams,
        timeout: float,
        where: str,
        served: list[str] | None,
        base_url: str,
    ) -> list[str]:
        request = GenerationRequest(
            key="preflight", messages=(Message(role="user", content=PREFLIGHT_PROMPT),),
            params=sampling.model_copy(update={"max_tokens": 1}),
        )
        body = build_body(self.target, request, self.extra_body)
        unlisted = served is not None and self.target not in served
        waits = iter(PREFLIGHT_RETRY_WAITS)
        while True:
            try:
                response = await self._check_call(
                    client.post(f"{base_url}/chat/completions", json=body,
                                headers=self._headers()), timeout)
            except (TimeoutError, httpx.TimeoutException):
                if unlisted:
                    self._unlisted(where, served, f"no answer within {timeout:g}s")
                # Slow is not wrong: a busy server is answered by the run's retries.
                return [f"{where}: no answer to a 1-token request within {timeout:g}s; going "
                        "on (requests are retried)"]
            except httpx.TransportError as exc:
                raise EndpointError(f"{where}: a 1-token chat request got no answer "
                                    f"({os_reason(exc)})") from None
            status = response.status_code
            wait = next(waits, None) if status >= 500 and status != 501 else None
            if wait is None:
                break
            after = parse_retry_after(response.headers.get("retry-after"))
            await asyncio.sleep(wait if after is None else min(after, PREFLIGHT_RETRY_AFTER_MAX))
        if response.is_success:
            problem = completion_problem(response.content)
            if problem is None:
                return []  # served, whatever the listing says
            raise EndpointError(f"{where}: a 1-token chat request got HTTP {status} with "
                                f"{problem}, not a chat completion; is this the /v1 URL of an "
                                "OpenAI-compatible server?")
        outcome = _server_reason(response, self._secrets())
        if unlisted:
            self._unlisted(where, served, outcome)
        if status in (401, 403):
            raise self._refused(where, response)
        if status == 429:  # the server works and is busy; the run's requests wait their turn
            return [f"{where}: the endpoint check got {outcome}; going on (requests are "
                    "retried)"]
        if status == 404 and not looks_like_html(response.text):
            raise EndpointError(f"{where}: the server does not serve model "
                                f"{self.target!r} ({outcome})")
        if status in (404, 405, 501):
            raise EndpointError(f"{where}: the server does not answer POST /chat/completions "
                                f"({outcome}); is this the /v1 URL of an OpenAI-compatible "
                                "server?")
        if status >= 500:
            raise EndpointError(f"{where}: a 1-token chat request failed "
                                f"{len(PREFLIGHT_RETRY_WAITS) + 1} times ({outcome})")
        raise EndpointError(f"{where}: the server rejected a 1-token request with the run's "
                            f"sampling parameters ({outcome})")

    def _unlisted(self, where: str, served: list[str] | None, outcome: str) -> NoReturn:
        listed = ", ".join(repr(m) for m in (served or [])[:8])
        more = ", ..." if len(served or []) > 8 else ""
        raise EndpointError(f"{where}: the server does not list model {self.target!r} "
                            f"(it serves {listed}{more}) and answered {outcome}")
