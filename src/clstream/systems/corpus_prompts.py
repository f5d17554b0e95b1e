"""Prompts and reply parsing of the corpus-reading methods (ImprintBench §3.1, App. C,
Table 12; docs/imprint.md §8): the chunked summary, the memory scaffold and agentic RAG.

They belong to the systems layer, not to the ImprintBench package: the methods that send them
(:mod:`clstream.systems.chunked_summary`, :mod:`clstream.systems.scaffold`,
:mod:`clstream.systems.agentic_rag`, and :mod:`clstream.systems.oracle` recording their hash)
are systems, any protocol may run them, and systems never import a protocol (docs/design.md
§2.1). ImprintBench is where they were described, hence the version string's name, which
stays as recorded so that stored runs keep their prompt hash.

All wording is this project's own; the paper describes these prompts only by intent. The query
itself -- the protocol's rules and question block -- comes from the protocol; these methods add
memory sections in the layout of :mod:`clstream.core.layout` and, for their own model calls
(summarising, rewriting the scaffold, deciding to search), the requests below.

* Chunked summary: one call per chunk of documents asks for a summary of about ``target``
  tokens that keeps names, dates, values and changes of fact.
* Memory scaffold: one call per document asks for the whole memory rewritten, with its three
  sections (Active / Superseded / Uncertain) as ``## `` headings between ``<memory>`` tags,
  under a token budget. :func:`parse_scaffold` reads the reply; a reply lacking a section is
  refused (the method then keeps or extends its previous memory, never crashes).
* Agentic RAG: the search rules in two forms -- an OpenAI function tool ``search`` for models
  that take tools, and a one-line text protocol (``SEARCH: <words>``) for those that do not
  (:func:`parse_search_lines`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from clstream.core import layout
from clstream.core.types import Message

PROMPT_TEMPLATE_VERSION = "imprint-methods-v1"

# --- chunked summary -----------------------------------------------------------------------

SUMMARY_SYSTEM = (
    "You condense documents into notes for a reader who will later answer questions about "
    "them without ever seeing the originals. Write only the notes."
)

SUMMARY_PROMPT = (
    "The documents below are in the order they were published. Summarise them in at most "
    "about {target} tokens. Keep the facts a question could ask about: names, roles, dates, "
    "numbers and identifiers, and every change of a fact (who replaced whom, a value that "
    "moved, a claim later denied), saying which version is the later one. Prefer short plain "
    "sentences; write no introduction.\n\n"
    "Documents:\n\n{documents}\n\nSummary:"
)

SUMMARIES_HEADER = "Summaries of the documents read so far, oldest first:\n\n"

EXTRACTIVE_LABEL = "extractive stand-in: selected sentences, not a model summary"

# --- memory scaffold -----------------------------------------------------------------------

SECTIONS = ("Active", "Superseded", "Uncertain")

SCAFFOLD_SYSTEM = (
    "You keep the long-term memory of an assistant that reads a stream of documents and will "
    "later have to answer questions from this memory alone, with the documents gone."
)

SCAFFOLD_PROMPT = (
    "The memory has three sections:\n"
    "- Active: facts that hold now, one per line, with their date when known;\n"
    "- Superseded: facts that held once and were replaced, each saying what replaced it;\n"
    "- Uncertain: claims that are unconfirmed, disputed or ambiguous.\n\n"
    "Rewrite the whole memory so that it also takes in the new document below. Stay within "
    "about {budget} tokens: shorten and merge older lines before dropping anything a question "
    "could still ask about, and move a fact from Active to Superseded when the new document "
    "changes it.\n\n"
    "Current memory:\n{memory}\n\n"
    "New document:\n{document}\n\n"
    "Reply with the complete new memory between a line <memory> and a line </memory>, using "
    "the headings '## Active', '## Superseded' and '## Uncertain' in that order."
)

EMPTY_MEMORY = "(nothing yet)"
SCAFFOLD_HEADER = "Memory kept from the documents read so far:"

_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?[*_]{0,2}(active|superseded|uncertain)[*_]{0,2}[ \t]*:?[*_]{0,2}"
    r"[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_MEMORY_BLOCK = re.compile(r"<memory>(.*?)(?:</memory>|\Z)", re.DOTALL | re.IGNORECASE)
_EMPTY_LINE = re.compile(r"^[-*\s]*\(?(?:empty|none|nothing(?: yet)?)\)?\.?\s*$", re.IGNORECASE)


def render_scaffold(sections: dict[str, list[str]]) -> str:
    """The memory as shown and stored: each section under its ``## `` heading."""
    parts = []
    for name in SECTIONS:
        lines = sections.get(name, [])
        parts.append(f"## {name}\n" + "".join(f"{line}\n" for line in lines))
    return "\n".join(parts)


def scaffold_is_empty(sections: dict[str, list[str]]) -> bool:
    return not any(sections.get(name) for name in SECTIONS)


def scaffold_messages(memory: dict[str, list[str]], document: str, budget: int
                      ) -> tuple[Message, ...]:
    shown = EMPTY_MEMORY if scaffold_is_empty(memory) else render_scaffold(memory).strip()
    prompt = SCAFFOLD_PROMPT.format(budget=budget, memory=shown, document=document.strip())
    return (Message(role="system", content=SCAFFOLD_SYSTEM),
            Message(role="user", content=prompt))


@dataclass(frozen=True)
class ScaffoldParse:
    """A rewrite read from a reply: the sections (None when refused) and why it was refused."""

    sections: dict[str, list[str]] | None
    problem: str = ""


def parse_scaffold(reply: str) -> ScaffoldParse:
    """The three sections of a rewritten memory.

    The text between ``<memory>`` and ``</memory>`` is read (the whole reply when there is no
    such block; an unclosed block runs to the end). Headings may be written ``## Active``,
    ``Active:`` or ``**Active**``; each section holds the non-blank lines up to the next
    heading, without placeholder lines such as ``(empty)``. The first heading of each name
    counts. A reply missing any of the three headings is refused, naming the missing ones.
    """
    blocks = _MEMORY_BLOCK.findall(reply)
    body = blocks[-1] if blocks else reply
    found: dict[str, re.Match[str]] = {}
    for m in _HEADING.finditer(body):
        found.setdefault(m.group(1).capitalize(), m)
    missing = [name for name in SECTIONS if name not in found]
    if missing:
        what = "empty reply" if not reply.strip() else f"missing section(s) {', '.join(missing)}"
        return ScaffoldParse(None, what)
    heads = sorted(_HEADING.finditer(body), key=lambda m: m.start())
    sections: dict[str, list[str]] = {}
    for name in SECTIONS:
        start = found[name].end()
        end = next((h.start() for h in heads if h.start() > start), len(body))
        lines = [line.strip() for line in body[start:end].splitlines()]
        sections[name] = [line for line in lines if line and not _EMPTY_LINE.match(line)]
    return ScaffoldParse(sections)


# --- agentic RAG ---------------------------------------------------------------------------

SEARCH_TOOL_NAME = "search"
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SEARCH_TOOL_NAME,
        "description": ("Look up the earlier documents: returns the one that best matches the "
                        "query among those not shown to you yet."),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string",
                                     "description": "the words to look for"}},
            "required": ["query"],
        },
    },
}

SEARCH_RULES_TOOLS = (
    "Before answering you may look up the documents you were given earlier with the search "
    "tool; each call shows you the best-matching document you have not seen yet. You may call "
    "it at most {k} times in all. Once you have what you need, or when searching cannot help, "
    "answer as the question asks."
)

SEARCH_RULES_TEXT = (
    "Before answering you may look up the documents you were given earlier. To search, reply "
    "with one line 'SEARCH: <words to look for>' and nothing else; the best-matching document "
    "you have not seen yet is then shown to you. You may search at most {k} times in all. "
    "Once you have what you need, or when searching cannot help, answer as the question asks."
)

SEARCH_LOG_HEADER = "Your searches so far ({used} of {k} used):"
SEARCH_FOUND = '{n}. "{query}" -> document [chunk index {index}]{title}'
SEARCH_NOTHING = '{n}. "{query}" -> no further document matched'
FOUND_HEADER = "Documents found by your searches, in the order they were written:\n\n"

_SEARCH_LINE = re.compile(r"^[ \t*`#>-]*search[ \t*]*:[ \t*`]*(.*?)[ \t*`]*$",
                          re.IGNORECASE | re.MULTILINE)
_ANSWER_MARK = re.compile(r"""["'*#]*\s*answer\s*["'*#]*\s*:""", re.IGNORECASE)


def search_rules(k: int, tools: bool) -> str:
    return (SEARCH_RULES_TOOLS if tools else SEARCH_RULES_TEXT).format(k=k)


def parse_search_lines(reply: str) -> list[str]:
    """The queries of the ``SEARCH: ...`` lines written before any answer marker (a reply
    that answers first and searches after is an answer); empty queries are skipped."""
    mark = _ANSWER_MARK.search(reply)
    head = reply[: mark.start()] if mark is not None else reply
    return [m.group(1).strip() for m in _SEARCH_LINE.finditer(head) if m.group(1).strip()]


def tool_query(call: dict[str, Any]) -> tuple[str, str]:
    """(query, problem) of one ``search`` tool call: its ``query`` argument; arguments that
    are not a JSON object with a string ``query`` give the raw argument text as the query
    and say so."""
    raw = str(call.get("arguments") or "")
    try:
        args = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw.strip(), "arguments are not JSON"
    if isinstance(args, dict) and isinstance(args.get("query"), str):
        return args["query"].strip(), ""
    return raw.strip(), "no string 'query' argument"


def template_fingerprint() -> str:
    """sha256 of every template of this module and the layout's, recorded by each method."""
    texts = [PROMPT_TEMPLATE_VERSION, SUMMARY_SYSTEM, SUMMARY_PROMPT, SUMMARIES_HEADER,
             SCAFFOLD_SYSTEM, SCAFFOLD_PROMPT, EMPTY_MEMORY, SCAFFOLD_HEADER,
             json.dumps(SEARCH_TOOL, sort_keys=True), SEARCH_RULES_TOOLS, SEARCH_RULES_TEXT,
             SEARCH_LOG_HEADER, SEARCH_FOUND, SEARCH_NOTHING, FOUND_HEADER,
             layout.template_fingerprint()]
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()
