"""The texts of the conversation-style memory methods (docs/clbench.md §6): ``icl``, ``notepad``,
``mem0`` and ``ace``, and the line formats their update calls ask for.

They live in the core, beside :mod:`clstream.core.layout`, because two sides read them: the
methods (:mod:`clstream.systems.conversation_prompts`, which parses the replies) write
prompts with them, and the builtin model recognises those prompts and answers in the formats
they ask for. All wording is this project's own.
"""

from __future__ import annotations

PROMPT_TEMPLATE_VERSION = "conversation-methods-v2"

# --- transcript turns (every method that keeps a conversation) ----------------------------

RESULT_TEMPLATE = "Result of your last action:\n{text}"
INSTANCE_DONE = "This instance is now complete."
FEEDBACK_HEADER = "The evaluator's verdict on your answer above:"
VERDICT_CHARS = 300  # clip of the task line and answer restated in a verdict
NO_REPLY = "(no reply)"
NO_REQUEST = "(request not kept)"

# --- notepad -------------------------------------------------------------------------------

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

# --- mem0-style fact memory ------------------------------------------------------------------

MEMORY_SYSTEM = (
    "You keep the long-term memory of an agent that works through a stream of tasks, texts "
    "and environment steps. Reply only in the exact format asked for."
)
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

# --- ace-style playbook ----------------------------------------------------------------------

PLAYBOOK_SECTIONS = (
    ("strategies", "Strategies and insights"),
    ("formulas", "Formulas and calculations"),
    ("code", "Code snippets and templates"),
    ("mistakes", "Mistakes to avoid"),
    ("heuristics", "Problem-solving heuristics"),
    ("clues", "Clues and indicators to look for"),
    ("other", "Other"),
)
"""(key, heading) of the playbook's sections, in the order shown; the curator names the key."""
SECTION_TEMPLATE = "## {heading} ({key})"
PLAYBOOK_HEADER = (
    "Playbook learned from earlier instances, by section (each bullet with its id and how "
    "often it helped or misled):"
)
BULLETS_USED_LABEL = "Bullets used:"
PLAYBOOK_RULES = (
    "A playbook of bullets learned from earlier instances may be shown before the current "
    "request. End your reply with one line naming the ids of the bullets that guided it, "
    "such as 'Bullets used: b1, b4' (or 'Bullets used: none'); that line is taken out before "
    "your reply is read, and it lets the usefulness of each bullet be tracked."
)

REFLECT_PROMPT = (
    "The agent has just finished one instance of its work. Below are the playbook bullets it "
    "said it used and the record of the instance: what it was shown, what it replied and what "
    "came back.\n\nBullets the agent used:\n{bullets}\n\nRecord of the instance:\n{trace}\n\n"
    "{outcome}Judge each bullet used: did it help here, did it mislead, or did it not "
    "matter? Then state what this instance teaches that would help in later instances: "
    "general strategies, how the environment behaves, mistakes to avoid -- not the details "
    "of this one instance.\n\n"
    "Reply only with lines of these forms:\nTAG <bullet id>: helpful | harmful | neutral\n"
    "LESSON: <one lesson>"
)
TRACE_SHOWN_LABEL = "[Shown to the agent]"
TRACE_REPLY_LABEL = "[The agent replied]"
OUTCOME_TEMPLATE = "The evaluator judged the final answer {outcome}.\n\n"

CURATE_PROMPT = (
    "You curate the playbook of an agent: short, reusable bullets that help it in later "
    "instances of its work, kept in sections. Below are the current playbook, the request "
    "that opened the instance just finished, and the lessons drawn from it. Add a bullet only "
    "for a lesson the playbook does not already cover; make each bullet one self-contained, "
    "actionable statement, and place it in the section it fits. Existing bullets stay as "
    "they are. The playbook may hold at most {budget} tokens and holds {used} now; bullets "
    "that would take it past that are not added.\n\nSections: {sections}\n\n"
    "Current playbook:\n{playbook}\n\nRequest that opened the instance:\n{context}\n\n"
    "Lessons from the last instance:\n{lessons}\n\n"
    "Reply with one line per new bullet, in the form\nADD <section>: <bullet text>\n"
    "or with the single line NONE when nothing needs adding."
)
CONTEXT_CHARS = 4000  # clip of the request shown to the curator
