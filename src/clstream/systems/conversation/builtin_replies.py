"""The builtin model's side of the note-keeping memory methods (docs/clbench.md §6).

A builtin policy that learns says what it learned as note lines and acts from note lines
(:class:`~clstream.core.environment.NoteTaker`). The notepad, mem0 and ace methods keep
exactly such lines when the builtin model writes them, in the formats the methods ask for
(:mod:`clstream.systems.conversation.prompts`), from the steps their prompts show:

* notepad, an action prompt (the notepad rules in the system message): act with
  ``act_from_notes(notepad lines, the instance's turns, observation)`` and end the reply with
  a notepad block holding the merged notes of the old notepad and of the instance's turns,
  the step being taken included (its feedback still unknown) -- a one-step instance would
  otherwise never reach the notepad -- and of the feedback that closed the last instance when
  the prompt carries it (read as a step of its own). Idempotent, so it is written at every
  step;
* mem0, the extraction prompt of an environment step: ``FACT:`` lines from the notes of that
  step alone (or ``NONE``); the batched decision prompt: a fact whose subject a listed memory
  shares updates it with ``merge(memory, fact)`` (``NONE`` when that changes nothing), any
  other is added; an action prompt showing memories acts from them;
* ace, an action prompt (the playbook rules): act from the playbook's bullets, oldest first,
  and name the bullets holding notes on the ``Bullets used:`` line; the reflector: ``LESSON:``
  lines from the notes of the instance's record, each used bullet tagged helpful when a lesson
  shares its subject, else neutral; the curator: each lesson not held word for word added to
  the ``clues`` section.

The task is read from the prompt (an action block's task line; the opening request the
curator is shown), except in the decision prompt, which shows facts only: the facts this
model wrote in extraction replies are remembered with their task (a bounded map, filled and
read within one observation). Every other prompt -- a task whose policy keeps no notes, a
text, feedback, another protocol's prompt -- gets None here and the reader's usual reply.
The builtin model reaches these replies through the registry (kind ``"builtin_reply"``, entry
``conversation``: :func:`replier`), never by import.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence

from clstream.core import layout
from clstream.core.environment import (
    NoteTaker,
    Policy,
    Turn,
    merge_notes,
    note_key,
)
from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import Message
from clstream.models.builtin import shown_turns
from clstream.systems.conversation import prompts as formats

TurnsOf = Callable[[str, Sequence[Message]], list[Turn]]

_REMEMBERED_FACTS = 4096
_BULLET_LINE = re.compile(r"^\[(b(\d+))\] \(helpful \d+, harmful \d+\) (.+)$", re.MULTILINE)
_NUMBERED = re.compile(r"^(\d+)\. (.+)$")
_TASK_LINE = re.compile(rf"^{re.escape(layout.ACTION_TASK_LABEL)} ([a-z][a-z0-9_+\-]*)$",
                        re.MULTILINE)
_OUTCOME_LINE = re.compile(r"\n\nThe evaluator judged the final answer \w+\.$")
_TRACE_LABEL = re.compile(
    rf"(?:^|\n\n)({re.escape(formats.TRACE_SHOWN_LABEL)}|{re.escape(formats.TRACE_REPLY_LABEL)})"
    r"\n")
_RESULT_HEAD = formats.RESULT_TEMPLATE.partition("{text}")[0]
_DONE_TAIL = "\n" + formats.INSTANCE_DONE


def _prefix(template: str, field: str) -> str:
    return template.partition("{" + field + "}")[0]


def _between(text: str, start: str, end: str) -> str | None:
    at = text.find(start)
    if at < 0:
        return None
    stop = text.find(end, at + len(start))
    return text[at + len(start):stop] if stop >= 0 else None


def _feedback(outcome: str) -> str:
    """The environment's words in an outcome text (its header and closing line removed)."""
    text = outcome.removeprefix(_RESULT_HEAD)
    return text.removesuffix(_DONE_TAIL).strip()


def _action_json(action: dict[str, object]) -> str:
    return json.dumps(action, sort_keys=True, ensure_ascii=False)


def _lines_after(text: str, header: str) -> list[str]:
    """The lines following the line ``header`` up to the first blank line."""
    at = text.find(header + "\n")
    if at < 0:
        return []
    out = []
    for line in text[at + len(header) + 1:].split("\n"):
        if not line.strip():
            break
        out.append(line)
    return out



def replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: one :class:`NoteBridge` (it remembers the facts it wrote) over
    the builtin model's policies and the steps its prompts show."""
    return NoteBridge(policy_of, shown_turns).reply

class NoteBridge:
    """Replies of the builtin model to the prompts of the note-keeping methods (see the module
    docstring). ``policy_of`` gives a task's builtin policy; ``turns_of`` the steps a prompt
    shows (memory text, messages)."""

    def __init__(self, policy_of: Callable[[str], Policy | None], turns_of: TurnsOf) -> None:
        self._policy_of = policy_of
        self._turns_of = turns_of
        self._fact_tasks: OrderedDict[str, str] = OrderedDict()

    def _taker(self, task: str) -> NoteTaker | None:
        policy = self._policy_of(task)
        return policy if isinstance(policy, NoteTaker) else None

    def _asked(self, block: str) -> tuple[str, NoteTaker, str] | None:
        """(task, its note-taking policy, the observation) of an action block, or None when
        the text is no action block or its task's policy keeps no notes."""
        parsed = layout.parse_action_block(block)
        if parsed is None:
            return None
        policy = self._taker(parsed[0])
        return None if policy is None else (parsed[0], policy, parsed[1])

    def reply(self, messages: Sequence[Message]) -> str | None:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body = "\n\n".join(m.content for m in messages if m.role != "system")
        if system == formats.MEMORY_SYSTEM:
            for prefix, handler in (
                    (_prefix(formats.EXTRACT_PROMPT, "step"), self._extract),
                    (_prefix(formats.MEMORY_UPDATE_PROMPT, "memories"), self._decide),
                    (_prefix(formats.REFLECT_PROMPT, "bullets"), self._reflect),
                    (_prefix(formats.CURATE_PROMPT, "budget"), self._curate)):
                if body.startswith(prefix):
                    return handler(body)
            return None
        memory, block = layout.split_prompt(body)
        asked = self._asked(block)
        if asked is None:
            return None
        _, policy, observation = asked
        turns = self._turns_of(memory, messages)
        if formats.NOTEPAD_RULES in system:
            return self._notepad(policy, body, turns, observation)
        if formats.PLAYBOOK_RULES in system:
            return self._generate(policy, body, turns, observation)
        if formats.MEMORIES_HEADER in memory:
            notes = [line[2:] for line in _lines_after(memory, formats.MEMORIES_HEADER)
                     if line.startswith("- ")]
            if turns and formats.MEMORIES_HEADER in turns[-1].feedback:
                # The memories sit between the last result and the request: not part of it.
                last = turns[-1]
                cut = last.feedback.split(formats.MEMORIES_HEADER, 1)[0].rstrip()
                turns = [*turns[:-1], Turn(last.observation, last.action, cut)]
            return _action_json(policy.act_from_notes(notes, turns, observation))
        return None

    # --- notepad ------------------------------------------------------------------------

    def _notepad(self, policy: NoteTaker, body: str, turns: list[Turn], observation: str
                 ) -> str:
        old = _lines_after(body, formats.NOTEPAD_HEADER)
        action = _action_json(policy.act_from_notes(old, turns, observation))
        step = Turn(observation, action, "")
        # The feedback that closed the last instance (its last step's result, shown once at
        # the start of the next) is a step of its own whose request is no longer shown.
        carried = "\n".join(_lines_after(body, formats.CARRY_HEADER))
        closing = policy.notes([Turn("", "", carried)]) if carried else []
        notes = merge_notes(policy, [*old, *closing, *policy.notes([*turns, step])])
        return f"{action}\n<notepad>\n" + "\n".join(notes) + "\n</notepad>"

    # --- mem0 ---------------------------------------------------------------------------

    def _extract(self, prompt: str) -> str | None:
        step = prompt[len(_prefix(formats.EXTRACT_PROMPT, "step")):]
        request_head = formats.STEP_REQUEST_LABEL + "\n"
        reply_at = step.rfind(f"\n\n{formats.STEP_REPLY_LABEL}\n")
        result_at = step.rfind("\n\n" + _RESULT_HEAD)
        if not step.startswith(request_head) or not 0 <= reply_at < result_at:
            return None
        asked = self._asked(step[len(request_head):reply_at])
        if asked is None:
            return None
        task, policy, observation = asked
        action = step[reply_at + len(formats.STEP_REPLY_LABEL) + 3:result_at]
        suffix = formats.EXTRACT_PROMPT.partition("{step}")[2]
        outcome = step[result_at + 2:].removesuffix(suffix)
        notes = [" ".join(n.split()) for n in policy.notes([
            Turn(observation, action, _feedback(outcome))])]
        for note in notes:
            self._fact_tasks[note] = task
            self._fact_tasks.move_to_end(note)
        while len(self._fact_tasks) > _REMEMBERED_FACTS:
            self._fact_tasks.popitem(last=False)
        return "\n".join(f"FACT: {n}" for n in notes) if notes else "NONE"

    def _decide(self, prompt: str) -> str | None:
        stored = _between(prompt, "Stored memories:\n", "\n\nNew facts:\n")
        new = _between(prompt, "New facts:\n", "\n\nReply with one line per new fact")
        if stored is None or new is None:
            return None
        memories = [m.group(2) for m in map(_NUMBERED.match, stored.split("\n")) if m]
        facts = [m.group(2) for m in map(_NUMBERED.match, new.split("\n")) if m]
        task = next((self._fact_tasks[f] for f in facts if f in self._fact_tasks), None)
        policy = self._taker(task) if task is not None else None
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

    # --- ace ----------------------------------------------------------------------------

    def _generate(self, policy: NoteTaker, body: str, turns: list[Turn], observation: str
                  ) -> str:
        bullets = sorted((int(m.group(2)), m.group(1), m.group(3))
                          for m in _BULLET_LINE.finditer(body))
        action = policy.act_from_notes([text for _, _, text in bullets], turns, observation)
        used = [bullet_id for _, bullet_id, text in bullets if note_key(text) is not None]
        return (f"{_action_json(action)}\n{formats.BULLETS_USED_LABEL} "
                + (", ".join(used) if used else "none"))

    def _reflect(self, prompt: str) -> str | None:
        cited = _between(prompt, "Bullets the agent used:\n", "\n\nRecord of the instance:\n")
        judge = formats.REFLECT_PROMPT.partition("{outcome}")[2][:40]
        trace = _between(prompt, "Record of the instance:\n", "\n\n" + judge)
        if cited is None or trace is None:
            return None
        entries = _trace_entries(_OUTCOME_LINE.sub("", trace))
        turns: list[Turn] = []
        task = None
        for n, (label, text) in enumerate(entries):
            if label != formats.TRACE_REPLY_LABEL or n == 0:
                continue
            parsed = layout.parse_action_block(layout.split_prompt(entries[n - 1][1])[1])
            if parsed is None:
                continue
            task = task or parsed[0]
            after = entries[n + 1][1] if n + 1 < len(entries) else ""
            feedback = _feedback(after) if after.startswith(_RESULT_HEAD) else ""
            turns.append(Turn(parsed[1], text, feedback))
        policy = self._taker(task) if task is not None else None
        if policy is None:
            return None
        lessons = policy.notes(turns)
        subjects = {note_key(n) for n in lessons}
        tags = [f"TAG {m.group(1)}: "
                + ("helpful" if note_key(m.group(3)) in subjects else "neutral")
                for m in _BULLET_LINE.finditer(cited)]
        return "\n".join([*tags, *(f"LESSON: {n}" for n in lessons)]) or "NONE"

    def _curate(self, prompt: str) -> str | None:
        context = _between(prompt, "Request that opened the instance:\n",
                           "\n\nLessons from the last instance:\n")
        lessons = _between(prompt, "Lessons from the last instance:\n",
                           "\n\nReply with one line per new bullet")
        found = _TASK_LINE.findall(context or "")
        policy = self._taker(found[-1]) if found else None
        if policy is None or lessons is None:
            return None
        held = {m.group(3) for m in _BULLET_LINE.finditer(prompt)}
        adds = [f"ADD clues: {line[2:]}" for line in lessons.split("\n")
                if line.startswith("- ") and note_key(line[2:]) is not None
                and line[2:] not in held]
        return "\n".join(adds) or "NONE"


def _trace_entries(trace: str) -> list[tuple[str, str]]:
    """(label, text) of each entry of an instance record, in order."""
    marks = list(_TRACE_LABEL.finditer(trace))
    return [(m.group(1), trace[m.end():marks[n + 1].start() if n + 1 < len(marks)
                               else len(trace)].strip())
            for n, m in enumerate(marks)]
