"""The two contracts everything else is built on (docs/design.md §3).

A :class:`System` is the thing under test: a memory method over a model. A :class:`Model`
turns requests into completions. Both are async because model calls are.

Optional parts, each its own small protocol, read by the runners only through the helpers at
the end of this module:

* :class:`BatchResponder` -- a system that answers several queries of one memory state in one
  call (:func:`respond_all`);
* :class:`RequestPlanner` -- a batch responder whose requests are built apart from sending
  them (:class:`PlannedBatch`), so a runner can build the requests of one memory state and
  observe the next event before the model answers;
* :class:`Replayable` -- a system whose memory a runner may rebuild by replaying the stream
  (:func:`is_replayable`);
* :class:`MultiTry` -- a system that may try a task more than once (:func:`max_tries`);
* :class:`PromptEstimator` -- a system that can bound its largest prompt over a document;
* :class:`AsyncResource` -- a model holding resources (a connection pool) for the span of an
  ``async with`` block (:func:`open_model`);
* :class:`Preflight` -- a model behind an endpoint that can check, in seconds, that a run can
  use it at all (:func:`check_model`);
* :class:`Finalizing` -- a system that builds its memory once, after the whole corpus
  (a chunked summary, a memory scaffold, a training run), in :func:`finalize`;
* :class:`Supervised` -- a system that says which supervision it consumes (the corpus C, the
  training pairs Q, or both; :func:`supervision_of`);
* :class:`ArtifactProducer` -- a system whose memory is a model artifact on disk (weights, an
  adapter) that it answers with; the runner records the artifact's content hash
  (:func:`artifact_of`);
* :class:`ArtifactKeeper` -- a system that stores what it makes (trained weights) in the
  folder the driver gives it, ``<results>/artifacts`` (:func:`give_artifact_folder`);
* :class:`AdapterServer` -- a model that can answer a request with trained weights attached
  (a request's ``adapter``): which kinds of artifact it serves (:func:`adapter_kinds_of`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from clstream.core.events import Event
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Query,
    Response,
    SamplingParams,
)


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens. ``exact`` is False for the offline approximation."""

    # Read-only properties: a plain or class attribute of the same type satisfies them.
    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count(self, text: str) -> int: ...

    def truncate_left(self, text: str, budget: int) -> str:
        """Keep the last ``budget`` tokens' worth of text."""
        ...


@runtime_checkable
class Model(Protocol):
    """Async, batched generation with n samples and usage on every result."""

    @property
    def name(self) -> str: ...

    @property
    def tokenizer(self) -> Tokenizer:
        """Counts tokens as this model does (any :class:`Tokenizer`)."""
        ...

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, same order. A failed request yields ``error``, not a guess."""
        ...

    def describe(self) -> dict[str, Any]:
        """What a run records about the model (backend, name, version, baseline label)."""
        ...


@runtime_checkable
class System(Protocol):
    """A memory method under test.

    ``respond`` must leave long-term memory unchanged (a probe is not an update).
    ``snapshot``/``restore`` carry the whole memory as JSON-serializable data, used for resuming,
    re-evaluation under later memory, and showing memory in reports.
    """

    @property
    def name(self) -> str:
        """The method's name (usually a class attribute)."""
        ...

    async def reset(self) -> None: ...

    async def observe(self, event: Event) -> list[GenerationResult]:
        """Take in an event; returns the model calls made while updating memory (maybe none)."""
        ...

    async def respond(self, query: Query) -> Response: ...

    def snapshot(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...

    def describe(self) -> dict[str, Any]: ...


# --- optional parts ------------------------------------------------------------------------


@runtime_checkable
class BatchResponder(Protocol):
    """A system that answers several queries of one memory state together."""

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """One response per query, same order; memory is left unchanged."""
        ...


@dataclass(frozen=True)
class PlannedBatch:
    """The requests of some queries under one memory state, built before any is sent, with
    the seconds spent choosing each one's passages."""

    queries: tuple[Query, ...]
    requests: tuple[GenerationRequest, ...]
    retrieve_s: tuple[float, ...]


@runtime_checkable
class RequestPlanner(Protocol):
    """A batch responder whose requests are built apart from sending them: the requests
    depend only on the memory held when :meth:`plan_batch` runs, and
    :meth:`complete_batch` reads nothing from memory."""

    def plan_batch(self, queries: Sequence[Query]) -> PlannedBatch: ...

    def complete_batch(
        self, planned: PlannedBatch, results: Sequence[GenerationResult], generate_s: float
    ) -> list[Response]: ...


@runtime_checkable
class Replayable(Protocol):
    """A system that says whether its memory may be rebuilt by replaying the stream.

    True means memory is a pure function of the events observed and observing calls no model,
    so a runner may replay the events instead of storing a snapshot per step.
    """

    @property
    def replayable(self) -> bool: ...


@runtime_checkable
class MultiTry(Protocol):
    """A system that may attempt a task up to ``max_tries`` times (respond, evaluate, retry)."""

    @property
    def max_tries(self) -> int: ...


@runtime_checkable
class PromptEstimator(Protocol):
    """A system that can bound the prompt tokens its probes use over one document."""

    def max_prompt_tokens(self, blocks: Sequence[int], fixed: int, tokenizer: Tokenizer) -> int:
        """The largest prompt, given each chunk's passage-block tokens and the fixed part."""
        ...


@runtime_checkable
class AsyncResource(Protocol):
    """A model that holds resources (e.g. a connection pool) while inside ``async with``."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...


@runtime_checkable
class Preflight(Protocol):
    """A model that can check its endpoint before a long run (reachable, serving this model,
    accepting these sampling parameters)."""

    async def preflight(self, sampling: SamplingParams) -> list[str]:
        """Raise a one-line :class:`~clstream.core.errors.ClstreamError` when a run cannot work
        (quoting the server's reason); return notes worth showing when it probably can."""
        ...


@runtime_checkable
class Finalizing(Protocol):
    """A system that builds its memory once the corpus is complete (ImprintBench, docs/imprint.md §2:
    chunked summaries, memory scaffolds and training runs are built after ingestion)."""

    async def finalize(self) -> list[GenerationResult]:
        """Build memory from what was observed; returns the model calls made (maybe none)."""
        ...


@runtime_checkable
class Supervised(Protocol):
    """A system that declares the supervision it can consume (docs/imprint.md §2: ``"C"`` the corpus,
    ``"Q"`` the training QA pairs, ``"C+Q"`` both). Systems without the declaration take any:
    a memory keeps a training pair as it keeps any other document; a method that needs one
    kind (a recipe defined on QA pairs) declares it."""

    @property
    def supervisions(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Artifact:
    """A model artifact a method produced (a checkpoint or adapter directory, or one file),
    with what made it (method, base model, supervision, hyperparameters)."""

    path: str
    kind: str
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class ArtifactProducer(Protocol):
    """A system whose memory is an artifact on disk; None until it has made one."""

    @property
    def artifact(self) -> Artifact | None: ...


@runtime_checkable
class ArtifactKeeper(Protocol):
    """A system that keeps artifacts (trained weights) in a folder it is given, beside the
    results they belong to (docs/parametric.md §4)."""

    def keep_artifacts_in(self, directory: str | Path) -> None: ...


def give_artifact_folder(system: System, directory: str | Path) -> System:
    """Tell ``system`` where to keep its artifacts when it is an :class:`ArtifactKeeper`."""
    if isinstance(system, ArtifactKeeper):
        system.keep_artifacts_in(directory)
    return system


@runtime_checkable
class AdapterServer(Protocol):
    """A model that answers requests carrying an ``adapter`` with those weights attached
    (docs/parametric.md §3: ``hf:`` loads it, ``vllm:`` passes a LoRA request, an
    OpenAI-compatible server loads it by name)."""

    def adapter_kinds(self) -> tuple[str, ...]:
        """The :class:`~clstream.core.types.Adapter` kinds served (``"lora"``, ``"full"``)."""
        ...


def adapter_kinds_of(model: Model) -> tuple[str, ...]:
    """The adapter kinds ``model`` serves; none for a model that is no :class:`AdapterServer`."""
    if isinstance(model, AdapterServer):
        return tuple(model.adapter_kinds())
    return ()


async def finalize_system(system: System) -> list[GenerationResult]:
    """Run ``system``'s :class:`Finalizing` step when it has one (else nothing to do)."""
    if isinstance(system, Finalizing):
        return list(await system.finalize())
    return []


def supervision_of(system: System) -> tuple[str, ...]:
    """The supervisions ``system`` consumes (default: all three)."""
    if isinstance(system, Supervised):
        return tuple(system.supervisions)
    return ("C", "Q", "C+Q")


def artifact_of(system: System) -> Artifact | None:
    """The artifact ``system`` answers with, when it is an :class:`ArtifactProducer`."""
    if isinstance(system, ArtifactProducer):
        return system.artifact
    return None


async def respond_all(system: System, queries: Sequence[Query]) -> list[Response]:
    """Ask several queries of one memory state, in one call when the system is a
    :class:`BatchResponder`, else one query after another."""
    if isinstance(system, BatchResponder):
        return list(await system.respond_batch(queries))
    return [await system.respond(q) for q in queries]


def is_replayable(system: System) -> bool:
    """Whether a runner may rebuild ``system``'s memory by replaying the stream (default no)."""
    return isinstance(system, Replayable) and bool(system.replayable)


def max_tries(system: System) -> int:
    """How many attempts ``system`` makes at a task: its ``max_tries``, at least 1 (default 1)."""
    if isinstance(system, MultiTry):
        return max(1, int(system.max_tries or 1))
    return 1


async def check_model(model: Model, sampling: SamplingParams) -> list[str]:
    """Run ``model``'s :class:`Preflight` check when it has one (else nothing to check)."""
    if isinstance(model, Preflight):
        return list(await model.preflight(sampling))
    return []


@asynccontextmanager
async def open_model(model: Model | None) -> AsyncIterator[None]:
    """Hold ``model``'s resources for the block when it is an :class:`AsyncResource`."""
    if isinstance(model, AsyncResource):
        async with model:
            yield
    else:
        yield
