"""Value types passed between protocols, systems and models.

Requests carry a stable ``key`` (their identity in the run) so that decoding seeds and cache
keys derive from *what* is asked, never from batch position or arrival order (docs/design.md §8,
results must not change with batch size or concurrency).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]


class SamplingParams(BaseModel):
    """Decoding parameters, sent on the wire by real backends.

    Defaults follow the OAKS paper's setup (temperature 0.7, top-p 0.8, top-k 20, min-p 0).
    Every number is finite, so no spec records ``inf`` or ``nan`` (the command line further
    bounds temperature to 0..2, what OpenAI-compatible servers accept).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(0.7, ge=0.0, allow_inf_nan=False)
    top_p: float = Field(0.8, gt=0.0, le=1.0, allow_inf_nan=False)
    top_k: int = Field(20, ge=-1, le=1_000_000)
    min_p: float = Field(0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    max_tokens: int = Field(4096, ge=1, le=10_000_000)
    n: int = Field(1, ge=1, le=1_024)
    seed: int | None = None
    stop: tuple[str, ...] = ()
    thinking: bool | None = None


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


class Adapter(BaseModel):
    """Trained weights a request is answered with instead of the base model's own
    (docs/parametric.md §3): a LoRA adapter directory (peft's layout) or a whole fine-tuned
    checkpoint directory. ``name`` is content-addressed (``clstream-<sha256 prefix>``), so
    it is what caches and servers key on; ``path`` is only where the files lie."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    path: str
    kind: Literal["lora", "full"] = "lora"


class GenerationRequest(BaseModel):
    """One prompt to a model. ``key`` identifies it within a run (e.g. ``doc/q3/t12``).

    ``tools`` are function tools in the OpenAI chat format (``{"type": "function",
    "function": {"name", "description", "parameters"}}``) the model may call instead of
    answering; only backends that declare ``describe()["tools"] = True`` send them. Left empty
    (the default) a request is what it was before tools existed: same body, same cache key.
    ``adapter`` names trained weights to answer with (a parametric method's); None (the
    default) is the base model, and leaves bodies and cache keys as they were.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    messages: tuple[Message, ...]
    params: SamplingParams = SamplingParams()
    stage: str = "generate"
    tools: tuple[dict[str, Any], ...] = ()
    adapter: Adapter | None = None

    @property
    def prompt_text(self) -> str:
        return "\n\n".join(m.content for m in self.messages)


class Usage(BaseModel):
    """Token usage of one request (all its samples) and its latency."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        # Sums of validated fields need no validation again (accounting adds one per call).
        return Usage.model_construct(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            latency_s=self.latency_s + other.latency_s,
        )


class Sample(BaseModel):
    """One sampled completion: answer text kept apart from any reasoning text.

    ``tool_calls`` are the calls the model made instead of (or besides) answering, each
    ``{"id", "name", "arguments"}`` with ``arguments`` the JSON text as the model wrote it
    (parsing it is the caller's business: a model may write invalid JSON).
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    reasoning: str = ""
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


class GenerationResult(BaseModel):
    """The outcome of one request: n samples, or an error (never a fake answer)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    samples: list[Sample] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    cache_hit: bool = False
    stage: str = "generate"
    # Seconds to the first token of a streamed answer (to the whole answer when the server
    # does not stream); None where the backend does not measure it.
    first_token_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Query:
    """Something a protocol asks a system: a question, a task or an environment query.

    The protocol owns the asking, the system owns memory (docs/design.md §1):
    ``instructions`` are the protocol's rules, sent as the system message, and ``prompt`` is
    the protocol's rendered question block (question, lettered options, answer format), sent
    last in the user message after whatever memory the system shows. ``text`` stays the bare
    question, which systems use to search their memory. Left empty, both fall back to the
    generic rendering of :mod:`clstream.core.layout`.
    """

    id: str
    text: str
    options: tuple[str, ...] = ()
    kind: str = "open"  # "open" | "mc" | protocol-specific
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    instructions: str = ""
    prompt: str = ""


@dataclass
class Response:
    """A system's answer to a query, with the model calls that produced it."""

    query_id: str
    results: list[GenerationResult]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The first sample of the last call (the answering call), or '' on error."""
        last = self.results[-1] if self.results else None
        return last.samples[0].text if last and last.ok and last.samples else ""

    @property
    def error(self) -> str | None:
        for r in self.results:
            if r.error:
                return r.error
        return None

    @property
    def usage(self) -> Usage:
        total = Usage()
        for r in self.results:
            total = total + r.usage
        return total
