"""What every memory method shares, written once for the four families (docs/design.md
§3.1: one System contract for everything under test): the context strategies
(:mod:`clstream.systems.context`), the experience memories (:mod:`clstream.systems.experience`
and the methods built on it), the conversation methods (:mod:`clstream.systems.conversation`)
and the in-context ImprintBench methods (:mod:`clstream.systems.oracle`).

* Construction: the model under test, the run's sampling parameters and seed, and the
  arguments checked against the method's declared ``params``; then :meth:`~MemorySystem.
  _configure` (settings derived from the arguments: a helper model, the search offered) and
  :meth:`~MemorySystem._empty` (the memory a fresh system holds, which ``reset`` returns to).
* ``describe``: the name and the arguments, then what a family records besides
  (:meth:`~MemorySystem._described`: prompt template hashes, supervisions, helper models).
* Seeded requests: every request's seed is derived from its key -- the query id, or a key
  naming the update -- so batch size and concurrency never change an answer (docs/design.md
  §8); :meth:`~MemorySystem._seeded_request`.
* Sending: one ``generate`` call per batch with its result count checked
  (:meth:`~MemorySystem._generate`), results tagged with the stage they belong to
  (:func:`staged`), and ``respond`` as a batch of one.
* Snapshots: one error shape naming the field that is wrong (:func:`snapshot_error`), and the
  ``{"method": name, "memory": ...}`` envelope the experience and conversation families store
  (:meth:`~MemorySystem._enveloped` / :meth:`~MemorySystem._opened`). The other families keep
  their own top-level fields, so stored snapshots read as they always did.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from clstream.core.contracts import Model
from clstream.core.errors import DataError
from clstream.core.params import Param, check_args
from clstream.core.specs import derive_seed
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Message,
    Query,
    Response,
    SamplingParams,
)

SNAPSHOT = "<snapshot>"  # the "file" a snapshot error names


def snapshot_error(field: str, problem: str) -> DataError:
    """The error of a snapshot whose ``field`` is not what the method stores."""
    return DataError(SNAPSHOT, None, field, problem)


def snapshot_list(state: Any, field: str, what: str) -> list[Any]:
    """``state[field]`` when ``state`` is an object holding a list there, else the error
    saying it should hold a list of ``what``."""
    items = state.get(field) if isinstance(state, dict) else None
    if not isinstance(items, list):
        raise snapshot_error(field, f"expected a list of {what}")
    return items


def reply_text(result: GenerationResult) -> str:
    """The first sample's text ('' for a failed call or one with no sample)."""
    return result.samples[0].text if result.ok and result.samples else ""


def staged(result: GenerationResult, stage: str) -> GenerationResult:
    """``result`` tagged with ``stage`` (a backend may not copy it from the request)."""
    return result if result.stage == stage else result.model_copy(update={"stage": stage})


class MemorySystem(ABC):
    """The shared part of every memory method (see the module docstring). A subclass sets
    ``name``, ``summary`` and ``params``, implements :meth:`_empty` and the rest of the
    :class:`~clstream.core.contracts.System` contract, and ``respond_batch`` unless it
    answers one query at a time (then ``respond``)."""

    name: ClassVar[str]
    summary: ClassVar[str]
    params: ClassVar[dict[str, Param]] = {}

    def __init__(self, model: Model, sampling: SamplingParams | None = None, seed: int = 0,
                 **args: Any):
        self.model = model
        self.sampling = sampling if sampling is not None else SamplingParams()
        self.seed = seed
        self.args = self._checked(args)
        self._configure()
        self._empty()

    def _checked(self, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments with defaults filled in, each checked against ``params``."""
        return check_args(f"system {self.name!r}", self.params, args)

    def _configure(self) -> None:
        """Settings derived from the arguments, made once before memory is first emptied."""
        return None

    @abstractmethod
    def _empty(self) -> None:
        """Hold the memory a fresh system starts with (at construction and on reset)."""

    async def reset(self) -> None:
        self._empty()

    # --- describe ------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "args": self._described_args(), **self._described()}

    def _described_args(self) -> dict[str, Any]:
        """The arguments a run records (all of them unless a method says otherwise)."""
        return dict(self.args)

    def _described(self) -> dict[str, Any]:
        """What the method records besides its name and arguments."""
        return {}

    # --- requests --------------------------------------------------------------------------

    def _seeded(self, key: str, **update: Any) -> SamplingParams:
        """The run's sampling parameters changed by ``update``, seeded from ``key``."""
        return self.sampling.model_copy(update={**update, "seed": derive_seed(self.seed, key)})

    def _seeded_request(self, key: str, messages: tuple[Message, ...], *,
                        stage: str | None = None, tools: tuple[dict[str, Any], ...] = (),
                        **update: Any) -> GenerationRequest:
        """A request keyed ``key`` with its own seed (sampling changed by ``update``)."""
        extra: dict[str, Any] = {}
        if stage is not None:
            extra["stage"] = stage
        if tools:
            extra["tools"] = tools
        return GenerationRequest(key=key, messages=messages, params=self._seeded(key, **update),
                                 **extra)

    async def _generate(self, requests: Sequence[GenerationRequest],
                        model: Model | None = None) -> list[GenerationResult]:
        """The results of ``requests`` from one ``generate`` call of ``model`` (the system's
        own by default), one per request."""
        model = model if model is not None else self.model
        results = await model.generate(list(requests))
        self._check_count(results, len(requests), model)
        return results

    def _check_count(self, results: Sequence[GenerationResult], wanted: int,
                     model: Model | None = None) -> None:
        if len(results) != wanted:
            name = (model if model is not None else self.model).name
            raise RuntimeError(f"model {name!r} returned {len(results)} results for {wanted} "
                               "requests")

    async def _call(self, key: str, messages: tuple[Message, ...], stage: str,
                    timings: dict[str, float] | None = None) -> GenerationResult:
        """One seeded call of the system's model tagged ``stage``, its wall time added to
        ``timings[stage]`` when timings are kept."""
        request = self._seeded_request(key, messages, stage=stage)
        with self._timed(timings, stage):
            (result,) = await self.model.generate([request])
        return staged(result, stage)

    @staticmethod
    @contextmanager
    def _timed(timings: dict[str, float] | None, stage: str) -> Iterator[None]:
        """Add the block's wall time to ``timings[stage]`` (nothing when ``timings`` is None)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            if timings is not None:
                timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start

    # --- answering ---------------------------------------------------------------------------

    async def respond(self, query: Query) -> Response:
        return (await self.respond_batch([query]))[0]

    @abstractmethod
    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """One response per query under the memory held now; memory is left unchanged."""

    # --- snapshots ---------------------------------------------------------------------------

    def _enveloped(self, memory: dict[str, Any]) -> dict[str, Any]:
        """A snapshot naming the method it belongs to."""
        return {"method": self.name, "memory": memory}

    def _opened(self, state: Any) -> dict[str, Any]:
        """The memory of an enveloped snapshot, checked to be this method's."""
        if not isinstance(state, dict) or not isinstance(state.get("memory"), dict):
            raise snapshot_error("memory", "expected an object holding the memory")
        if state.get("method") != self.name:
            raise snapshot_error("method", f"snapshot of {state.get('method')!r}, "
                                           f"this system is {self.name!r}")
        memory: dict[str, Any] = state["memory"]
        return memory
