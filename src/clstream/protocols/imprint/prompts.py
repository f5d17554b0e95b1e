"""How an ImprintBench item is asked (docs/imprint.md §2), in the one prompt structure of
:mod:`clstream.core.layout`.

Two prompt styles, named in the run spec (``params.prompt``) so that runs asked differently
never share a run id:

* ``bare`` (the default): as the paper asks (ImprintBench App. C.3, E). The system message
  says only what the material shown before the question is; the user block is the question
  itself. Two items need a reply shape the paper also prescribes: a multiple-choice item
  lists its options and asks for one letter, and a code identifier item asks for the
  identifier alone (App. D.2, the masked-snippet prompt). Nothing tells the model what to do
  when it lacks the answer, so an abstention on a BoundAbs item is the model's own.
* ``coached``: the bare prompt plus abstention coaching -- say there is no record rather than
  guess, keep it short -- and a closing ``## Answer:`` line for every item. "No record of" is
  one of the abstention judge's phrases (App. E.1), so this style raises BoundAbs; it is for
  comparisons with harnesses that coach, never for figures set beside the paper's.

The judges read the text after the last answer marker when there is one and the whole reply
otherwise (:mod:`clstream.protocols.imprint.judging`), so both styles are judged alike. The
same prompt goes to every method; only the memory each one shows differs.
"""

from __future__ import annotations

import hashlib

from clstream.core import layout
from clstream.core.types import Query
from clstream.protocols.imprint.schema import Item

PROMPT_STYLES: tuple[str, ...] = ("bare", "coached")
DEFAULT_PROMPT_STYLE = "bare"

SUBJECTS = {
    "news": "events reported in the news over a recent period",
    "code": "the public API of Python libraries, including features added in recent releases",
    "persona": "the user you have been talking with: their circumstances and preferences, "
               "as they stand now",
}

BARE_INSTRUCTIONS = (
    "Answer the question at the end of the user message. It is about {subject}. Anything "
    "shown before the question is material you have been given on that subject."
)
COACHING = (
    " Use what you know, including that material. When the question asks about something "
    "you have no information on, say that you have no record of it rather than guessing. "
    "Keep the answer short."
)

BARE_CHOICE_FORMAT = "Reply with the letter of one option."
BARE_IDENTIFIER_FORMAT = ("Reply with only the Python identifier, without call parentheses, "
                          "code fences or explanation.")
OPEN_FORMAT = ("End your reply with one line '## Answer: <answer>' holding only the answer "
               "(for a yes/no question, Yes or No).")
IDENTIFIER_FORMAT = ("End your reply with one line '## Answer: <identifier>' holding only the "
                     "Python identifier, without call parentheses.")
LIST_FORMAT = ("End your reply with one line '## Answer: <names>' listing the names, separated "
               "by commas.")
CHOICE_FORMAT = layout.DEFAULT_CHOICE_FORMAT


def answer_format(item: Item, style: str = "coached") -> str:
    """The reply-shape line closing the question block (empty for a bare open question)."""
    if style == "bare":
        if item.judge == "choice":
            return BARE_CHOICE_FORMAT
        if item.judge == "identifier" and item.family != "ImpRel":
            return BARE_IDENTIFIER_FORMAT
        return ""
    if item.judge == "choice":
        return CHOICE_FORMAT
    if item.judge == "identifier":
        return LIST_FORMAT if item.family == "ImpRel" else IDENTIFIER_FORMAT
    return OPEN_FORMAT


def instructions(item: Item, style: str) -> str:
    """The system message: what the material is, plus the coaching in the coached style."""
    text = BARE_INSTRUCTIONS.format(subject=SUBJECTS[item.setting])
    return text + COACHING if style == "coached" else text


def query_of(item: Item, style: str = DEFAULT_PROMPT_STYLE) -> Query:
    """The query a system is asked for ``item``. Only the oracle reads ``source_doc_ids``."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt style {style!r} is not one of {', '.join(PROMPT_STYLES)}")
    options = tuple(item.options)
    return Query(
        id=item.item_id, text=item.question, options=options,
        kind="mc" if item.judge == "choice" else "open",
        meta={"source_doc_ids": list(item.source_doc_ids), "instance_id": item.instance_id},
        instructions=instructions(item, style),
        prompt=layout.question_block(item.question, options,
                                     answer_format(item, style)).rstrip("\n"),
    )


def template_fingerprint() -> str:
    """sha256 of every template here and the layout's, recorded with each run."""
    parts = [BARE_INSTRUCTIONS, COACHING, *SUBJECTS.values(), BARE_CHOICE_FORMAT,
             BARE_IDENTIFIER_FORMAT, OPEN_FORMAT, IDENTIFIER_FORMAT, LIST_FORMAT, CHOICE_FORMAT,
             layout.template_fingerprint()]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()
