"""The builtin model's side of the ``hipporag`` method (docs/agentic.md "hipporag"): triples
from the simple sentences of a passage, and the entities of a question, in the formats of
:mod:`clstream.systems.hipporag.formats`.

Extraction reads each clause (sentences split at ``.!?`` and line breaks, clauses at ``,;:``
and at "and"/"then" before a name) as subject, verb phrase, object:

* subject: the clause's opening run of capitalised names ("Mary", "Dunost Crossing"; leading
  adverbs such as "then" skipped; pronouns and function words are not names), or "the X"
  (written X); a clause opening otherwise states no triple here;
* object: a closing run of names, the verb phrase being everything between ("Paris is the
  capital of France." -> Paris | is the capital of | France); else the words after the last
  determiner or preposition, the determiner left out of the verb phrase and a preposition kept
  in it ("John picked up the apple." -> John | picked up | apple; "Mary went to the kitchen."
  -> Mary | went to | kitchen); else the words after the verb ("Mary travelled home.");
* a verb phrase longer than :data:`MAX_RELATION` words, or an object longer than
  :data:`MAX_OBJECT`, is narrative rather than a fact: the clause is skipped.

Question entities: the runs of capitalised names and the nouns after a determiner ("the
apple") in the question. Deterministic and reading only the prompt. The builtin model reaches
:func:`reply` through the registry (kind ``"builtin_reply"``, entry ``hipporag``:
:func:`replier`), never by import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import Message
from clstream.models.builtin.reader import CAP_STOP, DETERMINERS, is_name
from clstream.systems.hipporag import formats

MAX_RELATION = 5
MAX_OBJECT = 4

_EXTRACT_HEAD = formats.EXTRACT_PROMPT.partition(formats.PASSAGE_OPEN)[0]
_QUERY_HEAD = formats.QUERY_PROMPT.partition(formats.QUESTION_OPEN)[0]
_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_CLAUSE = re.compile(r"[,;:()]|\s(?:and|then|and then)\s(?=[A-Z])")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_LEADING = frozenset("""then later soon also finally afterwards meanwhile next and but so
    after that eventually suddenly""".split())
PREPOSITIONS = frozenset("""to into onto in on at from with by for of over under near
    toward towards across through behind beside inside outside around about""".split())
_NOT_NOUNS = CAP_STOP | PREPOSITIONS | frozenset("last first next same".split())


def reply(messages: Sequence[Message]) -> str | None:
    """The reply to a hipporag extraction or question-entity request, else None."""
    last = messages[-1].content if messages else ""
    if last.startswith(_EXTRACT_HEAD):
        passage = formats.between(last, formats.PASSAGE_OPEN, formats.PASSAGE_CLOSE)
        if passage is not None:
            lines = [formats.triple_line(*t) for t in triples(passage)]
            return "\n".join(lines) if lines else formats.NONE_LINE
    if last.startswith(_QUERY_HEAD):
        question = formats.between(last, formats.QUESTION_OPEN, formats.QUESTION_CLOSE)
        if question is not None:
            lines = [formats.entity_line(name) for name in entities(question)]
            return "\n".join(lines) if lines else formats.NONE_LINE
    return None



def replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: :func:`reply`, which needs no policy."""
    return reply

def triples(text: str) -> list[tuple[str, str, str]]:
    """The (subject, relation, object) triples of ``text``'s simple clauses, each once."""
    found: dict[tuple[str, str, str], None] = {}
    for sentence in _SENTENCE.split(text):
        for clause in _CLAUSE.split(sentence):
            triple = clause_triple(_TOKEN.findall(clause))
            if triple is not None:
                found.setdefault(triple, None)
    return list(found)


def _name_run(tokens: Sequence[str], start: int) -> int:
    end = start
    while end < len(tokens) and is_name(tokens[end]):
        end += 1
    return end


def clause_triple(tokens: Sequence[str]) -> tuple[str, str, str] | None:
    """The triple one clause states, or None (see the module docstring)."""
    i = 0
    while i < len(tokens) and tokens[i].lower() in _LEADING:
        i += 1
    end = _name_run(tokens, i)
    if end > i:
        subject = " ".join(tokens[i:end])
    elif i + 2 < len(tokens) and tokens[i].lower() == "the" and tokens[i + 1].islower():
        subject, end = tokens[i + 1], i + 2
    else:
        return None
    rest = list(tokens[end:])
    if len(rest) < 2 or not rest[0].isalpha() or not rest[0].islower() \
            or rest[0] in PREPOSITIONS or rest[0] in DETERMINERS:
        return None  # the verb phrase opens with a verb
    start = len(rest)
    while start > 1 and is_name(rest[start - 1]):
        start -= 1
    if start < len(rest):
        relation, obj = rest[:start], rest[start:]
    else:
        cut = max((n for n in range(1, len(rest) - 1)
                   if rest[n].lower() in DETERMINERS or rest[n].lower() in PREPOSITIONS),
                  default=None)
        if cut is None:
            relation, obj = rest[:1], rest[1:]
        else:
            keep = rest[cut].lower() in PREPOSITIONS  # a preposition stays in the relation
            relation, obj = rest[:cut + 1] if keep else rest[:cut], rest[cut + 1:]
            while len(relation) > 1 and relation[-1].lower() in DETERMINERS:
                relation = relation[:-1]
    if not relation or not obj or len(relation) > MAX_RELATION or len(obj) > MAX_OBJECT:
        return None
    return subject, " ".join(relation), " ".join(obj)


def entities(question: str) -> list[str]:
    """The names and the nouns after determiners in ``question``, each once, in order."""
    tokens = _TOKEN.findall(question)
    found: dict[str, None] = {}
    i = 0
    while i < len(tokens):
        end = _name_run(tokens, i)
        if end > i:
            found.setdefault(" ".join(tokens[i:end]), None)
            i = end
            continue
        if tokens[i].lower() in DETERMINERS:
            j = i + 1
            while j < len(tokens) and tokens[j].lower() in _NOT_NOUNS and tokens[j].islower():
                j += 1
            if j < len(tokens) and tokens[j].islower():
                found.setdefault(tokens[j], None)
        i += 1
    return list(found)
