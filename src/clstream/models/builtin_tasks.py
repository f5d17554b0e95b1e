"""Memory-building requests the builtin model follows (docs/design.md §9): the rewrites,
extractions and link decisions of the agentic memory methods, and the item-writing stages
and audits of ``generate imprint --model`` (:mod:`clstream.core.imprint_writing`).

Each method's prompts are written in :mod:`clstream.core` (so a method and this reader share
one format), and each has a reader here: a function given the request's messages that returns
the reply when it recognises the request as its task, else None. The first reader that
recognises a request answers it; a request none recognises is read by the builtin reader as a
question. Readers are deterministic and read only the prompt, as the rest of the builtin model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clstream.core import imprint_writing
from clstream.core.types import Message
from clstream.models import builtin_amem, builtin_hipporag, builtin_memagent

TaskReader = Callable[[Sequence[Message]], str | None]

READERS: tuple[TaskReader, ...] = (builtin_amem.reply, builtin_memagent.reply,
                                   builtin_hipporag.reply, imprint_writing.builtin_reply)


def follow(messages: Sequence[Message]) -> str | None:
    """The reply of the first reader that recognises ``messages`` as its task, else None."""
    for reader in READERS:
        reply = reader(messages)
        if reply is not None:
            return reply
    return None
