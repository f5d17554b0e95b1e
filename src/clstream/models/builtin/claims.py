"""Claims and dated statements for the builtin reader: yes/no questions, and wh-questions
about the state of things at a date.

A yes/no question ("Did the Varek ministry sign the accord in early March 2031?", "Does
quillkit have a function at quillkit.text.fold_lines?", "As of 2031-03-12, is Ivo Brenn still
the finance minister?") is read as a claim: its content words, less question words and the
date anchor (month names, early/mid/late, years, ISO dates: the passages carry dates on their
own lines, not in the sentence that states the fact). The reader then looks for the sentence
that covers most of those words:

* nothing in the passages shares a name or word with the claim: it says it cannot find
  anything on it (an abstention, which is right when the corpus never said it);
* a sentence covers the claim (at least :data:`YES_COVER` of its words, and every name and
  number of it: :func:`key_words`): yes -- unless the claim is one of persistence ("is X
  still Y?") and that sentence or a later one on the same names reports a change the
  question does not mention (replaced, succeeded, resigned ..., or the amount as the value
  moved from);
* otherwise a related statement differs from the claim (a swapped name, date or amount), or a
  later one reports a change: no.

A claim anchored in a month ("in early March 2031") is also checked against the date of the
statement (a date in the sentence, else its passage's ``Date:`` line): a statement from
another month is not that claim.

A wh-question led by a date or a role ("As of 2031-03-12, who holds the post of ...?",
"Before becoming minister, what post had X held?") is answered from the statement covering
most of its words, the latest on ties: a person's name for who-questions, the value reached
("to 4.1 percent") for what-is questions, the post after "as" for what-post questions, and a
place name for in-which questions.

This is a lexical stand-in, deterministic and labelled as a baseline like the rest of the
builtin model; it never sees golds.
"""

from __future__ import annotations

import re

from clstream.models.builtin.reader import ReadText, content_words, is_name, tokens_of

AUXILIARIES = frozenset("is was are were did does do has have had can will".split())
QUESTION_WORDS = frozenset(
    """is was are were did does do has have had can will the a an of in on at to for by with
    as any still ever there that this it its their his her from into about yes no not also
    currently now""".split())
DATE_WORDS = frozenset(
    """january february march april may june july august september october november december
    early mid late week weeks month year""".split())
CHANGE_WORDS = frozenset(
    """replaced replacing replaces succeeded succeeding succeeds ousted resigned resigns
    stepped removed dismissed former formerly left leaves no longer""".split())
MONTHS = ("january february march april may june july august september october november "
          "december").split()
_MONTH_YEAR = re.compile(r"\b(" + "|".join(MONTHS) + r")\s+(\d{4})\b", re.IGNORECASE)
_DAY_MONTH_YEAR = re.compile(r"\b\d{1,2}\s+(" + "|".join(MONTHS) + r")\s+(\d{4})\b",
                             re.IGNORECASE)
_ISO_PARTS = re.compile(r"\b(\d{4})-(\d{2})-\d{2}\b")
_DATE_LINE = re.compile(r"^Date: (\d{4})-(\d{2})-\d{2}$")
_VALUE = re.compile(r"(?:\bto\s+)?(\d[\d,]*(?:\.\d+)?(?:\s+(?:percent|per\s+cent|[a-z]+(?:\s+per"
                    r"\s+[a-z]+)?))?)")
_ANCHOR_WORDS = frozenset("as of in on by during at the".split())
YES_COVER = 0.8
NEAR_BEST = 0.85
RELATED_COVER = 0.5
ABSTAIN = "I cannot find anything about that in what I was shown."
_SUFFIX = re.compile(r"(?<=[a-z]{3})(?:ing|ed|es|e|s|d)$")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*(?:[._]\w+)+\b")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_YEAR = re.compile(r"^(1[89]|2[01])\d\d$")


def is_yes_no(question: str) -> bool:
    """A question opening with an auxiliary verb (after an optional "As of <date>," lead)."""
    words = [w.lower() for w in tokens_of(question) if w.isalnum() or w == ","]
    if not words:
        return False
    if words[0] in AUXILIARIES:
        return True
    # "As of 2031-03-12, is X ...?", "In early March 2031, did X ...?": the auxiliary
    # follows a leading date anchor.
    if "," in words:
        lead, rest = words[:words.index(",")], words[words.index(",") + 1:]
        anchor = all(w.isdigit() or w in DATE_WORDS or w in _ANCHOR_WORDS for w in lead)
        return anchor and bool(rest) and rest[0] in AUXILIARIES
    return False


def stem(word: str) -> str:
    """A word less its inflection endings (``replaced``, ``replaces``, ``replace`` ->
    ``replac``; ``succeeded``, ``succeed`` -> ``succe``), so a claim in one tense matches a
    statement in another."""
    return _SUFFIX.sub("", _SUFFIX.sub("", word))


def stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in words)


def claim_words(question: str) -> frozenset[str]:
    """The words a sentence must hold to state the question's claim."""
    text = _ISO_DATE.sub(" ", question)
    return frozenset(w for w in content_words(text)
                     if w not in QUESTION_WORDS and w not in DATE_WORDS and not _YEAR.match(w))


def key_words(question: str) -> frozenset[str]:
    """Words a statement must hold exactly to state the claim: numbers, names (capitalized
    words after the first) and the parts of code paths, less the date anchor: a claim with a
    swapped name, amount or identifier is not the statement it was made from."""
    text = _ISO_DATE.sub(" ", question)
    tokens = [t for t in tokens_of(text) if t[0].isalnum()]
    keys = {t.lower() for t in tokens[1:] if t[0].isupper() or t.isdigit()}
    keys |= {w for t in tokens if any(c.isdigit() for c in t) for w in content_words(t)}
    # A code path names one object: every part of ``pkg.mod.fold_lines`` must match.
    keys |= {w for path in _IDENTIFIER.findall(text) for w in content_words(path)}
    return frozenset(w for w in keys if w in claim_words(question))


def claimed_month(question: str) -> tuple[int, int] | None:
    """(year, month) of a claim anchored in a named month ("in early March 2031")."""
    found = _MONTH_YEAR.search(question)
    if found is None:
        return None
    return int(found.group(2)), MONTHS.index(found.group(1).lower()) + 1


def stated_month(read: ReadText, n: int) -> tuple[int, int] | None:
    """(year, month) of sentence ``n``: a date it holds, else its passage's ``Date:`` line."""
    sentence = read.sentences[n]
    found = _DAY_MONTH_YEAR.search(sentence)
    if found is not None:
        return int(found.group(2)), MONTHS.index(found.group(1).lower()) + 1
    iso = _ISO_PARTS.search(sentence)
    if iso is not None and not sentence.startswith("Date:"):
        return int(iso.group(1)), int(iso.group(2))
    chunk = read.chunk_of[n]
    for m in range(n, -1, -1):
        if read.chunk_of[m] != chunk:
            break
        line = _DATE_LINE.match(read.sentences[m])
        if line is not None:
            return int(line.group(1)), int(line.group(2))
    return None


def _changed_since(read: ReadText, question: str, hits: list[int], cover: dict[int, float],
                   best: int) -> int | None:
    """For a persistence claim ("is X still Y?"): a statement from ``best`` on that reports
    a change the question does not mention (a change word, or the claimed amount as the
    value moved *from*), else None."""
    asked = stems(content_words(question))
    amounts = [w for w in key_words(question) if any(c.isdigit() for c in w)]
    for n in hits:
        if n < best or cover[n] < RELATED_COVER:
            continue
        if stems(read.words[n] & CHANGE_WORDS) - asked:
            return n
        lowered = read.sentences[n].lower()
        if any(re.search(rf"\bfrom\s+\S*{re.escape(a)}\b", lowered) for a in amounts):
            return n
    return None


def answer_yes_no(read: ReadText, question: str) -> tuple[str, str]:
    """(reasoning line, answer) for a yes/no question; see the module docstring."""
    words = claim_words(question)
    if not words:
        return "The question names nothing to look for.", ABSTAIN
    table = read.postings()
    hits = sorted({n for w in words for n in table.get(w, ())})
    if not hits:
        return "Nothing in the passages mentions what the question asks about.", ABSTAIN
    wanted = stems(words)
    held = {n: stems(read.words[n]) for n in hits}
    cover = {n: len(wanted & held[n]) / len(wanted) for n in hits}
    best = max(hits, key=lambda n: (cover[n], n))
    if cover[best] < RELATED_COVER:
        return "No statement in the passages is about this claim.", ABSTAIN
    quoted = f"'{read.sentences[best]}'"
    if cover[best] >= YES_COVER and stems(key_words(question)) <= held[best]:
        month = claimed_month(question)
        when = stated_month(read, best) if month is not None else None
        if month is not None and when is not None and when != month:
            return f"The statement {quoted} is from another month.", "No"
        if "still" in content_words(question):
            changed = _changed_since(read, question, hits, cover, best)
            if changed is not None:
                return f"A statement reports a change: '{read.sentences[changed]}'.", "No"
        return f"The passages state it: {quoted}.", "Yes"
    return f"The closest statement differs: {quoted}.", "No"


_LEADS = (re.compile(r"^\s*(?:as of|on|in|by)\s+[^,?]*\d{4}[^,?]*,\s*(\w+)", re.IGNORECASE),
          re.compile(r"^\s*before becoming\b[^,?]*,\s*(\w+)", re.IGNORECASE))
WH_WORDS = frozenset("who what which where whom whose".split())


def dated_wh(question: str) -> str | None:
    """The wh-word of a question led by a date or a "before becoming" clause, else None."""
    for lead in _LEADS:
        found = lead.match(question)
        if found is not None and found.group(1).lower() in WH_WORDS:
            return found.group(1).lower()
    return None


def _name_runs(sentence: str) -> list[str]:
    """Runs of capitalized words (names), in order; a run may hold "of" ("Bank of X")."""
    tokens = [t for t in tokens_of(sentence) if t[0].isalnum()]
    runs: list[list[str]] = []
    current: list[str] = []
    for i, tok in enumerate(tokens):
        if is_name(tok) and not tok.isupper() or (tok.isupper() and len(tok) > 1):
            current.append(tok)
        elif tok == "of" and current and i + 1 < len(tokens) and is_name(tokens[i + 1]):
            current.append(tok)
        else:
            if current:
                runs.append(current)
            current = []
    if current:
        runs.append(current)
    return [" ".join(r) for r in runs if len(r) > 1 or r[0] != tokens[0]]


def _post_after_as(sentence: str) -> str | None:
    found = re.search(r"\bas\s+(.+?)(?:[,.;]|$)", sentence)
    return found.group(1).strip() if found else None


def answer_statement(read: ReadText, question: str) -> tuple[str, str] | None:
    """(reasoning, answer) for a dated wh-question (module docstring), or None to let the
    general reader answer."""
    wh = dated_wh(question)
    if wh is None:
        return None
    words = claim_words(question) - WH_WORDS
    table = read.postings()
    hits = sorted({n for w in words for n in table.get(w, ())})
    if not words or not hits:
        return "Nothing in the passages mentions what the question asks about.", ABSTAIN
    wanted = stems(words)
    cover = {n: len(wanted & stems(read.words[n])) / len(wanted) for n in hits}
    top = max(cover.values())
    if top < RELATED_COVER:
        return "No statement in the passages is about this.", ABSTAIN
    # The state at a date is the latest statement about it: among the statements nearly as
    # close to the question as the closest, the latest.
    best = max(n for n in hits if cover[n] >= NEAR_BEST * top)
    sentence = read.sentences[best]
    why = f"Closest statement: '{sentence}'."
    asked = content_words(question)
    lowered = question.lower()
    if wh in ("who", "whom"):
        for run in _name_runs(sentence):
            if not content_words(run) <= asked:
                return why, run
    elif re.search(r"\bwhat (?:post|role|position|job)\b", lowered):
        # The post a person held before: a statement naming them with "as <post>", the post
        # not the one the question names.
        subject = re.search(r"\bwhat (?:post|role|position|job) (?:had|did|has|have) (.+?) "
                            r"(?:held|hold|had|have)\b", question, re.IGNORECASE)
        names = stems(content_words(subject.group(1) if subject else question))
        for n in hits:
            post = _post_after_as(read.sentences[n])
            if names <= stems(read.words[n]) and post and not content_words(post) <= asked:
                return f"Closest statement: '{read.sentences[n]}'.", post
    elif wh == "what":
        values = [m.group(1) for m in _VALUE.finditer(sentence)
                  if not content_words(m.group(1)) <= asked and not _YEAR.match(m.group(1))]
        reached = [m.group(1) for m in _VALUE.finditer(sentence)
                   if m.group(0).lower().startswith("to ")]
        if reached or values:
            return why, (reached or values)[-1]
    elif wh in ("which", "where"):
        for run in _name_runs(sentence):
            if not content_words(run) <= asked:
                return why, run
    return None
