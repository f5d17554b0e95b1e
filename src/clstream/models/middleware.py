"""What wraps any model backend: the response cache and token accounting (docs/design.md
§3.2: the model contract's caching and cost accounting wrap any backend).

:func:`wrap` puts a :class:`ModelMiddleware` around a :class:`~clstream.core.contracts.Model`,
whatever its backend (``openai:``, ``hf:``, ``vllm:``, ``builtin`` or one registered later):

- **the response cache** (:class:`~clstream.models.cache.ResponseCache`, ``--cache``): a
  request whose entry is stored is answered from it (``cache_hit``, nothing sent); the others
  go to the backend in one call, and each successful result is stored as soon as the backend
  has it when the backend reports results one by one (:class:`ResultReporter`: a killed run
  keeps every answer it paid for), else when the call returns. The key is the backend's own
  where it has one (:class:`CacheKeyed`: the OpenAI-compatible backend keys the request body
  it sends, so caches filled before stay valid), else a hash of the backend's description and
  the request (:func:`request_key`);
- **the endpoint check** of a cached run: where the backend's check (:func:`check_model`)
  fails, a run that may find all its answers in the cache goes on with a one-line note
  instead of stopping; requests the cache lacks then fail as usual, and the run ends with the
  command that resumes it;
- **transcripts**: every request and its result is noted for the running cell's capture
  (:mod:`clstream.core.transcripts`), which the results store writes with the records the
  calls served;
- **accounting** (:class:`Accounting`): requests answered, from the cache or by the backend,
  failures, and token totals of what was paid now and what was replayed, with a cost at given
  prices (:mod:`clstream.models.pricing`). A backend that returns a successful result with no
  usage at all gets its tokens counted with its tokenizer, so no backend's calls cost nothing.

Retries, the in-flight limit and send order stay with the transport that gives them meaning
(:mod:`clstream.models.openai_compat`): they act on HTTP signals (refused connections, 429s,
silence while other requests wait) that a local backend does not have.

The wrapper answers to everything the wrapped model does (its name, tokenizer, description,
transport figures, endpoint facts), and holds its resources in ``async with`` where it does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from clstream.core.contracts import (
    AsyncResource,
    Model,
    Tokenizer,
    adapter_kinds_of,
    check_model,
)
from clstream.core.errors import ClstreamError, SpecError
from clstream.core.transcripts import note_calls
from clstream.core.types import GenerationRequest, GenerationResult, SamplingParams, Usage
from clstream.models.cache import ResponseCache
from clstream.models.pricing import cost_usd
from clstream.models.wire import build_body, count_usage

OnResult = Callable[[int, GenerationResult], None]
"""Told each result as soon as it is known: its index among the requests, and the result."""


@runtime_checkable
class CacheKeyed(Protocol):
    """A backend that keys its own cache entries (the body it sends, for a remote one)."""

    def cache_key(self, request: GenerationRequest) -> str: ...


@runtime_checkable
class ResultReporter(Protocol):
    """A backend that can report each result of a call as soon as it has it."""

    async def generate_each(self, requests: Sequence[GenerationRequest],
                            on_result: OnResult | None) -> list[GenerationResult]: ...


def model_identity(model: Model) -> dict[str, Any]:
    """What a generic cache key holds of a backend: its description, the cache setting left
    out, so a cache entry replays only for the same backend, weights and settings."""
    return {k: v for k, v in model.describe().items() if k != "cache"}


def request_key(backend: str, identity: Mapping[str, Any], request: GenerationRequest) -> str:
    """The cache key of ``request`` to a backend without its own (:class:`CacheKeyed`): the
    hash of the backend's identity and of the request as an OpenAI body would carry it (every
    sampling parameter, the per-request seed, tools), and the name of the request's adapter
    when it has one (its content-addressed name, not where its files lie; docs/parametric.md
    §3). A request without an adapter keeps the key it always had."""
    body = build_body(str(identity.get("name", backend)), request, {})
    if request.adapter is not None:
        body["adapter"] = request.adapter.name
    return ResponseCache.key(backend, {"backend_identity": dict(identity), **body})


def _labels(model: Model) -> tuple[str, str]:
    """The backend and model names a cache entry is filed under."""
    info = model.describe()
    backend = info.get("backend")
    target = info.get("target")
    return (backend if isinstance(backend, str) else model.name,
            target if isinstance(target, str) else model.name)


async def generate_cached(
    cache: ResponseCache,
    requests: Sequence[GenerationRequest],
    keys: Sequence[str],
    labels: tuple[str, str],
    send: Callable[[Sequence[GenerationRequest], OnResult], Any],
) -> list[GenerationResult]:
    """Answer ``requests`` from ``cache`` where it holds their ``keys``; ``send`` the others
    (awaitable list of results, calling its ``OnResult`` per result), storing each success."""
    results: list[GenerationResult | None] = [None] * len(requests)
    missed: list[int] = []
    for i, (request, key) in enumerate(zip(requests, keys, strict=True)):
        hit = cache.get(key)
        if hit is None:
            missed.append(i)
        else:
            results[i] = GenerationResult(key=request.key, samples=hit.samples, usage=hit.usage,
                                          cache_hit=True, stage=request.stage)
    if missed:
        stored: set[int] = set()

        def keep(j: int, result: GenerationResult) -> None:
            if result.ok and j not in stored:
                stored.add(j)
                cache.put(keys[missed[j]], labels[0], labels[1], result.samples, result.usage)

        fresh = await send([requests[i] for i in missed], keep)
        for j, result in enumerate(fresh):
            keep(j, result)
            results[missed[j]] = result
    return [r for r in results if r is not None]


@dataclass
class Accounting:
    """What a wrapped model answered, and the tokens of it: ``paid`` by the backend during
    this process, ``replayed`` from the response cache (what those answers cost when first
    paid for)."""

    requests: int = 0
    cache_hits: int = 0
    errors: int = 0
    counted: int = 0  # successful results whose usage the tokenizer counted
    paid: Usage = field(default_factory=Usage)
    replayed: Usage = field(default_factory=Usage)

    def add(self, result: GenerationResult) -> None:
        self.requests += 1
        if not result.ok:
            self.errors += 1
        elif result.cache_hit:
            self.cache_hits += 1
            self.replayed = self.replayed + result.usage
        else:
            self.paid = self.paid + result.usage

    def cost_usd(self, price: Mapping[str, float], include_cache_hits: bool = True) -> float:
        """Dollars at ``price`` (rates per million tokens, :func:`pricing.cost_usd`)."""
        usage = self.paid + self.replayed if include_cache_hits else self.paid
        return cost_usd(usage, price)


def _without_usage(result: GenerationResult) -> bool:
    u = result.usage
    return result.ok and not result.cache_hit and u.prompt_tokens == 0 \
        and u.completion_tokens == 0


class ModelMiddleware:
    """A model with a response cache and accounting around it (module docstring)."""

    def __init__(self, inner: Model, cache: ResponseCache | None = None):
        self.inner = inner
        self.cache = cache
        self.accounting = Accounting()
        self._keyed = isinstance(inner, CacheKeyed)
        self._labels = _labels(inner) if cache is not None else ("", "")
        self._identity = (model_identity(inner) if cache is not None and not self._keyed
                          else {})

    # -- the Model contract ------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def tokenizer(self) -> Tokenizer:
        return self.inner.tokenizer

    def describe(self) -> dict[str, Any]:
        info = self.inner.describe()
        if self.cache is not None:
            info["cache"] = str(self.cache.path)
        return info

    def __getattr__(self, name: str) -> Any:
        # What else the backend offers (transport figures, the server's facts): asked of it.
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"ModelMiddleware({self.inner!r}, cache={self.cache is not None})"

    def cache_key(self, request: GenerationRequest) -> str:
        if self._keyed:
            key: str = self.inner.cache_key(request)  # type: ignore[attr-defined]
            return key
        return request_key(self._labels[0], self._identity, request)

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        batch = list(requests)
        if self.cache is None:
            results = await self._send(batch, None)
        else:
            keys = [self.cache_key(r) for r in batch]
            results = await generate_cached(self.cache, batch, keys, self._labels, self._send)
        for result in results:
            self.accounting.add(result)
        note_calls(batch, results)
        return results

    async def _send(self, requests: Sequence[GenerationRequest],
                    on_result: OnResult | None) -> list[GenerationResult]:
        """The backend's results, usage counted where it reported none (before the cache
        stores them)."""
        counted: set[int] = set()

        def count(j: int, result: GenerationResult) -> None:
            if j not in counted and _without_usage(result):
                counted.add(j)
                usage = count_usage(requests[j], result.samples, self.tokenizer)
                usage.latency_s = result.usage.latency_s
                result.usage = usage
                self.accounting.counted += 1

        def report(j: int, result: GenerationResult) -> None:
            count(j, result)
            if on_result is not None:
                on_result(j, result)

        if isinstance(self.inner, ResultReporter):
            results = list(await self.inner.generate_each(requests, report))
        else:
            results = list(await self.inner.generate(requests))
        for j, result in enumerate(results):
            count(j, result)
        return results

    # -- optional parts, passed through ------------------------------------------------------

    def adapter_kinds(self) -> tuple[str, ...]:
        """The adapter kinds the backend serves (none where it declares none): explicit, as a
        runtime-checked protocol does not see attributes served by ``__getattr__``."""
        return adapter_kinds_of(self.inner)

    async def preflight(self, sampling: SamplingParams) -> list[str]:
        """The backend's endpoint check; with a response cache, a failed check is a note (the
        run may need no server at all), not the end of the run."""
        try:
            return await check_model(self.inner, sampling)
        except ClstreamError as exc:
            if self.cache is None:
                raise
            return [f"{exc}; going on with the response cache {self.cache.path} "
                    "(requests it does not hold will fail)"]

    async def __aenter__(self) -> ModelMiddleware:
        if isinstance(self.inner, AsyncResource):
            await self.inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(self.inner, AsyncResource):
            await self.inner.__aexit__(exc_type, exc, tb)


def wrap(model: Model, cache_path: str | Path | None = None,
         cache: ResponseCache | None = None) -> ModelMiddleware:
    """``model`` behind the response cache (given as an object or opened from
    ``cache_path``) and the accounting."""
    if cache is not None and cache_path is not None:
        raise SpecError("give either cache or cache_path, not both")
    return ModelMiddleware(model, ResponseCache(cache_path) if cache_path is not None
                           else cache)
