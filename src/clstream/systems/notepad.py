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
"""

from __future__ import annotations

from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.events import Feedback, Observation
from clstream.core.types import GenerationResult, Sample
from clstream.systems.conversation import (
    BUDGET_PARAMS,
    Asked,
    EpisodeMethod,
    int_field,
    str_field,
)
from clstream.systems.conversation import prompts as conversation_prompts


class Notepad(EpisodeMethod):
    """A notepad rewritten through the replies, the conversation cleared per instance."""

    name = "notepad"
    summary = "a notepad rewritten through the replies; the conversation cleared per instance"
    params = dict(BUDGET_PARAMS)
    keeps_texts_in_transcript: ClassVar[bool] = True

    def _clear_method(self) -> None:
        self.notepad = ""
        self.carry = ""  # the feedback that closed the last instance

    # --- answering -----------------------------------------------------------------------

    def _rules(self) -> str:
        return conversation_prompts.NOTEPAD_RULES

    def _head(self) -> list[str]:
        return [conversation_prompts.text_section(conversation_prompts.CARRY_HEADER, self.carry),
                conversation_prompts.text_section(conversation_prompts.NOTEPAD_HEADER,
                                                  self.notepad)]

    def _split_reply(self, text: str) -> tuple[str, str | None]:
        return conversation_prompts.split_notepad(text)

    def _finish(self, result: GenerationResult) -> tuple[GenerationResult, str, str | None]:
        """Cut the notepad block out of every sample; the first sample's block is kept."""
        if not result.ok or not result.samples:
            return result, "", None
        split = [conversation_prompts.split_notepad(s.text) for s in result.samples]
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
            answer = conversation_prompts.split_notepad(event.answer)[0]
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
