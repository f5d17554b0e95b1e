"""The request format of ImprintBench's item-writing stages and audits, and the builtin
model's replies to it (docs/imprint.md §4.7).

The paper writes and audits its items with a model (ImprintBench App. D.1, D.3): a writer turns
each fact frame into a question, and audits drop items a model solves without the person's
history (forced commit, options only) or cannot solve from the facts alone (fact-list oracle),
and ImpRel items whose answer would suit anyone (universality). ``generate imprint --model M``
runs these stages over the procedural worlds; the protocol sends the requests and this module
says what they look like.

Every request is a system message naming the stage and a user message holding the stage's
instruction, then a JSON payload between :data:`PAYLOAD_OPEN` and :data:`PAYLOAD_CLOSE`. The
writer is given the fact frame and the project's own draft of the item and is asked to write
the item in its own words, keeping every name, date and number; it replies with one JSON
object. The audits reply with one labelled line (``GUESS:``, ``ANSWER:``, ``PICK:``,
``UNIVERSAL:``).

The builtin model's replies (:func:`builtin_reply`) are declared in the protocol's manifest
(``[builtin_replies]``, registry kind ``"builtin_reply"``, entry ``imprint-writing``:
:func:`replier`), so the model reaches them through the registry and imports no protocol
(docs/design.md §2.1). They are deterministic and read only the payload: as a writer it keeps the draft; forced to guess without the history it declines
(it has no knowledge of the person); shown the options alone it picks none; given the fact
list it picks the option that carries what the facts imply (the frame's decision levers);
asked whether an answer suits anyone it says no. Every prompt here is written for this
project.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import Message

PAYLOAD_OPEN = "<payload>"
PAYLOAD_CLOSE = "</payload>"
SYSTEM = ("You help build a benchmark of long-term memory. Stage: {stage}. Follow the "
          "instruction exactly and reply in the requested format only.")

WRITE = "write"
FORCED_COMMIT = "forced_commit"
FACT_ORACLE = "fact_oracle"
OPTION_BIAS = "option_bias"
UNIVERSALITY = "universality"
STAGES = (WRITE, FORCED_COMMIT, FACT_ORACLE, OPTION_BIAS, UNIVERSALITY)

INSTRUCTIONS = {
    WRITE: (
        "Below are the facts an evaluation item is built on ('frame') and a draft of the "
        "item ('draft'). Write the item in your own natural words. Keep every name, date and "
        "number of the draft; keep what the question asks and, for multiple choice, keep one "
        "option per draft option in the same order, each meaning what its draft means. Do "
        "not put the answer into the question and respect 'avoid' (words the question must "
        "not use). Reply with one JSON object with the same keys as the draft, nothing else."),
    FORCED_COMMIT: (
        "You know nothing about this person. Still, commit to one concrete best guess for "
        "the question below: a specific answer, or an option letter when there are options. "
        "Do not refuse. End with one line 'GUESS: <answer>'."),
    FACT_ORACLE: (
        "Here is everything known about the person: the list of facts, each with what it "
        "implies for everyday choices. Answer the question from these facts alone. End with "
        "one line 'ANSWER: <option letter or short answer>'."),
    OPTION_BIAS: (
        "Below are only the answer options of a multiple-choice question; the question and "
        "the person it is about are hidden. If one option looks more likely to be the "
        "intended answer from the options alone, name it; otherwise say NONE. End with one "
        "line 'PICK: <letter or NONE>'."),
    UNIVERSALITY: (
        "Would the answer below be the best choice for almost anyone asking this question, "
        "whatever their personal situation and preferences? End with one line "
        "'UNIVERSAL: YES' or 'UNIVERSAL: NO'."),
}
_LABELS = {FORCED_COMMIT: "GUESS", FACT_ORACLE: "ANSWER", OPTION_BIAS: "PICK",
           UNIVERSALITY: "UNIVERSAL"}
_STAGE = re.compile(r"Stage: ([a-z_]+)\.")


def messages(stage: str, payload: dict[str, Any]) -> tuple[Message, Message]:
    """The system and user messages of one request of ``stage``."""
    body = json.dumps(payload, ensure_ascii=False, sort_keys=True, indent=1)
    return (Message(role="system", content=SYSTEM.format(stage=stage)),
            Message(role="user",
                    content=f"{INSTRUCTIONS[stage]}\n\n{PAYLOAD_OPEN}\n{body}\n{PAYLOAD_CLOSE}"))


def read_request(request: Sequence[Message]) -> tuple[str, dict[str, Any]] | None:
    """(stage, payload) of a request in this format, else None."""
    if len(request) != 2 or request[0].role != "system" or request[1].role != "user":
        return None
    found = _STAGE.search(request[0].content)
    if found is None or found.group(1) not in STAGES or \
            request[0].content != SYSTEM.format(stage=found.group(1)):
        return None
    text = request[1].content
    start, end = text.find(PAYLOAD_OPEN), text.rfind(PAYLOAD_CLOSE)
    if start < 0 or end < start:
        return None
    try:
        payload = json.loads(text[start + len(PAYLOAD_OPEN):end])
    except json.JSONDecodeError:
        return None
    return (found.group(1), payload) if isinstance(payload, dict) else None


def labelled(reply: str, stage: str) -> str | None:
    """The value of the reply's last ``LABEL:`` line for ``stage``, else None."""
    found = re.findall(rf"^\s*\**{_LABELS[stage]}\**\s*:\s*(.+?)\s*$", reply,
                       re.IGNORECASE | re.MULTILINE)
    return found[-1].strip().strip("*").strip() if found else None


def json_reply(reply: str) -> dict[str, Any] | None:
    """The reply's JSON object (code fences and text around the outer braces ignored)."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(reply[start:end + 1])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _letters(n: int) -> str:
    return "ABCDEFGH"[:n]


def builtin_reply(request: Sequence[Message]) -> str | None:
    """The builtin model's reply to a request in this format (module docstring), else None."""
    read = read_request(request)
    if read is None:
        return None
    stage, payload = read
    if stage == WRITE:
        return json.dumps(payload.get("draft", {}), ensure_ascii=False, sort_keys=True)
    if stage == FORCED_COMMIT:
        return "Nothing about this person is known to me, so any guess is blind.\nGUESS: unknown"
    if stage == OPTION_BIAS:
        return "The options alone do not favour any one of them.\nPICK: NONE"
    if stage == UNIVERSALITY:
        return "The right choice depends on the person.\nUNIVERSAL: NO"
    levers = [str(f.get("implies", "")).casefold() for f in payload.get("facts", [])
              if isinstance(f, dict)]
    options = [str(o) for o in payload.get("options", [])]
    if options:
        scores = [sum(1 for lever in levers if lever and lever in o.casefold())
                  for o in options]
        best = max(scores)
        if best > 0 and scores.count(best) == 1:
            return f"The facts point to it.\nANSWER: {_letters(len(options))[scores.index(best)]}"
        return "The facts do not settle it.\nANSWER: none"
    values = [str(f.get("value", "")) for f in payload.get("facts", []) if isinstance(f, dict)]
    return f"From the facts.\nANSWER: {values[-1] if values else 'none'}"


def replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: :func:`builtin_reply`, which needs no policy and keeps no
    state."""
    del policy_of
    return builtin_reply
