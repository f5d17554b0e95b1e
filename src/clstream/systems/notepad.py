"""In-context learning with a notepad (docs/clbench.md §6, the CL-Bench ``notepad`` system).

Memory: a notepad (free text the model writes), the feedback that closed the last instance,
and the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`).

Output field. The system message adds the notepad's rules to the query's instructions: a reply
may hold a block between ``<notepad>`` and ``</notepad>``, which replaces the whole notepad
(an empty block empties it; no block keeps it). The block is cut out of the reply before the
protocol reads it, so the answer or action is what remains (the authors' output schema keeps
the notepad in a field of its own). Since ``respond`` leaves memory alone, the replacement is
applied when ``observe`` receives that reply's outcome (an observation or feedback).

Instances. The conversation is cleared when an instance ends -- an observation with
``done=True``, final feedback -- and the outcome that closed it is kept: an observation's text,
or for feedback the task, answer, verdict and message in the layout's experience-block form.
That closing feedback and the current notepad (each when not empty) open the conversation of
every request, as the authors inject them at the start of an instance; a notepad rewritten
within an instance shows from its next step on. Texts: the chunks of one stream are one instance, read as tagged
passages in the conversation (a chunk of another stream starts a new one); documents read in
a row are one instance. The notepad is never cleared (a fresh system is the stateless arm).

Snapshots hold the notepad, the closing feedback, and the conversation of an instance in
progress, so a run resumes at any instance boundary; a reply waiting for its outcome is not
memory and is not kept.

The builtin model's replies to the notepad's action prompts are here too (:func:`builtin_replier`,
registered under the registry kind ``"builtin_reply"`` as ``notepad``; docs/clbench.md §6): when
the task's builtin policy keeps notes, it acts with ``act_from_notes(notepad lines, the
instance's turns, observation)`` and ends the reply with a notepad block holding the merged
notes of the old notepad and of the instance's turns, the step being taken included (its
feedback still unknown) -- a one-step instance would otherwise never reach the notepad -- and
of the feedback that closed the last instance when the prompt carries it (read as a step of its
own). Idempotent, so it is written at every step.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.environment import NoteTaker, Turn, merge_notes
from clstream.core.events import Feedback, Observation
from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import GenerationResult, Sample
from clstream.systems.conversation import (
    BUDGET_PARAMS,
    Asked,
    EpisodeMethod,
    int_field,
    str_field,
)
from clstream.systems.conversation.builtin_replies import (
    NoteReplies,
    action_json,
    lines_after,
)
from clstream.systems.conversation.prompts import text_section

# --- prompts --------------------------------------------------------------------------------

NOTEPAD_RULES = (
    "You also keep a notepad that stays with you from one instance of the work to the next, "
    "while the conversation itself is cleared whenever an instance ends. Use it for whatever "
    "you want to carry forward: facts about the environment, what worked, what failed, plans. "
    "When the notepad is not empty it is shown before the current request. To change it, put "
    "a block in your reply that opens with a line <notepad> and closes with a line </notepad>: "
    "the text between the two lines becomes the whole new notepad, replacing the old one, so "
    "repeat anything you still need. Leave the block out to keep the notepad as it is. The "
    "block is taken out of your reply before the reply is read, so never put your answer or "
    "action inside it."
)
NOTEPAD_HEADER = "Your notepad, as you last wrote it:"
CARRY_HEADER = "Feedback received at the end of the previous instance:"


# --- the notepad field ------------------------------------------------------------------------

_NOTEPAD = re.compile(  # a block alone in a code fence goes with its fence
    r"```[\w+-]*[ \t]*\n\s*<notepad>(.*?)</notepad>\s*?\n[ \t]*```|<notepad>(.*?)</notepad>",
    re.IGNORECASE | re.DOTALL,
)


def split_notepad(reply: str) -> tuple[str, str | None]:
    """(the reply without its notepad blocks, the new notepad or None).

    A block is the text between ``<notepad>`` and ``</notepad>`` (any case, on their own
    lines or not); the last complete block is the new notepad (an empty block empties it).
    Complete blocks are cut out of the reply (with their code fence when a block fills one); an
    opening tag that is never closed is left in place and updates nothing.
    """
    blocks = list(_NOTEPAD.finditer(reply))
    if not blocks:
        return reply, None
    rest = re.sub(r"\n{3,}", "\n\n", _NOTEPAD.sub("", reply)).strip()
    last = blocks[-1]
    return rest, (last.group(1) if last.group(1) is not None else last.group(2)).strip()


class Notepad(EpisodeMethod):
    """A notepad rewritten through the replies, the conversation cleared per instance."""

    name = "notepad"
    summary = "a notepad rewritten through the replies; the conversation cleared per instance"
    params = dict(BUDGET_PARAMS)
    templates: ClassVar[dict[str, object]] = {
        "NOTEPAD_RULES": NOTEPAD_RULES, "NOTEPAD_HEADER": NOTEPAD_HEADER,
        "CARRY_HEADER": CARRY_HEADER}
    keeps_texts_in_transcript: ClassVar[bool] = True

    def _clear_method(self) -> None:
        self.notepad = ""
        self.carry = ""  # the feedback that closed the last instance

    # --- answering -----------------------------------------------------------------------

    def _rules(self) -> str:
        return NOTEPAD_RULES

    def _head(self) -> list[str]:
        return [text_section(CARRY_HEADER, self.carry),
                text_section(NOTEPAD_HEADER, self.notepad)]

    def _split_reply(self, text: str) -> tuple[str, str | None]:
        return split_notepad(text)

    def _finish(self, result: GenerationResult) -> tuple[GenerationResult, str, str | None]:
        """Cut the notepad block out of every sample; the first sample's block is kept."""
        if not result.ok or not result.samples:
            return result, "", None
        split = [split_notepad(s.text) for s in result.samples]
        samples = [Sample(text=answer, reasoning=s.reasoning, finish_reason=s.finish_reason)
                   for s, (answer, _) in zip(result.samples, split, strict=True)]
        answer, update = split[0]
        return result.model_copy(update={"samples": samples}), answer, update

    # --- updating ------------------------------------------------------------------------

    async def _after_step(self, event: Observation | Feedback, asked: Asked | None
                          ) -> list[GenerationResult]:
        update = self._extra_of(event, asked)
        if update is not None:
            self.notepad = update
        return []

    async def _at_end(self, event: Observation | Feedback) -> list[GenerationResult]:
        if isinstance(event, Observation):
            self.carry = event.text.strip()
        else:
            answer = split_notepad(event.answer)[0]
            self.carry = layout.experience_block(layout.Experience(
                event.query_text, answer, event.message, event.success)).strip()
        return []

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"notepad": self.notepad, "carry": self.carry, **self._dump_episode(),
                "next_index": self.next_index}

    def _load(self, memory: dict[str, Any]) -> None:
        self.notepad = str_field(memory, "notepad")
        self.carry = str_field(memory, "carry")
        self._load_episode(memory)
        self.next_index = int_field(memory, "next_index")


# --- the builtin model's replies (module docstring) ------------------------------------------


def builtin_replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: :class:`NotepadReplies` over the builtin model's policies."""
    return NotepadReplies(policy_of).reply


class NotepadReplies(NoteReplies):
    """The builtin model's reply to a notepad action prompt whose task's policy keeps notes;
    None for every other request."""

    def claims_action(self, system: str, memory: str) -> bool:
        return NOTEPAD_RULES in system

    def act(self, policy: NoteTaker, body: str, memory: str, turns: list[Turn],
            observation: str) -> str:
        old = lines_after(body, NOTEPAD_HEADER)
        action = action_json(policy.act_from_notes(old, turns, observation))
        step = Turn(observation, action, "")
        # The feedback that closed the last instance (its last step's result, shown once at
        # the start of the next) is a step of its own whose request is no longer shown.
        carried = "\n".join(lines_after(body, CARRY_HEADER))
        closing = policy.notes([Turn("", "", carried)]) if carried else []
        notes = merge_notes(policy, [*old, *closing, *policy.notes([*turns, step])])
        return f"{action}\n<notepad>\n" + "\n".join(notes) + "\n</notepad>"
