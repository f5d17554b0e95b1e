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
request's headers) is scrubbed of every known secret before it becomes an error message
(:mod:`clstream.models.openai_failures`).

Before a run, :meth:`OpenAICompatModel.preflight` checks the endpoint in seconds
(:mod:`clstream.models.openai_preflight`: what it asks, and what it fails on).

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
import random
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from clstream.core.contracts import Tokenizer
from clstream.core.errors import SpecError
from clstream.core.params import Param
from clstream.core.secrets import redacted_url
from clstream.core.types import (
    Adapter,
    GenerationRequest,
    GenerationResult,
    Sample,
    Usage,
)
from clstream.models.adapters import unserved_adapter
from clstream.models.breaker import CircuitBreaker
from clstream.models.cache import ResponseCache
from clstream.models.concurrency import DEFAULT_CEILING, DEFAULT_START, ConcurrencyLimit, Turn
from clstream.models.endpoint import ServerInfo
from clstream.models.http import (
    HttpClient,
    HttpFailure,
    HttpTimeout,
    aiohttp_available,
    new_client,
)
from clstream.models.lora_endpoint import RuntimeAdapters, load_lora_adapter
from clstream.models.middleware import OnResult, generate_cached
from clstream.models.openai_failures import (
    CONGESTION_STATUSES,
    SNIPPET_CHARS,
    UNFINISHED,
    Congestion,
    EndpointError,
    NoStream,
    Unanswered,
    check_base_urls,
    lower_first,
    positive,
    read_key,
    reason_of,
    response_reason,
)
from clstream.models.openai_preflight import (
    PREFLIGHT_PROMPT,
    PREFLIGHT_RETRY_AFTER_MAX,
    PREFLIGHT_RETRY_WAITS,
    PREFLIGHT_TIMEOUT,
    EndpointCheck,
)
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

# Names kept where callers and tests have always imported them from.
__all__ = [
    "BACKEND", "DEFAULT_BASE_URL", "EndpointError", "OpenAICompatModel", "PREFLIGHT_PROMPT",
    "PREFLIGHT_RETRY_AFTER_MAX", "PREFLIGHT_RETRY_WAITS", "PREFLIGHT_TIMEOUT",
]
_reason = reason_of
_server_reason = response_reason

BACKEND = "openai"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


FREE_RESENDS = 16  # sends of one request after congestion that spend no retry, at most


@dataclass
class _LoopState:
    """What requests on one event loop share: the in-flight bound and, inside ``async with``,
    one connection pool."""

    loop: weakref.ReferenceType[asyncio.AbstractEventLoop]
    limit: ConcurrencyLimit
    breaker: CircuitBreaker
    client: HttpClient | None = None
    users: int = 0



class OpenAICompatModel(EndpointCheck):
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
            positive("max_concurrency", max_concurrency, integer=True)
        positive("request_timeout", request_timeout)
        self.target = target.strip()
        self.name = f"{BACKEND}:{self.target}"
        # Several URLs: replicas of one model, requests routed by affinity (replicas.py).
        self.base_urls = check_base_urls(base_url)
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
        self._key = read_key(api_key_env)
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
                    lambda response: response_reason(response, self._secrets()))
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

    def _new_pool(self) -> HttpClient:
        """The connection pool of a run's requests (:mod:`clstream.models.http`)."""
        pool = self.max_concurrency if self.max_concurrency is not None else DEFAULT_CEILING
        return new_client(self.request_timeout, pool, trust_env=self._trust_env(),
                          prefer=self.http_client)

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
        rng: random.Random | None = None  # seeded at the first wait: most requests have none
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
            except NoStream:
                limit.released(ticket)
                self.stream = False  # this server answers plain requests only
                continue
            except Congestion as failure:
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
            except Unanswered as failure:
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
                if rng is None:
                    rng = jitter_rng(request.key)
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
                        raise Congestion(UNFINISHED, True)
                    payload: Any = assembler.payload()
                    chunks = assembler.tokens
                else:
                    payload = loads_reply(await reply.body())
        except (TimeoutError, HttpTimeout) as exc:
            if isinstance(exc, HttpTimeout) and exc.connect:
                what = f"no connection within {min(timeout, 30.0):g}s"
                raise Unanswered(what, what) from exc
            what = (f"no response within {timeout:g}s" if first_token is None
                    else f"no token for {timeout:g}s")
            raise Congestion(what, True, silent=first_token is None) from exc
        except HttpFailure as exc:
            if exc.unanswered is not None and not exc.fatal:
                raise Unanswered(exc.reason, lower_first(exc.unanswered)) from exc
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
        reason = reason_of(status, body.decode("utf-8", "replace"), self._secrets(),
                         SNIPPET_CHARS)
        if streamed and status in (400, 422) and "stream" in reason.lower():
            raise NoStream(reason)
        retry_after = parse_retry_after(headers.get("retry-after"))
        if status in CONGESTION_STATUSES:
            raise Congestion(reason, False, retry_after)
        raise AttemptFailure(reason, is_retryable_status(status), retry_after)

