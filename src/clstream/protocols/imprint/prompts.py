"""How an ImprintBench item is asked (docs/imprint.md §2), in the one prompt structure of
:mod:`clstream.core.layout`.

The paper asks the bare question and judges the whole reply (ImprintBench App. C.3, E); the
rules here add only what every method needs in order to be judged the same way: the setting's
subject, to answer from what the method knows, to say so when nothing supports an answer (the
BoundAbs family scores abstention), and to end with one answer line. The judges read the text
after the last answer marker when there is one (:mod:`clstream.protocols.imprint.judging`), so reasoning
before it cannot be mistaken for the answer. The same rules go to every method; only the memory
each one shows differs.
"""

from __future__ import annotations

import hashlib

from clstream.core import layout
from clstream.core.types import Query
from clstream.protocols.imprint.schema import Item

SUBJECTS = {
    "news": "events reported in the news over a recent period",
    "code": "the public API of Python libraries, including features added in recent releases",
    "persona": "the user you have been talking with: their circumstances and preferences, "
               "as they stand now",
}

INSTRUCTIONS = (
    "You answer questions about {subject}. Use what you know, including anything shown to you "
    "before the question. When the question asks about something you have no information on, "
    "say that you have no record of it rather than guessing. Keep the answer short."
)

OPEN_FORMAT = ("End your reply with one line '## Answer: <answer>' holding only the answer "
               "(for a yes/no question, Yes or No).")
IDENTIFIER_FORMAT = ("End your reply with one line '## Answer: <identifier>' holding only the "
                     "Python identifier, without call parentheses.")
LIST_FORMAT = ("End your reply with one line '## Answer: <names>' listing the names, separated "
               "by commas.")
CHOICE_FORMAT = layout.DEFAULT_CHOICE_FORMAT


def answer_format(item: Item) -> str:
    if item.judge == "choice":
        return CHOICE_FORMAT
    if item.judge == "identifier":
        return LIST_FORMAT if item.family == "ImpRel" else IDENTIFIER_FORMAT
    return OPEN_FORMAT


def query_of(item: Item) -> Query:
    """The query a system is asked for ``item``. Only the oracle reads ``source_doc_ids``."""
    options = tuple(item.options)
    return Query(
        id=item.item_id, text=item.question, options=options,
        kind="mc" if item.judge == "choice" else "open",
        meta={"source_doc_ids": list(item.source_doc_ids), "instance_id": item.instance_id},
        instructions=INSTRUCTIONS.format(subject=SUBJECTS[item.setting]),
        prompt=layout.question_block(item.question, options, answer_format(item)),
    )


def template_fingerprint() -> str:
    """sha256 of every template here and the layout's, recorded with each run."""
    parts = [INSTRUCTIONS, *SUBJECTS.values(), OPEN_FORMAT, IDENTIFIER_FORMAT, LIST_FORMAT,
             CHOICE_FORMAT, layout.template_fingerprint()]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()
