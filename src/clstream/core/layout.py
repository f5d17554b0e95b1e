"""The one prompt structure: how every system lays out a request and how a reader reads it back.

A protocol puts its rules and its question into the :class:`~clstream.core.types.Query`
(``instructions``, ``prompt``); a system adds what its memory shows. Every request is:

* a system message: the query's instructions;
* one user message: the memory *sections* the system chose, each followed by a blank line,
  then the query block (the question, its lettered options and its answer format) last.
  A system may put one line before the block (the head index of the newest passage).

Memory is shown in two shared entry formats, so one reader understands every method:

* tagged passages -- text the system observed (a chunk, a document, an observation, or
  feedback kept as text), each opened by a ``[chunk index i]`` tag line; a section of
  passages opens with a header line (:data:`PASSAGES_HEADER` and its two variants);
* past-experience blocks -- a finished task, one block each::

      Past task: <the task text>
      Answer given: <final answer of that attempt>
      Outcome: correct | wrong
      Feedback: <the evaluator's feedback text>

  The feedback line comes last so a reader that prefers the latest matching statement takes
  the evaluator's word over the answer given. ``Answer given`` holds the text after the
  attempt's last answer marker when there is one (the whole output otherwise, clipped), so
  quoted reasoning cannot pose as evidence. One-line tasks are whitespace-collapsed; code and
  multi-line tasks keep their lines.

* step blocks -- one step in a stateful environment (CL-Bench), as a memory keeps it: the
  observation shown, the action taken and the feedback received, each part headed by its
  label and its number of lines, so the parts read back exactly whatever they hold::

      [step <instance id>/<step>]
      Observation (<n> lines):
      <the observation>
      Action (<n> lines):
      <the action>
      Feedback (<n> lines):
      <the feedback>

  The query block of such a step is an *action block*: the observation as the question, a
  line ``Environment task: <name>`` naming the task, then the action format
  (:func:`action_block`). The steps already taken in the instance in progress open the
  query's prompt as a section of step blocks under :data:`INSTANCE_STEPS_HEADER`
  (:func:`instance_steps_section`) for a system whose memory does not hold them: within an
  instance every system sees its own steps, and memory decides only what crosses instances
  (docs/clbench.md §2.4).

Placement rule for sections (:func:`user_text`): a section that already ends with a blank line
is kept byte for byte, any other is trimmed at its end and given one. The second half of the
module reads the structure back (the builtin reader model uses it): split a prompt into memory
and question block, read the question and options, the tagged passages and the experience
blocks.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.types import Message, Query

LAYOUT_VERSION = "layout-v1"

# --- the query block ---------------------------------------------------------------------

QUESTION_LABEL = "Question:"
QUESTION_TEMPLATE = "Question: {question}\n"
OPTIONS_HEADER = "Options:\n"
OPTION_TEMPLATE = "{letter}. {option}\n"
HEAD_LABEL = "Current head index:"
HEAD_TEMPLATE = "Current head index: {index}\n"

# Used only when a query carries no instructions or prompt of its own.
DEFAULT_INSTRUCTIONS = (
    "Answer the question at the end of the user message. Before it you may be shown material "
    "kept from earlier in the stream: passages tagged with their index (a larger index is "
    "later) and past tasks with the answer given and the feedback it received. Use that "
    "material where it fits the question."
)
DEFAULT_OPEN_FORMAT = "End your reply with one line '## Answer: <answer>' holding only the answer."
DEFAULT_CHOICE_FORMAT = "End your reply with one line '## Answer: <letter>' naming one option."

# --- memory entries ----------------------------------------------------------------------

PASSAGES_HEADER = "Passages, each tagged with its chunk index:\n\n"
RECENT_HEADER = "Most recent passages, each tagged with its chunk index:\n\n"
RETRIEVED_HEADER = "Earlier passages retrieved for this question, in chunk order:\n\n"
PASSAGE_TEMPLATE = "[chunk index {index}]\n{text}\n\n"
TAG_PATTERN = re.compile(r"^\[chunk index (\d+)\]$", re.MULTILINE)

EXPERIENCES_HEADER = "Past tasks, oldest first, with the answer given and its feedback:"
FAILED_EXPERIENCES_HEADER = "Past tasks that went wrong, with their feedback:"
TASK_LABEL = "Past task:"
ANSWER_LABEL = "Answer given:"
OUTCOME_LABEL = "Outcome:"
FEEDBACK_LABEL = "Feedback:"

OUTPUT_CHARS = 1500  # clip of a past answer shown in an experience block
FEEDBACK_CHARS = 800  # clip of a past feedback text
TASK_CHARS = 4000  # clip of a past task text

_TEMPLATE_NAMES = (
    "LAYOUT_VERSION", "QUESTION_TEMPLATE", "OPTIONS_HEADER", "OPTION_TEMPLATE", "HEAD_TEMPLATE",
    "DEFAULT_INSTRUCTIONS", "DEFAULT_OPEN_FORMAT", "DEFAULT_CHOICE_FORMAT", "PASSAGES_HEADER",
    "RECENT_HEADER", "RETRIEVED_HEADER", "PASSAGE_TEMPLATE", "EXPERIENCES_HEADER",
    "FAILED_EXPERIENCES_HEADER", "TASK_LABEL", "ANSWER_LABEL", "OUTCOME_LABEL", "FEEDBACK_LABEL",
)


def template_fingerprint() -> str:
    """sha256 of every layout template; protocols and methods fold it into their own."""
    texts = [f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES]
    texts += [f"clips={OUTPUT_CHARS},{FEEDBACK_CHARS},{TASK_CHARS}"]
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()


def fingerprint(texts: Iterable[str]) -> str:
    """sha256 of named template texts (``"NAME=text"``) plus the layout's own fingerprint."""
    return hashlib.sha256("\x00".join([*texts, template_fingerprint()]).encode()).hexdigest()


# --- writing ------------------------------------------------------------------------------


def option_letters(n: int) -> str:
    if n > len(string.ascii_uppercase):
        raise ValueError(f"at most {len(string.ascii_uppercase)} options, got {n}")
    return string.ascii_uppercase[:n]


def option_lines(options: Sequence[str]) -> str:
    """``Options:`` and one ``A. text`` line per option (whitespace-collapsed), or ''."""
    if not options:
        return ""
    letters = option_letters(len(options))
    lines = (OPTION_TEMPLATE.format(letter=a, option=" ".join(o.split()))
             for a, o in zip(letters, options, strict=True))
    return OPTIONS_HEADER + "".join(lines)


def question_block(question: str, options: Sequence[str] = (), answer_format: str = "") -> str:
    """``Question: ...``, the lettered options, then the answer format (no trailing newline)."""
    return QUESTION_TEMPLATE.format(question=question) + option_lines(options) + answer_format


def instructions_of(query: Query) -> str:
    """The system message for ``query``: its own instructions, else the generic ones."""
    return query.instructions or DEFAULT_INSTRUCTIONS


def prompt_of(query: Query) -> str:
    """The query block for ``query``: its own prompt, else a generic one built from its text."""
    if query.prompt:
        return query.prompt
    fmt = DEFAULT_CHOICE_FORMAT if query.options else DEFAULT_OPEN_FORMAT
    return question_block(query.text.strip(), query.options, fmt)


def head_line(index: int) -> str:
    return HEAD_TEMPLATE.format(index=index)


def placed(section: str) -> str:
    """A section as placed in the user message (the placement rule of the module docstring)."""
    return section if section.endswith("\n\n") else section.rstrip() + "\n\n"


def user_text(sections: Iterable[str], block: str) -> str:
    """The memory sections (blank ones skipped), then the query block."""
    return "".join(placed(s) for s in sections if s.strip()) + block


def build_messages(instructions: str, sections: Iterable[str], block: str
                   ) -> tuple[Message, ...]:
    return (Message(role="system", content=instructions),
            Message(role="user", content=user_text(sections, block)))


def query_messages(query: Query, sections: Iterable[str], head_index: int | None = None
                   ) -> tuple[Message, ...]:
    """What a system sends for ``query`` with ``sections`` of memory (and a head index)."""
    return build_messages(instructions_of(query), sections, query_block(query, head_index))


def query_block(query: Query, head_index: int | None = None) -> str:
    """The end of the user message: the head index line (when given), then the query block."""
    head = head_line(head_index) if head_index is not None else ""
    return head + prompt_of(query)


def passage_block(index: int, text: str) -> str:
    """One tagged passage; blocks end in whitespace so token counts add up across blocks."""
    return PASSAGE_TEMPLATE.format(index=index, text=text.strip())


def passages_section(passages: Iterable[tuple[int, str]], header: str = PASSAGES_HEADER) -> str:
    """A header followed by the tagged passages, in the order given (the header even when
    there are none: a context system always shows its context)."""
    return header + "".join(passage_block(i, t) for i, t in passages)


@dataclass(frozen=True)
class Experience:
    """A finished task as memory shows it."""

    question: str
    output: str
    feedback: str
    success: bool


_MARKER = re.compile(r"""["'*#]*\s*answer\s*["'*#]*\s*:""", re.IGNORECASE)


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def final_answer_text(output: str) -> str:
    """What an attempt answered: the rest of the line after its last answer marker, else the
    whole output (kept whole for code, which has no marker)."""
    markers = list(_MARKER.finditer(output))
    if markers:
        rest = output[markers[-1].end():].strip()
        line = rest.splitlines()[0].strip() if rest else ""
        if line:
            return line
    return output.strip()


def task_text(question: str) -> str:
    lines = [ln.rstrip() for ln in question.strip().splitlines()]
    if len([ln for ln in lines if ln.strip()]) <= 1:
        return " ".join(question.split())
    return clip("\n".join(lines), TASK_CHARS)


def experience_block(ex: Experience) -> str:
    answer = clip(final_answer_text(ex.output), OUTPUT_CHARS) or "(no answer)"
    outcome = "correct" if ex.success else "wrong"
    feedback = clip(" ".join(ex.feedback.split()), FEEDBACK_CHARS) or "(none)"
    return (f"{TASK_LABEL} {task_text(ex.question)}\n{ANSWER_LABEL} {answer}\n"
            f"{OUTCOME_LABEL} {outcome}\n{FEEDBACK_LABEL} {feedback}\n")


def experiences_section(experiences: Sequence[Experience], header: str = EXPERIENCES_HEADER
                        ) -> str:
    """A header and one block per experience, or '' when there are none."""
    if not experiences:
        return ""
    return header + "\n\n" + "\n".join(experience_block(e) for e in experiences)


# --- reading ------------------------------------------------------------------------------

_OPTION_LINE = re.compile(r"^([A-Z])[.)]\s+(.*\S)\s*$")


def split_prompt(text: str) -> tuple[str, str]:
    """(memory, question block): the block starts at the last line opening with "Question:".

    Without that label the last paragraph is taken as the question.
    """
    label = QUESTION_LABEL
    at = text.rfind("\n" + label)
    if at >= 0:
        return text[: at + 1], text[at + 1 :]
    if text.startswith(label):
        return "", text
    at = text.rstrip().rfind("\n\n")
    return (text[: at + 2], text[at + 2 :]) if at >= 0 else ("", text)


def parse_question(block: str) -> tuple[str, list[str]]:
    """The question sentence and the option texts (in letter order) of a question block."""
    lines = block.strip().splitlines()
    first = lines[0] if lines else ""
    if first.startswith(QUESTION_LABEL):
        first = first[len(QUESTION_LABEL) :]
    options: list[str] = []
    for line in lines[1:]:
        m = _OPTION_LINE.match(line.strip())
        if m and ord(m.group(1)) - ord("A") == len(options):
            options.append(m.group(2))
    return first.strip(), options


def parse_passages(memory: str) -> list[tuple[int, str]]:
    """(index, text) of each tagged passage. Text before the first tag (other sections) is not
    a passage; memory with no tag at all is one passage, index 0."""
    rest, _, last = memory.rstrip().rpartition("\n")
    if last.startswith(HEAD_LABEL):
        memory = rest
    for header in (PASSAGES_HEADER, RECENT_HEADER, RETRIEVED_HEADER):
        memory = memory.replace(header, "\n")
    tags = list(TAG_PATTERN.finditer(memory))
    if not tags:
        return [(0, memory.strip())] if memory.strip() else []
    passages = []
    for n, tag in enumerate(tags):
        end = tags[n + 1].start() if n + 1 < len(tags) else len(memory)
        passages.append((int(tag.group(1)), memory[tag.end() : end].strip()))
    return passages


@dataclass(frozen=True)
class ShownExperience:
    """An experience block as read back from a prompt."""

    question: str
    answer: str
    success: bool
    feedback: str


def parse_experiences(text: str) -> list[ShownExperience]:
    """The experience blocks of a prompt, in the order shown (wherever they stand: in an
    experience section or as the text of a tagged passage)."""
    out: list[ShownExperience] = []
    current: dict[str, Any] | None = None
    field_name = ""

    def close() -> None:
        if current is not None and "feedback" in current:
            out.append(ShownExperience(current["question"].strip(), current.get("answer", ""),
                                       current.get("outcome") == "correct", current["feedback"]))

    for line in text.splitlines():
        if line.startswith(TASK_LABEL):
            close()
            current, field_name = {"question": line[len(TASK_LABEL):].strip()}, "question"
        elif current is None:
            continue
        elif line.startswith(ANSWER_LABEL):
            current["answer"], field_name = line[len(ANSWER_LABEL):].strip(), "answer"
        elif line.startswith(OUTCOME_LABEL):
            current["outcome"], field_name = line[len(OUTCOME_LABEL):].strip().lower(), "outcome"
        elif line.startswith(FEEDBACK_LABEL):
            current["feedback"] = line[len(FEEDBACK_LABEL):].strip()
            close()
            current, field_name = None, ""
        elif field_name in ("question", "answer"):
            current[field_name] += "\n" + line
    return out


def current_question(text: str) -> str:
    """The first line of the current question (after the last ``Question:`` label), or ''."""
    at = text.rfind("\n" + QUESTION_LABEL)
    start = at + 1 if at >= 0 else (0 if text.startswith(QUESTION_LABEL) else -1)
    if start < 0:
        return ""
    rest = text[start + len(QUESTION_LABEL):].strip()
    return rest.splitlines()[0].strip() if rest else ""


# --- environment steps (CL-Bench) ----------------------------------------------------------

ACTION_TASK_LABEL = "Environment task:"
ACTION_TASK_TEMPLATE = "Environment task: {task}\n"
STEP_TAG_TEMPLATE = "[step {instance_id}/{step}]"
STEP_PARTS = ("Observation", "Action", "Feedback")
INSTANCE_STEPS_HEADER = "Steps already taken in this instance, oldest first:\n\n"

_ACTION_TASK = re.compile(r"^Environment task: ([a-z][a-z0-9_+\-]*)$", re.MULTILINE)
_STEP_TAG = re.compile(r"^\[step (\S+)/(\d+)\]$")
_STEP_PART = re.compile(r"^(Observation|Action|Feedback) \((\d+) lines?\):$")


def step_fingerprint() -> str:
    """sha256 of the step templates (kept apart from :func:`template_fingerprint`, which the
    runs of the other protocols record)."""
    texts = [ACTION_TASK_TEMPLATE, STEP_TAG_TEMPLATE, *STEP_PARTS, INSTANCE_STEPS_HEADER]
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()


def action_block(observation: str, task: str, action_format: str) -> str:
    """The query block of one environment step: the observation as the question, the line
    naming the task, then the action format (no trailing newline)."""
    return (QUESTION_TEMPLATE.format(question=observation)
            + ACTION_TASK_TEMPLATE.format(task=task) + action_format)


def instance_steps_section(blocks: Sequence[str]) -> str:
    """The steps already taken in the instance in progress (step blocks, oldest first) as the
    section opening a step's prompt; '' when there are none (the first step)."""
    if not blocks:
        return ""
    return INSTANCE_STEPS_HEADER + "".join(placed(b) for b in blocks)


def split_instance_steps(memory: str) -> tuple[str, str]:
    """(the rest, the instance's own steps section) of a prompt's memory part: the section
    starts at the last :data:`INSTANCE_STEPS_HEADER` ('' when there is none)."""
    at = memory.rfind(INSTANCE_STEPS_HEADER)
    if at < 0 or (at > 0 and memory[at - 1] != "\n"):
        return memory, ""
    return memory[:at], memory[at:]


def parse_action_block(block: str) -> tuple[str, str] | None:
    """(task, observation) of an action block, or None when ``block`` is not one.

    The last task line counts, so text added after the action format (a reminder) is ignored.
    """
    if not block.startswith(QUESTION_LABEL):
        return None
    found = list(_ACTION_TASK.finditer(block))
    if not found:
        return None
    last = found[-1]
    start = len(QUESTION_TEMPLATE.partition("{question}")[0])
    if last.start() < start + 1:
        return None
    return last.group(1), block[start:last.start() - 1]


def _lines(text: str) -> list[str]:
    text = text.rstrip()
    return text.split("\n") if text else []


def step_block(instance_id: str, step: int, observation: str, action: str, feedback: str
               ) -> str:
    """One remembered step (see the module docstring); each part is kept whole, its trailing
    whitespace dropped."""
    out = [STEP_TAG_TEMPLATE.format(instance_id=instance_id, step=step)]
    for label, text in zip(STEP_PARTS, (observation, action, feedback), strict=True):
        lines = _lines(text)
        out.append(f"{label} ({len(lines)} line{'' if len(lines) == 1 else 's'}):")
        out.extend(lines)
    return "\n".join(out)


@dataclass(frozen=True)
class ShownStep:
    """A step as read back from a prompt (``instance_id`` '' and ``step`` 0 when the source
    does not say)."""

    instance_id: str
    step: int
    observation: str
    action: str
    feedback: str


def parse_steps(text: str) -> list[ShownStep]:
    """The step blocks of ``text``, in the order shown; a block cut short is skipped."""
    lines = text.split("\n")
    out: list[ShownStep] = []
    i = 0
    while i < len(lines):
        tag = _STEP_TAG.match(lines[i])
        i += 1
        if tag is None:
            continue
        parts: list[str] = []
        at = i
        for label in STEP_PARTS:
            head = _STEP_PART.match(lines[at]) if at < len(lines) else None
            if head is None or head.group(1) != label:
                break
            n = int(head.group(2))
            if at + 1 + n > len(lines):
                break
            parts.append("\n".join(lines[at + 1:at + 1 + n]))
            at += 1 + n
        if len(parts) == len(STEP_PARTS):
            out.append(ShownStep(tag.group(1), int(tag.group(2)), *parts))
            i = at
    return out


def transcript_steps(messages: Sequence[Message]) -> list[ShownStep]:
    """The steps of a conversation: every assistant message answering a user message that
    ends in an action block. The observation is that block's; the feedback is the next user
    message up to its own query block, without a first line of the method's own (one ending
    in a colon, such as a "result of your last action" header) when more lines follow."""
    out: list[ShownStep] = []
    turns = [m for m in messages if m.role != "system"]
    for n, message in enumerate(turns):
        if message.role != "assistant" or n == 0 or turns[n - 1].role != "user":
            continue
        parsed = parse_action_block(split_prompt(turns[n - 1].content)[1])
        if parsed is None:
            continue
        feedback = ""
        if n + 1 < len(turns) and turns[n + 1].role == "user":
            after = turns[n + 1].content
            memory, block = split_prompt(after)
            feedback = memory if parse_action_block(block) is not None else after
            feedback = feedback.strip()
            head, sep, rest = feedback.partition("\n")
            if sep and head.rstrip().endswith(":") and rest.strip():
                feedback = rest.strip()
        out.append(ShownStep("", 0, parsed[1], message.content.strip(), feedback))
    return out
