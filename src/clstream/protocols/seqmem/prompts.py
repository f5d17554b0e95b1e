"""What the SeqMem-Eval protocol asks (docs/seqmem.md §2.1, §4): the solver rules and the task block.

The wording is this project's own. The runner puts :data:`SOLVER_SYSTEM` into every query's
``instructions`` and :func:`task_block` into its ``prompt``: the task text, its lettered
options (``A. ...``) if any, and the answer-format instruction for its kind (the evaluator's
extraction rules, docs/seqmem.md §4). A memory method lays them out with its memory sections in the
one structure of :mod:`clstream.core.layout`: the system message, then one user message with
the memory sections first and this block last.
"""

from __future__ import annotations

from collections.abc import Sequence

from clstream.core import layout
from clstream.core.layout import Experience as Exemplar  # noqa: F401  (composing prompts)
from clstream.core.layout import experiences_section as exemplars_section  # noqa: F401
from clstream.core.types import Message, Query

PROMPT_TEMPLATE_VERSION = "seqmem-v1"

SOLVER_SYSTEM = (
    "You solve a sequence of tasks, one at a time. Before the current task you may be shown "
    "what was kept from earlier tasks: past tasks with the answer given and the feedback it "
    "received, a cheatsheet, workflows or lessons. Use that material only where it fits the "
    "current task. Feedback on a past task is reliable about that task, including any correct "
    "answer it states. Then solve the current task and follow its answer format exactly."
)

KIND_INSTRUCTIONS = {
    "code": (
        "Write the complete Python function with the same name and signature (any other "
        "functions it needs go above it) in a single ```python fenced block. Do not add any "
        "other code block."
    ),
    "math": "Reason briefly, then put only the final answer in the last \\boxed{...} of your reply.",
    "mc": "Reason briefly, then end with one line '## Answer: <letter>' naming the correct option.",
    "api": (
        "Reply in this format: <<<domain>>>: <domain>, <<<api_call>>>: <one line of Python that "
        "calls the API>, <<<api_provider>>>: <framework>, <<<explanation>>>: <short "
        "explanation>, <<<code>>>: <short Python code>."
    ),
}
DEFAULT_INSTRUCTION = "End your reply with one line '## Answer: <answer>' holding only the answer."

_TEMPLATE_NAMES = ("PROMPT_TEMPLATE_VERSION", "SOLVER_SYSTEM", "DEFAULT_INSTRUCTION")


def template_fingerprint() -> str:
    """sha256 of every template string (with the shared layout's), recorded by runs as
    ``prompt_template_hash`` to tell prompt versions apart."""
    texts = [f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES]
    texts += [f"kind:{k}={v}" for k, v in sorted(KIND_INSTRUCTIONS.items())]
    return layout.fingerprint(texts)


def task_block(text: str, options: Sequence[str], kind: str) -> str:
    """The current task, last in the user message: question, options, answer format."""
    instruction = KIND_INSTRUCTIONS.get(kind, DEFAULT_INSTRUCTION)
    return layout.question_block(text.strip(), options, instruction)


def question_block(query: Query) -> str:
    return task_block(query.text, query.options, query.kind)


def ask(query: Query) -> Query:
    """``query`` with the solver rules as its instructions and its task block as prompt."""
    return Query(id=query.id, text=query.text, options=query.options, kind=query.kind,
                 meta=query.meta, instructions=SOLVER_SYSTEM, prompt=question_block(query))


def solver_messages(sections: Sequence[str], query: Query) -> tuple[Message, ...]:
    """What a memory method showing ``sections`` sends for a SeqMem task (tests, examples)."""
    return layout.query_messages(ask(query), sections)
