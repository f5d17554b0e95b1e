"""Requests the builtin model follows (docs/design.md §9): the update calls of the memory
methods that make them, and requests in a protocol's own formats (the item-writing stages and
audits of ``generate imprint --model``).

A method's prompts and the builtin model's replies to them live beside the method, which
registers its replier under the registry kind ``"builtin_reply"``; a protocol declares its
repliers in its manifest. This module names no method and no protocol and reaches them only
through the registry, resolved on first use (docs/design.md §2.1: a model never imports a
system or a protocol). The first handler that claims a request answers it; a
request none claims is read by the builtin reader as a question or an action. Handlers are
deterministic and read only the prompt, as the rest of the builtin model.
"""

from __future__ import annotations

from collections.abc import Sequence

from clstream.core import registry
from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import Message


class TaskFollower:
    """The registered handlers, asked in turn (module docstring).
    ``policy_of`` is given to each method's replier, which is built on the first request."""

    def __init__(self, policy_of: PolicyLookup) -> None:
        self._policy_of = policy_of
        self._handlers: list[BuiltinReply] | None = None

    def handlers(self) -> list[BuiltinReply]:
        """Each registered handler (built once, in name order)."""
        if self._handlers is None:
            self._handlers = [registry.resolve("builtin_reply", name)(self._policy_of)
                              for name in registry.names("builtin_reply")]
        return self._handlers

    def follow(self, messages: Sequence[Message]) -> str | None:
        """The reply of the first handler that claims ``messages``, else None."""
        for handler in self.handlers():
            reply = handler(messages)
            if reply is not None:
                return reply
        return None
