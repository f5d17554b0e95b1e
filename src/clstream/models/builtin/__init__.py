"""The builtin offline reader: a deterministic, labelled baseline model (docs/design.md §9).

It answers from the prompt text alone, read in the one prompt structure every system sends
(:mod:`clstream.core.layout`): memory first -- tagged passages, past-experience blocks -- then
the question block, with any lettered options. It never sees gold answers or how a stream was
generated, and it does not know which system or protocol wrote the prompt.
:mod:`clstream.models.builtin.reader` turns passages into ordered sentences and events; this
module reads the question and answers:

* where-questions: the latest move of the person (or of whoever last held the object);
  "where was A the last time B went to P", "where did A go after taking O", "where did A
  take O" step through the same events;
* who-questions: the current holder, the latest giver, the latest to travel P1 -> P2 directly;
* how-many questions: events matching the people, objects and places named, counted, or
  their distinct people / objects / places counted when the question says unique/different;
* comparisons ("A or B"): the same count for each side, the larger side or "Same";
* anything else: the sentence sharing most words with the question (latest on ties), and a
  short span from it; multiple choice takes the option the latest relevant sentence supports,
  or the "cannot answer" option when none is supported.

Passages from any memory -- chunks, documents, observations, kept texts -- feed the reader;
memory with no tagged passage is read as one passage. Experience comes first: when the prompt
shows past-task blocks and one asks the same thing as the current question, the reply reuses
the answer that block's feedback states as correct, or the answer it gave when its outcome was
correct (:mod:`clstream.models.builtin.recall`), formatted as the question block asks.
Prompts without such blocks take the reading path above unchanged.

Environment steps take another path. When the question block is an action block
(:func:`clstream.core.layout.action_block`) naming a task that has a builtin policy registered
(registry kind ``"policy"``, which the protocols owning environments fill; resolved on first
use), the reply is that policy's action as one
JSON object: the policy is given the steps the prompt shows -- step blocks in memory, in the
order of their passage tags, then the turns of a conversation transcript -- and the current
observation. A system that shows past steps therefore lets the policy learn; one that shows
none leaves it acting on the current observation alone. When that policy also keeps notes
(:class:`~clstream.core.environment.NoteTaker`), the prompts of the note-keeping methods --
their action prompts and update calls -- are answered from and with notes by those methods'
replies, which this model reaches, as every method's, through the registry (kind
``"builtin_reply"``; :mod:`clstream.models.builtin.tasks`), given its policy lookup. Other
prompts are read as above.

The open-question routines over events live in :mod:`clstream.models.builtin.answer`; this
module routes questions, does the lexical fallback and multiple choice, and is the Model.
The reply is one reasoning line then ``## Answer: ...`` so answer extraction is exercised
(a recalled program or multi-line reply is given as the record holds it).
Decoding parameters are accepted and ignored except ``max_tokens`` and ``stop``: the reader is
deterministic, so its n samples are identical texts. Reading a long context is cached by the
hash of the context text (a small LRU), so the questions of one interval read it once.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

from clstream.core import layout, registry
from clstream.core.environment import Policy, Turn
from clstream.core.errors import SpecError
from clstream.core.params import Param
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Message,
    Sample,
    SamplingParams,
    Usage,
)
from clstream.models.adapters import unserved_adapter
from clstream.models.builtin.answer import (
    GENERIC,
    STOP,
    UNKNOWN,
    Question,
    answer_compare,
    answer_count,
    answer_where,
    answer_who,
    read_question,
)
from clstream.models.builtin.claims import answer_statement, answer_yes_no, is_yes_no
from clstream.models.builtin.reader import (
    DETERMINERS,
    WORD_NUMBERS,
    ReadText,
    content_words,
    is_name,
    phrase_at,
    tokens_of,
)
from clstream.models.builtin.recall import recall_answer
from clstream.models.builtin.tasks import TaskFollower
from clstream.models.tokenizers import approx_tokenizer, longest_prefix

READER_VERSION = "builtin-reader-v2"
_CACHE_SIZE = 8  # read contexts kept; an interval's questions share one
_COMPARE = frozenset("more greater most fewer less larger often".split())
_SPAN_PREPS = frozenset(("to", "into", "in", "at", "inside", "from", "with", "on"))
_ABSTAIN = re.compile(
    r"cannot answer|can't answer|can not answer|not (?:yet )?answerable|"
    r"not enough information|^\s*n/?a\s*$|^\s*unknown\s*$",
    re.IGNORECASE,
)


def _anchor_sentences(read: ReadText, q: Question) -> tuple[list[int], frozenset[str]]:
    """Sentences sharing a name (else any content word) with the question, and those words."""
    words = frozenset(w for w in q.lower if w not in STOP and w not in GENERIC)
    names = frozenset(w for t, w in zip(q.tokens, q.lower, strict=True) if is_name(t)) & words
    table = read.postings()
    for anchors in (names, words):
        hits = sorted({n for w in anchors for n in table.get(w, ())})
        if hits:
            return hits, words
    return [], words


def answer_lexical(read: ReadText, q: Question) -> tuple[str, str]:
    hits, words = _anchor_sentences(read, q)
    if not hits:
        return "Nothing in the passages relates to the question.", UNKNOWN
    best = max(hits, key=lambda n: (len(words & read.words[n]), n))
    tokens = tokens_of(read.sentences[best])
    where = f"(chunk index {read.chunk_of[best]})"
    for i, tok in enumerate(tokens):
        if tok.lower() in _SPAN_PREPS:
            span, _ = phrase_at(tokens, i + 1, names=True)
            if span and not set(span.lower().split()) <= words:
                return f"Closest statement {where}: '{read.sentences[best]}'.", _short(span)
    for tok in tokens[1:]:
        if is_name(tok) and tok.lower() not in words:
            return f"Closest statement {where}: '{read.sentences[best]}'.", tok
    return f"Closest statement {where} names no answer.", UNKNOWN


def _short(span: str) -> str:
    return " ".join(span.split()[-2:])


def answer_open(read: ReadText, text: str) -> tuple[str, str]:
    q = read_question(read, text)
    head = q.lower[0] if q.lower else ""
    out = answer_statement(read, text)
    if out is not None:
        return out
    if q.has("or") and q.has(*_COMPARE):
        out = answer_compare(read, q)
    elif head == "how" and q.has("many"):
        out = answer_count(read, q)
    elif head == "where":
        out = answer_where(read, q)
    elif head == "who":
        out = answer_who(read, q)
    elif is_yes_no(text):
        out = answer_yes_no(read, text)
    return out if out is not None else answer_lexical(read, q)


def _number(text: str) -> int | None:
    words = content_words(text)
    for w in sorted(words):
        if w.isdigit():
            return int(w)
        if w in WORD_NUMBERS:
            return WORD_NUMBERS[w]
    return None


def _match_option(answer_text: str, options: list[str], abstain: int | None) -> int | None:
    value = _number(answer_text) if answer_text.strip().isdigit() else None
    want = content_words(answer_text) - DETERMINERS
    for i, option in enumerate(options):
        if i == abstain:
            continue
        if value is not None and _number(option) == value:
            return i
        have = content_words(option) - DETERMINERS
        if want and (have == want or (len(have) <= 3 and want <= have)):
            return i
    return None


def answer_choice(read: ReadText, text: str, options: list[str]) -> tuple[str, str]:
    letters = [chr(ord("A") + i) for i in range(len(options))]
    abstain = next((i for i, o in enumerate(options) if _ABSTAIN.search(o)), None)
    reason, found = answer_open(read, text)
    if found != UNKNOWN:
        pick = _match_option(found, options, abstain)
        if pick is not None:
            return f"{reason} That is option {letters[pick]}.", letters[pick]
    q = read_question(read, text)
    hits, qwords = _anchor_sentences(read, q)
    terms = [content_words(o) - STOP - qwords for o in options]
    for n in reversed(hits[-400:]):
        cover = [
            (len(t & read.words[n]) / len(t) if t and i != abstain else 0.0, -i)
            for i, t in enumerate(terms)
        ]
        score, neg = max(cover)
        if score >= 0.5:
            where = f"chunk index {read.chunk_of[n]}"
            return f"Latest supporting statement ({where}): '{read.sentences[n]}'.", letters[-neg]
    if abstain is not None:
        return "No option is supported by the passages yet.", letters[abstain]
    return "No option is supported; taking the first.", letters[0] if letters else UNKNOWN


def respond(read: ReadText, question: str, options: list[str]) -> tuple[str, str]:
    """(reasoning line, short answer) for a question over what was read."""
    if options:
        return answer_choice(read, question, options)
    return answer_open(read, question)


_RECALLED = "A past task shown above asks the same question; its record gives the answer."


def recalled_reply(answer: str, block: str) -> str:
    """A reply carrying an answer read from a past-task block, in the format the question
    block asks for: a fenced program, a ``\\boxed{}``
    answer, a multi-line reply kept as it was given, else ``## Answer: ...``."""
    if "```python" in block:
        code = answer if "```" in answer else f"```python\n{answer}\n```"
        return f"{_RECALLED}\n{code}"
    if "\\boxed{" in block and "\\boxed{" not in answer:
        return f"{_RECALLED}\n## Answer: \\boxed{{{answer}}}"
    if "\n" in answer:
        return f"{_RECALLED}\n{answer}"
    return f"{_RECALLED}\n## Answer: {answer}"


_BLOCK_START = re.compile(r"^(?=\[chunk index \d+\]$)", re.MULTILINE)


def shown_turns(memory: str, messages: Sequence[Message]) -> list[Turn]:
    """The environment steps a prompt shows, oldest first, as a policy's turns: step blocks of
    the memory ordered by the tag of the passage holding them (stable), then the steps of the
    conversation in ``messages``, then the steps already taken in the instance in progress
    (:func:`~clstream.core.layout.instance_steps_section`); a step shown twice counts once."""
    memory, current = layout.split_instance_steps(memory)
    blocks: list[tuple[int, int, layout.ShownStep]] = []
    for order, (index, text) in enumerate(layout.parse_passages(memory)):
        blocks += [(index, order, step) for step in layout.parse_steps(text)]
    blocks.sort(key=lambda b: (b[0], b[1]))
    steps = ([b[2] for b in blocks] + layout.transcript_steps(messages)
             + layout.parse_steps(current))
    seen: set[tuple[str, str, str]] = set()
    turns = []
    for step in steps:
        key = (step.observation, step.action, step.feedback)
        if key not in seen:
            seen.add(key)
            turns.append(Turn(step.observation, step.action, step.feedback))
    return turns


@lru_cache(maxsize=4096)
def _count_cached(text: str) -> int:
    return approx_tokenizer().count(text)


def _count_context(context: str) -> int:
    """Tokens of a context, counted per tagged block so that retrieved contexts sharing
    passages reuse counts; blocks start at a line start, so the parts add up exactly."""
    return sum(_count_cached(part) for part in _BLOCK_START.split(context))


class BuiltinReader:
    """A deterministic reader that answers prompts in the layout of :mod:`clstream.core.layout`
    with no network and no GPU."""

    summary: ClassVar[str] = "offline deterministic reader of the prompt text; a labelled baseline"
    params: ClassVar[dict[str, Param]] = {}
    name = "builtin"

    def __init__(self, target: str | None = None, **kwargs: Any):
        if kwargs:
            raise SpecError(f"model 'builtin': unknown argument(s) {', '.join(sorted(kwargs))}")
        if target:
            raise SpecError(f"model 'builtin' takes no model name or path, got {target!r}")
        self.tokenizer = approx_tokenizer()
        self._read_cache: OrderedDict[str, list[Any]] = OrderedDict()  # [read, count]
        self._policies: dict[str, Policy] = {}
        self._tasks = TaskFollower(self._policy)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "builtin",
            "name": self.name,
            "baseline": True,
            "version": READER_VERSION,
            "tokenizer": self.tokenizer.name,
            "deterministic": True,
        }

    def _read(self, context: str, counted: bool = True) -> tuple[ReadText, int]:
        """The read context and its token count (0 unless ``counted``), from the LRU when seen
        recently."""
        key = hashlib.sha256(context.encode("utf-8", "surrogatepass")).hexdigest()
        hit = self._read_cache.get(key)
        if hit is not None:
            self._read_cache.move_to_end(key)
            if counted and hit[1] is None:
                hit[1] = _count_context(context)
            return hit[0], hit[1] or 0
        entry: list[Any] = [ReadText(layout.parse_passages(context)),
                            _count_context(context) if counted else None]
        self._read_cache[key] = entry
        if len(self._read_cache) > _CACHE_SIZE:
            self._read_cache.popitem(last=False)
        return entry[0], entry[1] or 0

    def reply(self, request: GenerationRequest, counted: bool = True) -> tuple[str, int]:
        """The reply text for one request, and the prompt's token count (0 unless
        ``counted``: a plan counts prompts its own way, docs/plan.md §2)."""
        messages = request.messages
        text = "\n\n".join(m.content for m in messages if m.role != "system")
        context, block = layout.split_prompt(text)

        def tokens(context_tokens: int | None = None) -> int:
            if not counted:
                return 0
            # Counting the parts apart is exact for this tokenizer: they meet at whitespace.
            return (sum(_count_cached(m.content) for m in messages if m.role == "system")
                    + self.tokenizer.count(block)
                    + (_count_context(context) if context_tokens is None else context_tokens))

        followed = self._tasks.follow(messages)
        if followed is not None:
            return followed, tokens()
        acted = self._act(context, block, messages)
        if acted is not None:
            return acted, tokens()
        recalled = recall_answer(text)
        if recalled is not None:
            return recalled_reply(recalled, block), tokens()
        read, context_tokens = self._read(context, counted)
        question, options = layout.parse_question(block)
        reason, answer = respond(read, question, options)
        return f"{reason}\n## Answer: {answer}", tokens(context_tokens)

    def reply_texts(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """The text of each request's reply, as :meth:`generate` gives it, without counting
        the prompts (for a plan, which counts them from their parts)."""
        return [self._finish(self.reply(request, counted=False)[0], request.params)[0]
                for request in requests]

    def _policy(self, task: str) -> Policy | None:
        """The builtin policy registered for ``task`` (built once), or None."""
        if task not in self._policies:
            if task not in registry.names("policy"):
                return None
            self._policies[task] = registry.resolve("policy", task)()
        return self._policies[task]

    def _act(self, memory: str, block: str, messages: Sequence[Message]) -> str | None:
        """The action (JSON text) for an action block of a task with a policy, else None."""
        parsed = layout.parse_action_block(block)
        if parsed is None:
            return None
        task, observation = parsed
        policy = self._policy(task)
        if policy is None:
            return None
        action = policy.act(shown_turns(memory, messages), observation)
        return json.dumps(action, sort_keys=True, ensure_ascii=False)

    def _finish(self, text: str, params: SamplingParams) -> tuple[str, str]:
        reason = "stop"
        for stop in params.stop:
            at = text.find(stop) if stop else -1
            if at >= 0:
                text, reason = text[:at], "stop"
        if self.tokenizer.count(text) > params.max_tokens:
            text, reason = _truncate_right(text, params.max_tokens), "length"
        return text, reason

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        results = []
        for request in requests:
            refused = unserved_adapter(self.name, request, ())  # no trained weights here
            if refused is not None:
                results.append(refused)
                continue
            start = time.perf_counter()
            raw, prompt_tokens = self.reply(request)
            text, finish = self._finish(raw, request.params)
            n = request.params.n
            usage = Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=n * self.tokenizer.count(text),
                latency_s=time.perf_counter() - start,
            )
            samples = [Sample(text=text, finish_reason=finish) for _ in range(n)]
            results.append(
                GenerationResult(key=request.key, samples=samples, usage=usage, stage=request.stage)
            )
        return results


def _truncate_right(text: str, budget: int) -> str:
    """The longest prefix of ``text`` with at most ``budget`` approximate tokens."""
    return text[:longest_prefix(text, budget, approx_tokenizer().count)]
