"""The planning model: a stand-in for a run's model that never calls it (docs/plan.md §2).

``clstream plan`` runs the real run, control flow and all, with this model in place of the
one ``--model`` names. Every request is answered with the reply of the builtin offline reader
(:mod:`clstream.models.builtin`), so a protocol whose next request depends on the last answer
(an episode, a retry, a memory update conditional on a reply) proceeds as it would with a
model that answers like the builtin one. Every request is recorded, in the order the run hands
it to the model (the order the OpenAI-compatible transport admits requests in), with:

* its prompt as the named model's server would tokenize it (:class:`ChatTokens`): with a
  local Hugging Face tokenizer, the token ids of its chat template applied to the messages
  (the plain message texts where it has no template); otherwise the approximate tokenizer's
  pieces of each message plus :data:`APPROX_TOKENS_PER_MESSAGE` marker tokens for the
  template's role and delimiters; the builtin model counts message texts only, as it does;
* the most completion tokens it may cost (``max_tokens`` x ``n``) and the completion tokens of
  the builtin reply (``n`` x its count), the figure a model answering like it would cost.

Reading a prompt as the builtin reader does costs as much as the run's own model call, most of
a plan's CPU. Where a run's requests do not depend on the replies (the dry run says so,
:attr:`RequestLog.sample`), only an evenly spread, bounded sample of requests is read
(:class:`ReplySample`); the others get an empty reply, and their completion tokens are the
sample's mean (:func:`clstream.models.plan_costs.figures`).

Where a run need not be run at all (:mod:`clstream.driver.dry_run` walks it), its requests
come as prompt parts (:mod:`clstream.models.prompt_parts`): :meth:`PlanningModel.record_parts`
records them the same way, each prompt counted from its parts
(:meth:`ChatTokens.blocked_parts`) and only a sample of them built and read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from clstream.core.contracts import Tokenizer
from clstream.core.types import GenerationRequest, GenerationResult, Message, Sample, Usage
from clstream.models.builtin import BuiltinReader
from clstream.models.prefix_cache_sim import (
    START,
    BlockedPrompt,
    BlockHasher,
    TemplateMarker,
    TextState,
    approx_tokens,
    block_hashes,
    message_ended,
)
from clstream.models.prompt_parts import PromptParts, Section, user_runs
from clstream.models.tokenizers import HFTokenizer, approx_tokenizer

BLOCK_SIZE = 16
"""Tokens per cached block of the simulated prefix cache (vLLM's default)."""
APPROX_TOKENS_PER_MESSAGE = 3
"""Tokens a chat template adds per message (role and delimiters) where the model's own template
is not at hand: the usual figure for chat formats of the ChatML family."""


_EMPTY = Sample(text="", finish_reason="stop")
"""The reply to a request outside a run's sample of replies (:class:`ReplySample`)."""


@dataclass(frozen=True)
class PlannedRequest:
    """One request of a planned run, as the run would send it."""

    model: str
    stage: str
    prompt: tuple[Hashable, ...] | BlockedPrompt
    max_completion_tokens: int
    expected_completion_tokens: int | None
    """The builtin reply's completion tokens; None where the reply was not read (a sampled
    run's request outside the sample)."""

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt)


class ReplySample:
    """Which requests of a run get the builtin reader's reply: every ``stride``-th, the stride
    set so that the ``expected`` requests of the run give at most ``most`` replies, and
    doubling (the sample thinned to it) whenever more than ``most`` are held, so a run longer
    than expected still keeps at most ``most`` replies spread evenly over it."""

    def __init__(self, expected: int, most: int = 128):
        if most < 2:
            raise ValueError(f"a reply sample of at least 2, got {most}")
        self.most = most
        self.stride = max(1, -(-expected // most))
        self.seen = 0
        self.taken: list[int] = []  # log positions of the requests read

    def take(self) -> bool:
        """Whether the next request of the run is read."""
        taken = self.seen % self.stride == 0
        self.seen += 1
        return taken

    def keep(self, position: int, log: RequestLog) -> None:
        """The request read was logged at ``position``; thin the sample when it overflows."""
        self.taken.append(position)
        if len(self.taken) <= self.most:
            return
        self.stride *= 2
        kept = self.taken[::2]  # the requests at multiples of the new stride
        for dropped in self.taken[1::2]:
            log.requests[dropped] = replace(log.requests[dropped],
                                            expected_completion_tokens=None)
        self.taken = kept


GOLDEN = (5 ** 0.5 - 1) / 2
"""The golden ratio's fractional part: its multiples modulo 1 fill [0, 1) most evenly."""


def spread_sample(n: int, most: int) -> list[int]:
    """At most ``most`` of the positions 0..n-1, spread over them without a period: the j-th
    at the fraction (0.5 + j x :data:`GOLDEN`) mod 1 of the way. A run walked in stream order
    repeats the same questions at every interval, so every k-th request (a stride) may keep
    landing on the same few questions; these positions fall on every part of the run and on
    no fixed cycle of it."""
    if n <= most:
        return list(range(n))
    return sorted({int((0.5 + j * GOLDEN) % 1.0 * n) for j in range(most)})


@dataclass
class RequestLog:
    """Every request of a plan, in send order, whichever planning model got it; ``sample``,
    while set, says that the requests now sent do not depend on the replies, so only a sample
    of them is read (:class:`ReplySample`)."""

    requests: list[PlannedRequest] = field(default_factory=list)
    sample: ReplySample | None = None


Counted = tuple[tuple[tuple[int, ...], ...], int, TextState]
"""Runs of block hashes, their token count, and the hash state after them."""


class ChatTokens:
    """A prompt's tokens as the named model's server counts them (module docstring)."""

    def __init__(self, tokenizer: Tokenizer, overhead_per_message: int = 0):
        self.tokenizer = tokenizer
        self.overhead_per_message = overhead_per_message
        self.templated = isinstance(tokenizer, HFTokenizer) and tokenizer.has_chat_template
        self._hasher = BlockHasher(BLOCK_SIZE)
        self._last_head: dict[int, tuple[TextState, str, Counted]] = {}
        self._last_section: tuple[Section, TextState, Counted] | None = None
        self._last_opening: tuple[str, Counted] | None = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.tokenizer.name, "exact": self.tokenizer.exact,
                "chat_template": "the model's own" if self.templated
                else f"{self.overhead_per_message} tokens per message"
                if self.overhead_per_message else "none"}

    def __call__(self, messages: Sequence[Message]) -> tuple[Hashable, ...]:
        if isinstance(self.tokenizer, HFTokenizer):
            return tuple(self.tokenizer.chat_ids(messages))
        out: list[Hashable] = []
        for message in messages:
            if self.overhead_per_message:
                out += self._marker(message.role)
            out += approx_tokens(message.content)
        return tuple(out)

    def blocked(self, messages: Sequence[Message]) -> BlockedPrompt:
        """The prompt of :meth:`__call__` as the prefix cache sees it, in blocks of
        :data:`BLOCK_SIZE`, without keeping its tokens.

        A run's prompts repeat long contexts (every question of an OAKS interval after the same
        passages), so keeping each prompt's tokens made a plan's memory and time grow with the
        square of the stream. A message's text is cut at its last paragraph break: the head
        (the context) is cut into blocks and hashed once per state it follows
        (:class:`~clstream.models.prefix_cache_sim.BlockHasher`), the rest (the question)
        each time. The cut falls on whitespace, so the tokens are those of the whole text.
        """
        if isinstance(self.tokenizer, HFTokenizer):
            ids = self.tokenizer.chat_ids(messages)
            blocks = tuple(block_hashes(ids, BLOCK_SIZE))
            return BlockedPrompt((blocks,) if blocks else (), len(ids))
        state = START
        pieces: list[tuple[int, ...]] = []
        count = 0
        for position, message in enumerate(messages):
            if self.overhead_per_message:
                blocks, state = self._hasher.fold(state, self._marker(message.role))
                pieces.append(blocks)
                count += self.overhead_per_message
            text = message.content
            cut = text.rfind("\n\n")
            if cut > 0:
                runs, n, state = self._head(position, state, text, cut)
                pieces += runs
                count += n
            blocks, n, state = self._hasher.segment(state, text[cut:] if cut > 0 else text)
            pieces.append(blocks)
            count += n
            state = message_ended(state)
        return BlockedPrompt(tuple(p for p in pieces if p), count)

    def _marker(self, role: str) -> list[TemplateMarker]:
        """The template tokens a message opens with (:data:`APPROX_TOKENS_PER_MESSAGE`)."""
        return [TemplateMarker(f"<|{role}|>"),
                *[TemplateMarker("<|sep|>")] * (self.overhead_per_message - 1)]

    @property
    def counts_parts(self) -> bool:
        """Whether :meth:`blocked_parts` can count a prompt from its parts: with the
        approximate count each message's text is tokenized apart, and a text cut at whitespace
        is the tokens of its pieces; a chat template is applied to whole messages."""
        return not isinstance(self.tokenizer, HFTokenizer)

    def blocked_parts(self, parts: PromptParts) -> BlockedPrompt:
        """:meth:`blocked` of :func:`~clstream.models.prompt_parts.messages_of` ``(parts)``,
        without building the messages (docs/plan.md §2; only where :attr:`counts_parts`).

        Each segment (the instructions, a section's header and passages, the query block) is
        cut and hashed once per state it follows (:meth:`BlockHasher.segment`), and a section
        object met again right after the same state (the context every question of an
        interval shows) is not walked again: its blocks are kept (:attr:`_last_section`), so
        a question costs its own tokens, not its context's. A segment's blocks stay the tuple
        the hasher keeps, not copied into the prompt's: a context shared by many prompts is
        held once."""
        opening, count, state = self._opening(parts.instructions)
        pieces = list(opening)
        last = self._last_section
        for section, segments in user_runs(parts):
            if section is not None and last is not None and last[0] is section \
                    and last[1] == state:
                runs, n, state = last[2]
            else:
                begin = state
                runs, n, state = self._segments(state, segments)
                if section is not None:
                    self._last_section = last = (section, begin, (runs, n, state))
            pieces += runs
            count += n
        return BlockedPrompt(tuple(pieces), count)

    def _opening(self, instructions: str) -> Counted:
        """The blocks, token count and state of what every prompt with these instructions
        opens with: the system message and the user message's template tokens (kept for
        the last instructions met: a run has one)."""
        last = self._last_opening
        if last is not None and last[0] == instructions:
            return last[1]
        pieces: list[tuple[int, ...]] = []
        count = 0
        state = START
        for role, text in (("system", instructions), ("user", "")):
            if self.overhead_per_message:
                blocks, state = self._hasher.fold(state, self._marker(role))
                pieces.append(blocks)
                count += self.overhead_per_message
            if text:
                runs, n, state = self._segments(state, (text,))
                pieces += runs
                count += n
                state = message_ended(state)
        found = (tuple(p for p in pieces if p), count, state)
        self._last_opening = (instructions, found)
        return found

    def _segments(self, state: TextState, segments: Sequence[str]) -> Counted:
        """The blocks of ``segments`` one after another after ``state`` (:meth:`_texts`). A
        segment that does not end with whitespace is joined to the next (a word may go on
        across them)."""
        texts: list[str] = []
        pending = ""
        for segment in segments:
            pending += segment
            if pending and pending[-1].isspace():
                texts.append(pending)
                pending = ""
        if pending:
            texts.append(pending)
        return self._texts(state, texts)

    def _texts(self, state: TextState, texts: Sequence[str]) -> Counted:
        """The blocks of ``texts`` one after another after ``state``, as the runs the hasher
        keeps (empty ones left out), their token count, and the state after them."""
        runs: list[tuple[int, ...]] = []
        count = 0
        for text in texts:
            blocks, n, state = self._hasher.segment(state, text)
            if blocks:
                runs.append(blocks)
            count += n
        return tuple(runs), count, state

    def _head(self, position: int, state: TextState, text: str, cut: int) -> Counted:
        """The blocks of ``text[:cut]`` (message ``position``'s head) after ``state``. The
        prompts of one memory state come one after another and share their context, so the
        last head of each message position is kept and compared in place (a prefix
        comparison), not cut out of each prompt and hashed for the memo: that copy and hash
        grew with the context, for every question."""
        last = self._last_head.get(position)
        if last is not None and last[0] == state and len(last[1]) == cut \
                and text.startswith(last[1]):
            return last[2]
        head = text[:cut]
        found = self._texts(state, _paragraph_runs(head))
        self._last_head[position] = (state, head, found)
        return found


PARAGRAPH_RUN = 2048
"""Characters a context is cut into runs of at least (at paragraph breaks), each hashed once
per state it follows (:func:`_paragraph_runs`)."""


def _paragraph_runs(text: str) -> list[str]:
    """``text`` cut before paragraph breaks into runs of at least :data:`PARAGRAPH_RUN`
    characters (the last may be shorter), from the start, so two contexts with the same
    beginning are cut the same way there: the next interval's context (the same passages and
    one more) is then looked up run by run, and only its new passage is tokenized and hashed.
    Every cut falls on whitespace, so the runs' tokens are those of the whole text."""
    runs, start = [], 0
    while True:
        cut = text.find("\n\n", start + PARAGRAPH_RUN)
        if cut < 0:
            runs.append(text[start:])
            return runs
        runs.append(text[start:cut])
        start = cut


class PlanningModel:
    """Answers as the builtin reader does, counts as ``tokens`` does, records into ``log``."""

    def __init__(self, name: str, tokens: ChatTokens, log: RequestLog,
                 info: dict[str, Any] | None = None):
        self.name = name
        self.tokens = tokens
        self.log = log
        self.tokenizer: Tokenizer = tokens.tokenizer
        self._reader = BuiltinReader()
        self._info = info or {}

    def describe(self) -> dict[str, Any]:
        return {"backend": "plan", "name": self.name, "tokenizer": self.tokenizer.name,
                **self._info}

    def adapter_kinds(self) -> tuple[str, ...]:
        """Any: a parametric method's answers are counted; its training is not run."""
        return ("lora", "full")

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        sample = self.log.sample
        read = [sample is None or sample.take() for _ in requests]
        plain = [r.model_copy(update={"adapter": None}) if r.adapter is not None else r
                 for r, wanted in zip(requests, read, strict=True) if wanted]
        answered = iter(await self._reader.generate(plain))
        results = []
        for request, wanted in zip(requests, read, strict=True):
            prompt = self.tokens.blocked(request.messages)
            n = request.params.n
            if wanted:
                result = next(answered)
                completion = self._completion_tokens(result, n)
            else:  # not read: an empty answer, counted by the sample's mean
                result = GenerationResult.model_construct(
                    key=request.key, stage=request.stage, samples=[_EMPTY] * n,
                    usage=Usage.model_construct(prompt_tokens=len(prompt)))
                self.log.requests.append(PlannedRequest(
                    self.name, request.stage, prompt, n * request.params.max_tokens, None))
                results.append(result)
                continue
            self.log.requests.append(PlannedRequest(
                self.name, request.stage, prompt, n * request.params.max_tokens, completion))
            if sample is not None:
                sample.keep(len(self.log.requests) - 1, self.log)
            usage = Usage(prompt_tokens=len(prompt), completion_tokens=completion)
            results.append(result.model_copy(update={"usage": usage}))
        return results

    def _completion_tokens(self, result: GenerationResult, n: int) -> int:
        """``n`` x the tokens of the builtin reply (the figure n samples like it would cost)."""
        return n * self.tokenizer.count(result.samples[0].text if result.samples else "")

    async def record_parts(self, parts: Sequence[PromptParts],
                           request_of: Callable[[PromptParts], GenerationRequest],
                           most: int) -> int:
        """Record a run's requests given as parts, in order, as :meth:`generate` records the
        requests it answers, without building them: each prompt is counted from its parts
        (:meth:`ChatTokens.blocked_parts`) and only a sample of at most ``most`` requests is
        built (``request_of``) and read as the builtin reader reads it
        (:func:`spread_sample`). For requests that cannot depend on the replies (docs/plan.md
        §2). Returns how many replies were read."""
        read = spread_sample(len(parts), most)
        replies = self._reader.reply_texts([request_of(parts[i]) for i in read])
        count = self.tokenizer.count
        completions = {i: parts[i].n * count(text) for i, text in zip(read, replies, strict=True)}
        blocked = self.tokens.blocked_parts
        self.log.requests.extend(
            PlannedRequest(self.name, p.stage, blocked(p), p.n * p.max_tokens,
                           completions.get(i)) for i, p in enumerate(parts))
        return len(read)


def planning_tokens(backend: str, target: str | None, tokenizer_dir: str | None
                    ) -> ChatTokens:
    """How the plan counts the prompts of model ``backend:target``: a local tokenizer
    (``tokenizer_dir``, else the path of an ``hf:``/``vllm:`` model), else the approximation
    with its per-message template tokens; the builtin model counts message texts."""
    path = tokenizer_dir or (target if backend in ("hf", "vllm") else None)
    if path:
        return ChatTokens(HFTokenizer(path))
    return ChatTokens(approx_tokenizer(),
                      0 if backend == "builtin" else APPROX_TOKENS_PER_MESSAGE)

