"""A Mem0-style fact memory (docs/clbench.md §6; Mem0, Chhikara et al. 2025, as CL-Bench runs
it: extraction after every step, top-10 retrieval before every step).

Memory: a list of short facts, each with a stable id, searched by the project's retrievers
(``retriever=bm25`` by default, ``dense`` or ``hybrid`` with ``embedder`` and ``k_rrf``, as
the rag systems); plus the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`, cleared at each instance end, the authors' runs too).

After every observed event -- a step's outcome (request, reply, observation), feedback on a
task (task, answer, verdict), a chunk or a document -- one extraction call (stage ``update``)
lists candidate facts (``FACT: ...`` lines, at most ``max_facts``). A candidate already stored
word for word (case and spacing aside) is dropped; no other fact is stored without a decision:
one batched decision call (stage ``update``) shows the ``update_k`` stored facts most similar
to each remaining candidate, merged into one numbered list (``(none stored yet)`` when the
store is empty), and the candidates, numbered, and reads one line per candidate, ``FACT <i>:
<operation>``: ``ADD`` (optionally ``ADD: <text>``), ``UPDATE <n>: <text>`` (memory n gets
the new text, keeping its id and place), ``DELETE <n>`` (memory n goes) or ``NONE``. The
operations are applied in candidate order; a candidate with no well-formed line, or with
lines that differ, changes nothing, and so does a malformed line or a number not shown (a
memory already deleted by an earlier line is left alone).

Answering retrieves the ``top_k`` stored facts most similar to the search key and shows them,
most similar first, before the query's block (after the instance's conversation). The key is
the query's text followed by the previous step (its request, reply and outcome, as extraction
saw it), as the authors search with the last exchange and the current prompt; the previous
step is kept across instance ends and in snapshots. The current query comes first so an
embedder that reads only the start of a long key still reads it. Chunks and documents enter
memory only through extraction and never become the previous step.

Retriever: ``retriever=auto`` (the default) resolves when the system is built, to ``dense``
(the packaged MiniLM embedder) when the ``embed`` extra is installed, else ``bm25``; the
resolved name is the argument a run records (and so part of its spec and run id), so two
machines never share a run id with different retrievers.

The retrieval index always holds exactly the stored facts in list order (rebuilt after an
update or delete, before the next search), so a restored snapshot searches as the original.

The builtin model's replies to these prompts are here too (:func:`builtin_replier`, registered
under the registry kind ``"builtin_reply"`` as ``mem0``; docs/clbench.md §6), for tasks whose
builtin policy keeps notes: to the extraction prompt of an environment step, ``FACT:`` lines
from the notes of that step alone (or ``NONE``); to the batched decision prompt, a fact whose
subject a listed memory shares updates it with ``merge(memory, fact)`` (``NONE`` when that
changes nothing), any other is added; to an action prompt showing memories, the action taken
from them. The decision prompt shows facts only, so the facts these replies wrote in
extraction replies are remembered with their task (a bounded map, filled and read within one
observation).
"""

from __future__ import annotations

import importlib.util
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.environment import NoteTaker, Turn, note_key
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.params import Param
from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import GenerationResult, Query
from clstream.retrieval.hybrid import RETRIEVERS, Retriever, make_index
from clstream.systems.base import reply_text, snapshot_error
from clstream.systems.context import RETRIEVAL_PARAMS
from clstream.systems.conversation import (
    BUDGET_PARAMS,
    Asked,
    EpisodeMethod,
    event_key,
    int_field,
    outcome_text,
    step_parts,
    str_field,
)
from clstream.systems.conversation.builtin_replies import (
    RESULT_HEAD,
    NoteReplies,
    UpdateHandler,
    action_json,
    between,
    feedback_of,
    lines_after,
    prefix,
)
from clstream.systems.conversation.prompts import NO_REPLY, NO_REQUEST, section

# --- prompts ---------------------------------------------------------------------------------

MEMORIES_HEADER = "Memories kept from earlier steps, most relevant first:"

STEP_REQUEST_LABEL = "Request:"
STEP_REPLY_LABEL = "Reply:"

EXTRACT_PROMPT = (
    "Below is one step of the agent's work, or a text it read. List the facts worth keeping "
    "for later steps and later tasks: how the environment or the task behaves, what worked "
    "and what failed and why, values and names that may come up again. Make each fact short "
    "and self-contained, so that it is clear without this step (name things instead of "
    "writing 'it' or 'this'). Leave out what only concerns the wording of this one step.\n\n"
    "{step}\n\n"
    "Reply with one line per fact, in the form\nFACT: <fact>\n"
    "or with the single line NONE when nothing is worth keeping."
)

MEMORY_UPDATE_PROMPT = (
    "New facts were found. Below are the stored memories most similar to them, numbered, and "
    "the new facts, numbered too. For each new fact choose one operation:\n"
    "ADD -- the fact is new: store it as a memory of its own.\n"
    "UPDATE <memory number>: <text> -- the fact refines or corrects that memory: replace the "
    "memory with <text>, written to hold what is still true of both.\n"
    "DELETE <memory number> -- the fact shows that memory no longer holds: remove it.\n"
    "NONE -- the memories already say this: change nothing.\n\n"
    "Stored memories:\n{memories}\n\nNew facts:\n{facts}\n\n"
    "Reply with one line per new fact, in the form\nFACT <fact number>: <operation>\n"
    "for example FACT 2: UPDATE 1: <text>."
)
NO_MEMORIES = "(none stored yet)"


# --- parsing the replies -----------------------------------------------------------------------

_FACT = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?FACT[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                   re.IGNORECASE | re.MULTILINE)
_MEMORY_OP = re.compile(
    r"^[ \t]*(?:[-*][ \t]*)?(ADD|UPDATE|DELETE|NONE)(?![A-Za-z])[ \t]*#?(\d+)?[ \t]*"
    r"(?:[:\-][ \t]*)?(.*?)[ \t]*$",
    re.MULTILINE,
)


def parse_facts(text: str, limit: int) -> list[str]:
    """The distinct ``FACT:`` lines, in order, at most ``limit``."""
    out: list[str] = []
    for m in _FACT.finditer(text):
        fact = " ".join(m.group(1).split())
        if fact and fact not in out:
            out.append(fact)
    return out[:limit]


@dataclass(frozen=True)
class MemoryOp:
    op: str  # ADD | UPDATE | DELETE | NONE
    number: int | None  # 1-based, as the prompt listed the memories (UPDATE, DELETE)
    text: str  # ADD: optional replacement of the fact; UPDATE: the new memory text


def parse_memory_op(text: str, shown: int) -> MemoryOp | None:
    """The one operation of an update reply, or None.

    Keywords are upper case. Well-formed: ``ADD`` (optionally ``ADD: <text>``), ``UPDATE <n>:
    <text>``, ``DELETE <n>`` and ``NONE`` (either may add a reason), with 1 <= n <= ``shown``.
    Other lines are ignored; no well-formed line, or several that differ, is no operation.
    """
    found: list[MemoryOp] = []
    for m in _MEMORY_OP.finditer(text):
        op, number, body = m.group(1), m.group(2), " ".join(m.group(3).split())
        if not re.search(r"\w", body):  # punctuation alone ("NONE.") is no text
            body = ""
        n = int(number) if number else None
        if op == "ADD" and n is None:
            found.append(MemoryOp(op, None, body))
        elif op == "UPDATE" and n is not None and 1 <= n <= shown and body:
            found.append(MemoryOp(op, n, body))
        elif op == "DELETE" and n is not None and 1 <= n <= shown:
            found.append(MemoryOp(op, n, ""))  # a stated reason is ignored
        elif op == "NONE" and n is None:
            found.append(MemoryOp(op, None, ""))
    distinct = set(found)
    return found[0] if len(distinct) == 1 else None


_FACT_OP = re.compile(r"^[ \t]*(?:[-*][ \t]*)?FACT[ \t]+#?(\d+)[ \t]*:[ \t]*(.*?)[ \t]*$",
                      re.MULTILINE)


def parse_memory_ops(text: str, facts: int, shown: int) -> dict[int, MemoryOp]:
    """Fact number (1-based) -> its operation, from a batched decision reply.

    A line ``FACT <i>: <operation>`` gives fact i its operation (the grammar of
    :func:`parse_memory_op`, with memory numbers 1..``shown``); a fact with no well-formed
    line, or with lines that differ, gets none. Malformed lines and numbers out of range are
    ignored.
    """
    found: dict[int, set[MemoryOp]] = {}
    for m in _FACT_OP.finditer(text):
        n = int(m.group(1))
        op = parse_memory_op(m.group(2), shown) if 1 <= n <= facts else None
        if op is not None:
            found.setdefault(n, set()).add(op)
    return {n: next(iter(ops)) for n, ops in sorted(found.items()) if len(ops) == 1}


STEP_CHARS = 12_000  # clip of each part of a step shown to extraction (its end is kept)


@dataclass
class Fact:
    id: int
    text: str


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def installed_retriever() -> str:
    """The retriever ``auto`` resolves to: ``dense`` when the ``embed`` extra (the
    sentence-transformers runtime and the packaged MiniLM model) is installed, else ``bm25``."""
    from clstream.retrieval.dense import packaged_minilm_path  # numpy and httpx: only here

    runtime = importlib.util.find_spec("sentence_transformers") is not None
    return "dense" if runtime and packaged_minilm_path() is not None else "bm25"


def _clip_end(text: str, limit: int = STEP_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


class Mem0(EpisodeMethod):
    """Facts extracted after every event and merged by ADD/UPDATE/DELETE/NONE decisions."""

    name = "mem0"
    summary = "facts extracted after every event, merged by ADD/UPDATE/DELETE; top-k shown"
    params: ClassVar[dict[str, Param]] = {
        "top_k": Param(10, "stored facts shown before each answer (the authors' k)", minimum=1),
        "update_k": Param(10, "similar stored facts shown to each update decision", minimum=1),
        "max_facts": Param(10, "candidate facts taken from one extraction", minimum=1),
        **RETRIEVAL_PARAMS,
        "retriever": Param("auto", "retrieval index over the facts: auto resolves to dense "
                           "with the embed extra installed, else bm25", choices=("auto", *RETRIEVERS)),
        **BUDGET_PARAMS,
    }
    templates: ClassVar[dict[str, object]] = {
        "MEMORIES_HEADER": MEMORIES_HEADER, "STEP_REQUEST_LABEL": STEP_REQUEST_LABEL,
        "STEP_REPLY_LABEL": STEP_REPLY_LABEL, "EXTRACT_PROMPT": EXTRACT_PROMPT,
        "MEMORY_UPDATE_PROMPT": MEMORY_UPDATE_PROMPT, "NO_MEMORIES": NO_MEMORIES}

    @classmethod
    def spec_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as a run records them: ``retriever=auto`` resolved on this machine."""
        if args.get("retriever", "auto") == "auto":
            return {**args, "retriever": installed_retriever()}
        return args

    def _checked(self, args: dict[str, Any]) -> dict[str, Any]:
        return super()._checked(self.spec_args(args))

    def _clear_method(self) -> None:
        self.facts: list[Fact] = []
        self.next_id = 1
        self._index: Retriever | None = None  # built on first search
        self.last_step = ""  # the previous step's text, part of the search key

    # --- the fact store ----------------------------------------------------------------------

    def _new_index(self) -> Retriever:
        return make_index(self.args["retriever"], self.args["embedder"], self.args["k_rrf"])

    def _search(self, text: str, k: int) -> list[int]:
        """Positions of the (up to) k facts most similar to ``text``, best first."""
        if not self.facts or k <= 0:
            return []
        if self._index is None:
            self._index = self._new_index()
            for position, fact in enumerate(self.facts):
                self._index.add(position, fact.text)
        return [position for position, _ in self._index.search(text, k)]

    def _add(self, text: str) -> None:
        self.facts.append(Fact(self.next_id, text))
        self.next_id += 1
        if self._index is not None:
            self._index.add(len(self.facts) - 1, text)

    def _changed(self) -> None:
        self._index = None  # positions or texts moved: rebuild before the next search

    # --- answering -----------------------------------------------------------------------

    def _sections(self, query: Query) -> list[str]:
        key = f"{query.text}\n\n{self.last_step}" if self.last_step else query.text
        shown = self._search(key, self.args["top_k"])
        return [section(MEMORIES_HEADER, (f"- {self.facts[p].text}" for p in shown))]

    # --- updating ------------------------------------------------------------------------

    async def _after_step(self, event: Observation | Feedback, asked: Asked | None
                          ) -> list[GenerationResult]:
        step = self._step_text(event, asked)
        self.last_step = step
        return await self._extract(event, step)

    async def _text(self, event: Chunk | Document) -> list[GenerationResult]:
        return await self._extract(event, _clip_end(event.text))

    @staticmethod
    def _step_text(event: Observation | Feedback, asked: Asked | None) -> str:
        if isinstance(event, Feedback):
            answer = asked.answer if asked is not None else event.answer
            return layout.experience_block(layout.Experience(
                event.query_text, answer, event.message, event.success)).strip()
        request, action = step_parts(event, asked)
        parts = []
        if request or action:
            parts += [f"{STEP_REQUEST_LABEL}\n{_clip_end(request) or NO_REQUEST}",
                      f"{STEP_REPLY_LABEL}\n{_clip_end(action) or NO_REPLY}"]
        return "\n\n".join([*parts, _clip_end(outcome_text(event))])

    async def _extract(self, event: Event, step: str) -> list[GenerationResult]:
        key = event_key(event)
        call = await self._update_call(f"{key}/extract",
                                       EXTRACT_PROMPT.format(step=step))
        if not call.ok:
            return [call]
        facts = [f for f in parse_facts(reply_text(call), self.args["max_facts"])
                 if all(_norm(s.text) != _norm(f) for s in self.facts)]
        if not facts:
            return [call]
        return [call, await self._decide(facts, f"{key}/update")]

    async def _decide(self, facts: list[str], key: str) -> GenerationResult:
        """One decision call for all ``facts``; its operations applied as the module docstring
        says."""
        shown: list[int] = []  # fact ids, in the order listed
        for fact in facts:
            for position in self._search(fact, self.args["update_k"]):
                if self.facts[position].id not in shown:
                    shown.append(self.facts[position].id)
        by_id = {f.id: f for f in self.facts}
        listed = "\n".join(f"{n}. {by_id[i].text}" for n, i in enumerate(shown, 1))
        prompt = MEMORY_UPDATE_PROMPT.format(
            memories=listed or NO_MEMORIES,
            facts="\n".join(f"{n}. {fact}" for n, fact in enumerate(facts, 1)))
        call = await self._update_call(key, prompt)
        ops = parse_memory_ops(reply_text(call), len(facts), len(shown))
        for n, fact in enumerate(facts, 1):
            op = ops.get(n)
            if op is None or op.op == "NONE":
                continue
            if op.op == "ADD":
                text = op.text or fact
                if all(_norm(f.text) != _norm(text) for f in self.facts):
                    self._add(text)
                continue
            assert op.number is not None
            target = shown[op.number - 1]
            at = next((p for p, f in enumerate(self.facts) if f.id == target), None)
            if at is None:  # deleted by an earlier line
                continue
            if op.op == "UPDATE":
                self.facts[at].text = op.text
            else:
                del self.facts[at]
            self._changed()
        return call

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"facts": [{"id": f.id, "text": f.text} for f in self.facts],
                "next_id": self.next_id, "last_step": self.last_step, **self._dump_episode()}

    def _load(self, memory: dict[str, Any]) -> None:
        items = memory.get("facts")
        if not isinstance(items, list) or not all(
                isinstance(f, dict) and isinstance(f.get("id"), int)
                and not isinstance(f.get("id"), bool) and isinstance(f.get("text"), str)
                for f in items):
            raise snapshot_error("facts", "expected a list of {id: int, text: str}")
        self.facts = [Fact(f["id"], f["text"]) for f in items]
        self.next_id = int_field(memory, "next_id", minimum=1)
        if any(f.id >= self.next_id for f in self.facts):
            raise snapshot_error("next_id", "must exceed every fact id")
        self._index = None
        self.last_step = str_field(memory, "last_step")
        self._load_episode(memory)


# --- the builtin model's replies (module docstring) ------------------------------------------

_REMEMBERED_FACTS = 4096
_NUMBERED = re.compile(r"^(\d+)\. (.+)$")


def builtin_replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: one :class:`Mem0Replies` (it remembers the facts it wrote)
    over the builtin model's policies."""
    return Mem0Replies(policy_of).reply


class Mem0Replies(NoteReplies):
    """The builtin model's replies to mem0's prompts (module docstring); None for every other
    request."""

    def __init__(self, policy_of: PolicyLookup) -> None:
        super().__init__(policy_of)
        self._fact_tasks: OrderedDict[str, str] = OrderedDict()

    def update_handlers(self) -> dict[str, UpdateHandler]:
        return {prefix(EXTRACT_PROMPT, "step"): self._extract,
                prefix(MEMORY_UPDATE_PROMPT, "memories"): self._decide}

    def claims_action(self, system: str, memory: str) -> bool:
        return MEMORIES_HEADER in memory

    def act(self, policy: NoteTaker, body: str, memory: str, turns: list[Turn],
            observation: str) -> str:
        notes = [line[2:] for line in lines_after(memory, MEMORIES_HEADER)
                 if line.startswith("- ")]
        if turns and MEMORIES_HEADER in turns[-1].feedback:
            # The memories sit between the last result and the request: not part of it.
            last = turns[-1]
            cut = last.feedback.split(MEMORIES_HEADER, 1)[0].rstrip()
            turns = [*turns[:-1], Turn(last.observation, last.action, cut)]
        return action_json(policy.act_from_notes(notes, turns, observation))

    def _extract(self, prompt: str) -> str | None:
        step = prompt[len(prefix(EXTRACT_PROMPT, "step")):]
        request_head = STEP_REQUEST_LABEL + "\n"
        reply_at = step.rfind(f"\n\n{STEP_REPLY_LABEL}\n")
        result_at = step.rfind("\n\n" + RESULT_HEAD)
        if not step.startswith(request_head) or not 0 <= reply_at < result_at:
            return None
        asked = self.asked(step[len(request_head):reply_at])
        if asked is None:
            return None
        task, policy, observation = asked
        action = step[reply_at + len(STEP_REPLY_LABEL) + 3:result_at]
        suffix = EXTRACT_PROMPT.partition("{step}")[2]
        outcome = step[result_at + 2:].removesuffix(suffix)
        notes = [" ".join(n.split()) for n in policy.notes([
            Turn(observation, action, feedback_of(outcome))])]
        for note in notes:
            self._fact_tasks[note] = task
            self._fact_tasks.move_to_end(note)
        while len(self._fact_tasks) > _REMEMBERED_FACTS:
            self._fact_tasks.popitem(last=False)
        return "\n".join(f"FACT: {n}" for n in notes) if notes else "NONE"

    def _decide(self, prompt: str) -> str | None:
        stored = between(prompt, "Stored memories:\n", "\n\nNew facts:\n")
        new = between(prompt, "New facts:\n", "\n\nReply with one line per new fact")
        if stored is None or new is None:
            return None
        memories = [m.group(2) for m in map(_NUMBERED.match, stored.split("\n")) if m]
        facts = [m.group(2) for m in map(_NUMBERED.match, new.split("\n")) if m]
        task = next((self._fact_tasks[f] for f in facts if f in self._fact_tasks), None)
        policy = self.taker(task) if task is not None else None
        if policy is None:
            return None
        lines = []
        for i, fact in enumerate(facts, 1):
            key = note_key(fact)
            same = next((n for n, m in enumerate(memories, 1)
                         if key is not None and note_key(m) == key), None)
            if same is None:
                lines.append(f"FACT {i}: ADD")
                continue
            merged = " ".join(policy.merge(memories[same - 1], fact).split())
            lines.append(f"FACT {i}: NONE" if merged == memories[same - 1]
                         else f"FACT {i}: UPDATE {same}: {merged}")
        return "\n".join(lines)
