"""Checks before a run writes anything (the "Trust" rule: a run that fails says why in one line).

:func:`check_endpoint` asks the model to check its endpoint (the optional
:class:`~clstream.core.contracts.Preflight` part), so a dead server or a wrong model name fails
in seconds, with the server's reason, and leaves no results directory behind. Where the server
reported its context length, a system whose prompt budget and answer cap cannot fit it
(``full:budget=120000`` against an 8,192-token server) is refused there too, in one line naming
both numbers, instead of failing request by request.

Every endpoint a run uses is checked so, before the run is registered: the answering model's
(each replica of ``--base-url``) and each other model's (the judge's ``--judge-base-url``, a
system's summarizer or updater, :func:`~clstream.driver.components.helper_endpoints`). A
failing check names the flag that gave the endpoint, so the line says what to change.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Sequence

from clstream.core.contracts import Model, check_model
from clstream.core.errors import ClstreamError, SpecError
from clstream.core.registry import resolve
from clstream.core.specs import ComponentSpec
from clstream.core.types import SamplingParams

# A system parameter bounds the prompt when its help says it is a prompt or context budget.
_PROMPT_BUDGET = re.compile(r"\b(prompt|context)( token)? budget\b")


def prompt_budget(system: ComponentSpec) -> int | None:
    """The most prompt tokens ``system`` sends, where a parameter bounds them (``budget`` of
    the context systems), else None."""
    params = getattr(resolve("system", system.name), "params", {}) or {}
    given = system.args
    for name, param in params.items():
        if _PROMPT_BUDGET.search(getattr(param, "help", "")):
            value = given.get(name, param.default)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def check_context(model: Model, sampling: SamplingParams, systems: Sequence[ComponentSpec]
                  ) -> None:
    """Refuse a system whose prompts and answers cannot fit the context the server reported."""
    server = getattr(model, "server", None)
    context = getattr(server, "context_length", None)
    if not isinstance(context, int):
        return
    for system in systems:
        budget = prompt_budget(system)
        if budget is not None and budget + sampling.max_tokens > context:
            room = max(0, context - sampling.max_tokens)
            raise SpecError(
                f"system {system.label!r} sends prompts of up to {budget:,} tokens plus "
                f"{sampling.max_tokens:,} answer tokens, but {model.name} serves a context of "
                f"{context:,} tokens; give a budget of at most {room:,} or a server with a "
                "longer context")


def check_endpoint(model: Model, sampling: SamplingParams,
                   systems: Sequence[ComponentSpec] = (), flag: str = "--base-url") -> None:
    """The model's endpoint check (raises a one-line error opening with ``flag``, the flag
    that gave the endpoint); its notes go to stderr. With ``systems``, also
    :func:`check_context`."""
    try:
        notes = asyncio.run(check_model(model, sampling))
    except ClstreamError as exc:
        exc.args = (f"flag {flag}: {exc}",)  # the same error, one line opening with the flag
        raise
    for note in notes:
        print(f"clstream: warning: {note}", file=sys.stderr)
    check_context(model, sampling, systems)
