"""ImprintBench personalization, procedural: seeded personas, their chats, ledger and items.

The paper builds its personalization setting from PersonaMem-v2 and HorizonBench histories
(ImprintBench App. D.3; docs/imprint.md §4.5). This module is the offline, seeded counterpart (docs/imprint.md §4.5
"personalization ... personas whose dated chats state, paraphrase, imply or merely mention
preferences that change; a ledger of current values"):

* an attribute catalogue (:data:`CATALOGUE`) gives every preference its value set and the
  semantic-frame fields the paper attaches to a fact (domain, constraint dimension, task
  affordances such as meal / schedule / trip / writing / support / gift);
* each persona holds some attributes; dated chat sessions state them by *explicitness* --
  ``direct``, ``paraphrase`` (a synonym and a roundabout phrase), ``implicit`` (a request that
  presumes the preference) -- and mention other people's preferences (``nearby``), which are
  never the user's facts; updates and life events change values;
* every statement is a ledger entry (docs/imprint.md §4.5); :func:`state_at`, :func:`history`
  and :func:`visible` read the ledger, and every gold is re-derived from ``state_at(end)``;
* sessions are packed into ``chunks`` dated documents per persona (kind ``"chunk"``), each
  filled with ordinary chat (:mod:`~clstream.protocols.imprint.settings.persona.filler`)
  up to ``chunk_tokens`` tokens -- the paper's 38,666 per persona-chunk with
  :data:`PAPER_CHUNK_TOKENS`; the chats that state *withheld* facts are left out of the
  corpus (the training view) and those facts become BoundAbs items, as do attributes never
  mentioned or mentioned only about someone else;
* items: TempUpd (``new_info`` / ``changed_info``: a value that changed, its stale value
  stated outright in the question's words), RefRes, CompRel (truth-table multiple choice,
  every slot true in half the options), ImpRel (one recommendation per value), BoundAbs, and
  DirAcq only on request (the paper generates it but does not report it, docs/imprint.md
  §5); CompRel and ImpRel items an options-only reader solves are dropped
  (:mod:`~clstream.protocols.imprint.settings.persona.option_audit`) and counted in the
  manifest's ``pipeline``; training pairs Q use their own templates
  (:func:`~clstream.protocols.imprint.schema.check_disjoint` holds).

Every template here is written for this project. Output is byte-identical for one config.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

from clstream.core.errors import SpecError
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.imprint.schema import (
    CorpusDoc,
    Dataset,
    Item,
    Manifest,
    QAPair,
    check_disjoint,
)
from clstream.protocols.imprint.settings.persona.catalogue import (
    AFFORDANCES,
    CATALOGUE,
    CATALOGUE_BY_KEY,
    COMPREL_STEM,
    DIRECT,
    EVENT_UPDATE,
    EXPLICITNESS,
    IMPLICIT,
    NEARBY,
    PARAPHRASE,
    RELATIONS,
    STOP_WORDS,
    UPDATE,
    Attribute,
    Value,
    content_words,
    mentions,
    word_stems,
)
from clstream.protocols.imprint.settings.persona.filler import (
    ASSISTANT_CLOSE,
    ASSISTANT_OPEN,
    Exchanges,
    errand,
    small_talk,
)
from clstream.protocols.imprint.settings.persona.option_audit import solved_by

GENERATOR = "imprint.persona_synthetic"
# Tokens of one persona-chunk in the paper: 1.93M tokens over 50 persona-chunks (ImprintBench
# Tables 5 and 8); 38,666 is the figure the paper gives per chunk.
PAPER_CHUNK_TOKENS = 38_666
ABSTAIN_GOLD = "abstain"
__all__ = ["AFFORDANCES", "CATALOGUE", "CATALOGUE_BY_KEY", "EXPLICITNESS", "STOP_WORDS",
           "Attribute", "PersonaConfig", "Value", "content_words", "generate_persona",
           "history", "mentions", "state_at", "visible", "word_stems"]


# Training-pair templates (Q); no test question uses their wording.
_QA_FACT = (
    ("In the chat on {date}, what did I say about my {noun}?", "{v}"),
    ("Which {noun} came up for me in session {session}?", "{v}"),
    ("Recall from {date}: my {noun} was mentioned as what?", "{v}"),
    ("Fill in from session {session}: my {noun} -> ?", "{v}"),
)
_QA_NEARBY = ("Whom did I mention on {date} in connection with {v}?", "my {who}")
_QA_PER_CHUNK = 100
_QA_SESSION = (
    ("What did I ask for help with on {date}?", "{task}"),
    ("On which date did I ask for {task}?", "{date}"),
    ("In session {session}, what was the task?", "{task}"),
    ("Which session id belongs to the chat of {date}?", "{session}"),
    ("When did session {session} take place?", "{date}"),
)

# ----------------------------------------------------------------------------------------------
# Config


@dataclass(frozen=True)
class PersonaConfig:
    """Knobs of the generator (defaults give ~40-80 items per persona in well under 2 s).

    ``p_update``: chance a stated attribute later changes (half of changes come from a life
    event where the attribute has one); ``p_implicit`` / ``p_paraphrase``: how the first
    statement is phrased (the rest direct); ``p_nearby``: chance another person's value of a
    held attribute is mentioned; ``n_withheld``: held attributes stated only in chats left out
    of the corpus; ``n_comprel``: truth-table items per persona (half over 2 facts, half over
    3); ``include_diracq``: also write DirAcq items (not reported by the paper);
    ``chunk_tokens``: ordinary chat filler is added to each chunk until it holds about this
    many tokens (approximate tokenizer; 0 adds none). The paper's persona-chunks hold about
    :data:`PAPER_CHUNK_TOKENS` (``--size paper``); the default is smaller so that runs over
    the default dataset stay quick.
    """

    seed: int = 0
    n_personas: int = 4
    chunks: int = 4
    sessions_per_chunk: int = 5
    turns_per_session: tuple[int, int] = (6, 14)
    n_attributes: int = 18
    p_update: float = 0.5
    p_implicit: float = 0.3
    p_paraphrase: float = 0.25
    p_nearby: float = 0.15
    n_withheld: int = 3
    n_comprel: int = 6
    include_diracq: bool = False
    chunk_tokens: int = 6_000

    def turn_pairs(self) -> tuple[int, int]:
        """``turns_per_session`` as user/assistant pairs."""
        lo, hi = self.turns_per_session
        return max(1, lo // 2), max(1, (hi + 1) // 2)

    def check(self) -> None:
        """Raise :class:`SpecError` for settings the generator cannot honour."""
        lo, hi = self.turns_per_session
        problems = [
            (self.n_personas < 1, "n_personas must be >= 1"),
            (self.chunks < 1, "chunks must be >= 1"),
            (self.sessions_per_chunk < 1, "sessions_per_chunk must be >= 1"),
            (not 2 <= lo <= hi, "turns_per_session must be (lo, hi) with 2 <= lo <= hi"),
            (not 4 <= self.n_attributes <= len(CATALOGUE) - 2,
             f"n_attributes must be in 4..{len(CATALOGUE) - 2} (two attributes stay unheld)"),
            (not 0 <= self.n_withheld <= self.n_attributes - 3,
             "n_withheld must be in 0..n_attributes-3"),
            (self.n_comprel < 0, "n_comprel must be >= 0"),
            (self.chunk_tokens < 0, "chunk_tokens must be >= 0"),
        ]
        for p in ("p_update", "p_implicit", "p_paraphrase", "p_nearby"):
            value = getattr(self, p)
            problems.append((not 0.0 <= value <= 1.0, f"{p} must be in [0, 1]"))
        problems.append((self.p_implicit + self.p_paraphrase > 1.0,
                         "p_implicit + p_paraphrase must be <= 1"))
        for bad, message in problems:
            if bad:
                raise SpecError(f"persona config: {message}")


# ----------------------------------------------------------------------------------------------
# Ledger


def state_at(ledger: Iterable[dict[str, Any]], persona: str,
             until: str | None = None) -> dict[str, dict[str, Any]]:
    """Current entry per attribute of ``persona`` after every entry dated ``<= until`` (all
    entries when ``until`` is None): the latest non-``nearby`` entry wins. Withheld entries
    count (they are true of the user; :func:`visible` is the training view)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in sorted(_of(ledger, persona), key=lambda e: e["seq"]):
        if entry["explicitness"] == "nearby" or (until is not None and entry["date"] > until):
            continue
        out[entry["attribute"]] = entry
    return out


def history(ledger: Iterable[dict[str, Any]], persona: str,
            attribute: str) -> list[dict[str, Any]]:
    """The user's own entries for one attribute, in order (nearby mentions excluded)."""
    return sorted((e for e in _of(ledger, persona)
                   if e["attribute"] == attribute and e["explicitness"] != "nearby"),
                  key=lambda e: e["seq"])


def visible(ledger: Iterable[dict[str, Any]], persona: str) -> list[dict[str, Any]]:
    """Entries inside the training view that are the user's facts: not withheld, not nearby."""
    return [e for e in sorted(_of(ledger, persona), key=lambda e: e["seq"])
            if not e["withheld"] and e["explicitness"] != "nearby"]


def _of(ledger: Iterable[dict[str, Any]], persona: str) -> list[dict[str, Any]]:
    return [e for e in ledger if e.get("persona") == persona]


# ----------------------------------------------------------------------------------------------
# Generation


@dataclass
class _Statement:
    attribute: Attribute
    value: Value
    explicitness: str
    sentence: str
    previous: str | None = None
    cause: str = "stated"
    who: str | None = None


@dataclass
class _Session:
    chunk: int
    task: tuple[str, str]
    withheld: bool = False
    session_id: str = ""
    day: date = date(2024, 1, 1)
    statements: list[_Statement] = field(default_factory=list)
    turns: list[tuple[str, str]] = field(default_factory=list)  # (role, text)
    stated_in: list[tuple[int, _Statement]] = field(default_factory=list)  # (turn index, fact)

    def turn_id(self, index: int) -> str:
        return f"{self.session_id}.t{index + 1:02d}"


@dataclass
class _Persona:
    persona_id: str
    name: str
    held: list[Attribute]
    withheld: list[Attribute]
    nearby_only: list[Attribute]
    never: list[Attribute]
    sessions: list[_Session]
    ledger: list[dict[str, Any]]
    docs: list[CorpusDoc]


_FIRST_NAMES = ("Ava", "Bruno", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hiro", "Ines",
                "Jonas", "Kemi", "Lior", "Maren", "Nils", "Odile", "Pavel")


def generate_persona(config: PersonaConfig | None = None) -> Dataset:
    """The personalization dataset for ``config``: one instance per persona (docs/imprint.md §2)."""
    config = config or PersonaConfig()
    config.check()
    corpus: list[CorpusDoc] = []
    qa: list[QAPair] = []
    items: list[Item] = []
    ledger: list[dict[str, Any]] = []
    audits: Counter[str] = Counter()
    for number in range(config.n_personas):
        persona = _build_persona(config, number)
        corpus.extend(persona.docs)
        ledger.extend(persona.ledger)
        qa.extend(_training_pairs(config, persona))
        items.extend(_items(config, persona, audits))
    check_disjoint(qa, items, "persona generator")
    families = sorted({i.family for i in items})
    pipeline = {"writer": "templates", "template_families": families,
                "audits": {"option_only": {f: audits[f] for f in ("CompRel", "ImpRel")}}}
    manifest = Manifest(setting="persona", generator=GENERATOR, seed=config.seed,
                        config={**_config_dict(config), "pipeline": pipeline})
    return Dataset(manifest, corpus, qa, items, ledger)


def _config_dict(config: PersonaConfig) -> dict[str, Any]:
    out = asdict(config)
    out["turns_per_session"] = list(config.turns_per_session)
    return out


def _rng(config: PersonaConfig, *parts: object) -> random.Random:
    return random.Random(":".join(str(p) for p in (config.seed, *parts)))


def _build_persona(config: PersonaConfig, number: int) -> _Persona:
    rng = _rng(config, "persona", number)
    persona_id = f"p{number:02d}"
    name = _FIRST_NAMES[(config.seed + number) % len(_FIRST_NAMES)]
    order = list(CATALOGUE)
    rng.shuffle(order)
    held = order[:config.n_attributes]
    unheld = order[config.n_attributes:]
    withheld = held[:config.n_withheld]
    stated = held[config.n_withheld:]
    n_nearby_only = max(1, len(unheld) // 3)
    nearby_only, never = unheld[:n_nearby_only], unheld[n_nearby_only:]

    total = config.chunks * config.sessions_per_chunk
    carriers = [_Session(index // config.sessions_per_chunk, errand(rng))
                for index in range(total)]
    for attribute in stated:
        values = list(attribute.values)
        first_value = values.pop(rng.randrange(len(values)))
        first = rng.randrange(total)
        updated = first < total - 1 and rng.random() < config.p_update
        roll = rng.random()
        # A value that later changes is stated outright, in the question's own words, so the
        # stale value competes with the new one (App. D.3 item 2: CHANGED-INFO).
        how = ("direct" if updated else "implicit" if roll < config.p_implicit else
               "paraphrase" if roll < config.p_implicit + config.p_paraphrase else "direct")
        carriers[first].statements.append(_render(rng, attribute, first_value, how))
        used = [first_value]
        if updated:
            later = rng.randrange(first + 1, total)
            new_value = values.pop(rng.randrange(len(values)))
            cause = "stated"
            if attribute.event is not None and rng.random() < 0.5:
                cause = f"life_event:{attribute.event[0]}"
            update = _render(rng, attribute, new_value, "direct", previous=first_value.name,
                             cause=cause)
            carriers[later].statements.append(update)
            used.append(new_value)
        if rng.random() < config.p_nearby:
            others = [v for v in attribute.values if v not in used]
            where = rng.randrange(total)
            carriers[where].statements.append(
                _render(rng, attribute, others[rng.randrange(len(others))], "nearby"))
    for attribute in nearby_only:
        for _ in range(rng.randint(1, 2)):
            value = attribute.values[rng.randrange(len(attribute.values))]
            carriers[rng.randrange(total)].statements.append(
                _render(rng, attribute, value, "nearby"))
    # Withheld facts: stated in chats of their own that the training view leaves out.
    after: dict[int, list[_Session]] = {}
    for attribute in withheld:
        host = rng.randrange(total)
        value = attribute.values[rng.randrange(len(attribute.values))]
        session = _Session(carriers[host].chunk, errand(rng), withheld=True)
        session.statements.append(_render(rng, attribute, value, "direct"))
        after.setdefault(host, []).append(session)
    for session in [*carriers, *(s for group in after.values() for s in group)]:
        rng.shuffle(session.statements)
        _fill_turns(config, rng, session)
    ordered = _with_filler(config, rng, carriers, after)
    _date_and_name(config, rng, persona_id, ordered)
    ledger = _ledger(persona_id, ordered)
    docs = _chunk_docs(config, persona_id, name, ordered)
    return _Persona(persona_id, name, held, withheld, nearby_only, never, ordered, ledger, docs)


def _with_filler(config: PersonaConfig, rng: random.Random, carriers: list[_Session],
                 after: dict[int, list[_Session]]) -> list[_Session]:
    """All sessions in chat order: each chunk's fact-carrying sessions in their order, with
    ordinary filler sessions placed among them until the chunk holds ``chunk_tokens``
    tokens, and each withheld chat right after the session it follows."""
    tokens = approx_tokenizer().count
    ordered: list[_Session] = []
    for chunk in range(config.chunks):
        own = [s for s in carriers if s.chunk == chunk]
        size = sum(tokens(text) + 2 for s in own for _, text in s.turns)
        filler: list[_Session] = []
        while size < config.chunk_tokens:
            session = _Session(chunk, errand(rng))
            _fill_turns(config, rng, session, pairs=rng.randint(4, 8))
            size += sum(tokens(text) + 2 for _, text in session.turns)
            filler.append(session)
        slots = sorted(rng.randrange(len(own) + 1) for _ in filler)
        merged: list[_Session] = []
        for position, session in enumerate(own):
            merged += [f for f, slot in zip(filler, slots, strict=True) if slot == position]
            merged.append(session)
            merged += after.get(carriers.index(session), [])
        merged += [f for f, slot in zip(filler, slots, strict=True) if slot == len(own)]
        ordered += merged
    return ordered


def _date_and_name(config: PersonaConfig, rng: random.Random, persona_id: str,
                   sessions: list[_Session]) -> None:
    """Dates (a few days apart, a day or two once histories are long) and ids in chat order;
    a withheld chat takes the date of the session before it."""
    shown = [s for s in sessions if not s.withheld]
    lo, hi = (2, 6) if len(shown) <= 40 else (1, 2)
    day = date(2024, 1, 8) + timedelta(days=rng.randrange(0, 200))
    width = 2 if len(shown) < 100 else 3
    number = withheld = 0
    previous = day
    for session in sessions:
        if session.withheld:
            withheld += 1
            session.session_id = f"{persona_id}-w{withheld:02d}"
            session.day = previous
            continue
        number += 1
        session.session_id = f"{persona_id}-s{number:0{width}d}"
        session.day = previous = day
        day += timedelta(days=rng.randint(lo, hi))


def _render(rng: random.Random, attribute: Attribute, value: Value, how: str,
            previous: str | None = None, cause: str = "stated") -> _Statement:
    """One statement of ``value`` in the attribute's own wording (see the catalogue): direct
    statements and updates say the ``fact`` clause, paraphrased and implicit ones the ``gloss``
    with the value's synonym, other people's preferences the gloss about ``their``."""
    if how == "nearby":
        who, pronoun = RELATIONS[rng.randrange(len(RELATIONS))]
        text = rng.choice(NEARBY).format(who=who, their=attribute.describe(value.said, pronoun))
        return _Statement(attribute, value, how, text, who=who)
    fact = attribute.state(value.name)
    if previous is not None:
        if cause != "stated" and attribute.event is not None:
            text = EVENT_UPDATE.format(event=attribute.event[1], fact=fact)
        else:
            text = rng.choice(UPDATE).format(fact=fact)
        return _Statement(attribute, value, how, text, previous=previous, cause=cause)
    if how == "direct":
        text = rng.choice(DIRECT).format(fact=fact)
    else:
        text = rng.choice(PARAPHRASE if how == "paraphrase" else IMPLICIT).format(
            gloss=attribute.describe(value.said))
    return _Statement(attribute, value, how, _capital(text))


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def _fill_turns(config: PersonaConfig, rng: random.Random, session: _Session,
                pairs: int | None = None) -> None:
    """The session's turns: the errand's request, ordinary work on it, each statement as the
    tail of a user turn, and the assistant's closing line."""
    lo, hi = config.turn_pairs()
    n_pairs = pairs if pairs is not None else max(rng.randint(lo, hi),
                                                  len(session.statements) + 1)
    user_slots = list(range(1, n_pairs))
    rng.shuffle(user_slots)
    at = {slot: st for slot, st in zip(sorted(user_slots[:len(session.statements)]),
                                       session.statements, strict=True)}
    work = Exchanges(rng, session.task[0])
    for pair in range(n_pairs):
        if pair == 0:
            user, assistant = session.task[1], rng.choice(ASSISTANT_OPEN)
        elif pair in at:
            user = f"{small_talk(rng)} {at[pair].sentence}"
            assistant = "Noted, I'll keep that in mind."
        else:
            user, assistant = work.next()
        if pair == n_pairs - 1:
            assistant = ASSISTANT_CLOSE
        if pair in at:
            session.stated_in.append((len(session.turns), at[pair]))
        session.turns += [("user", user), ("assistant", assistant)]


def _ledger(persona_id: str, sessions: list[_Session]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for session in sessions:
        for turn, st in session.stated_in:
            turn_id = session.turn_id(turn)
            entries.append({
                "persona": persona_id, "seq": len(entries) + 1,
                "session": session.session_id, "chunk": session.chunk,
                "date": session.day.isoformat(), "turn_id": turn_id,
                "attribute": st.attribute.key, "value": st.value.name,
                "previous_value": st.previous,
                "polarity": "+", "explicitness": st.explicitness, "cause": st.cause,
                "domain": st.attribute.domain,
                "constraint_dimension": st.attribute.constraint,
                "affordances": list(st.attribute.affordances),
                "withheld": session.withheld, "sentence": st.sentence,
                "holder": f"my {st.who}" if st.who else "user",
            })
    return entries


def _chunk_docs(config: PersonaConfig, persona_id: str, name: str,
                sessions: list[_Session]) -> list[CorpusDoc]:
    docs: list[CorpusDoc] = []
    for chunk in range(config.chunks):
        shown = [s for s in sessions if s.chunk == chunk and not s.withheld]
        blocks = []
        for s in shown:
            lines = [f"Session {s.session_id} ({s.day.isoformat()})"]
            lines += [f"{'User' if role == 'user' else 'Assistant'}: {text}"
                      for role, text in s.turns]
            blocks.append("\n".join(lines))
        docs.append(CorpusDoc(
            doc_id=_doc_id(persona_id, chunk), instance_id=persona_id,
            date=shown[-1].day.isoformat(), kind="chunk",
            title=f"Conversations with {name}, part {chunk + 1} of {config.chunks}",
            text="\n\n".join(blocks) + "\n",
            meta={"persona": persona_id, "chunk": chunk,
                  "sessions": [s.session_id for s in shown]}))
    return docs


def _doc_id(persona_id: str, chunk: int) -> str:
    return f"{persona_id}-c{chunk + 1}"


# ----------------------------------------------------------------------------------------------
# Training pairs Q


def _training_pairs(config: PersonaConfig, persona: _Persona) -> list[QAPair]:
    pairs: list[QAPair] = []
    pid = persona.persona_id
    shown = [e for e in persona.ledger if not e["withheld"]]
    for chunk in range(config.chunks):
        doc_id = _doc_id(pid, chunk)
        rows: list[tuple[str, str]] = []
        for entry in (e for e in shown if e["chunk"] == chunk):
            attribute = CATALOGUE_BY_KEY[entry["attribute"]]
            fill = {"date": entry["date"], "session": entry["session"],
                    "noun": attribute.noun, "v": entry["value"]}
            if entry["explicitness"] == "nearby":
                q, a = _QA_NEARBY
                rows.append((q.format(**fill), entry["holder"]))
            else:
                rows += [(q.format(**fill), a.format(**fill)) for q, a in _QA_FACT]
        # Sessions that carry facts first, then the filler ones, about 100 pairs a chunk
        # (the paper's Q has 100 per persona-chunk, Table 5).
        sessions = sorted((s for s in persona.sessions if s.chunk == chunk and not s.withheld),
                          key=lambda s: not s.stated_in)
        for session in sessions:
            fill = {"date": session.day.isoformat(), "session": session.session_id,
                    "task": session.task[0]}
            rows += [(q.format(**fill), a.format(**fill)) for q, a in _QA_SESSION]
        rows = rows[:_QA_PER_CHUNK]
        seen: set[str] = set()
        for question, answer in rows:
            if question in seen:
                continue
            seen.add(question)
            pairs.append(QAPair(qa_id=f"{doc_id}-q{len(seen):03d}", instance_id=pid,
                                doc_id=doc_id, question=question, answer=answer))
    return pairs


# ----------------------------------------------------------------------------------------------
# Items


def _items(config: PersonaConfig, persona: _Persona, audits: Counter[str]) -> list[Item]:
    """The persona's items; ``audits`` counts, per family, the items the option-only audit
    removed (:mod:`~clstream.protocols.imprint.settings.persona.option_audit`)."""
    rng = _rng(config, "items", persona.persona_id)
    pid = persona.persona_id
    current = state_at(persona.ledger, pid)
    shown = {a: e for a, e in current.items() if not e["withheld"]}
    corpus_text = "\n".join(d.title + "\n" + d.text for d in persona.docs)
    corpus_words = content_words(corpus_text)
    out: list[Item] = []
    placed: Counter[tuple[str, int]] = Counter()  # gold positions per family and option count

    def add(family: str, question: str, gold: str | list[str], judge: str,
            sources: list[str], **extra: Any) -> None:
        number = sum(1 for i in out if i.family == family) + 1
        out.append(Item(item_id=f"{pid}-{family}-{number:03d}", setting="persona",
                        family=family, question=question, gold=gold,  # type: ignore[arg-type]
                        judge=judge, persona=pid, instance_id=pid,  # type: ignore[arg-type]
                        source_doc_ids=sources, **extra))

    for key in sorted(shown, key=lambda k: shown[k]["seq"]):
        entry = shown[key]
        attribute = CATALOGUE_BY_KEY[key]
        value = attribute.value(entry["value"])
        source = [_doc_id(pid, entry["chunk"])]
        meta = {"attribute": key, "ledger_seq": [entry["seq"]], "support": [entry["sentence"]],
                "values": [value.name], "explicitness": entry["explicitness"]}
        if entry["previous_value"] is not None:
            # The stale value was stated outright in the question's words and competes with
            # the new one; NEW-INFO when the change came in a later chunk than the value it
            # replaces, CHANGED-INFO when both are in one chunk (docs/imprint.md §4.5).
            past = history(persona.ledger, pid, key)
            stale = past[-2]
            before = attribute.value(entry["previous_value"])
            axis = "new_info" if entry["chunk"] > stale["chunk"] else "changed_info"
            add("TempUpd", attribute.ask_now(), value.forms, "exact",
                sorted({source[0], _doc_id(pid, stale["chunk"])}), axis=axis,
                gold_before=before.forms,
                meta={**meta, "cause": entry["cause"], "stale_seq": stale["seq"],
                      "stale_support": stale["sentence"]})
        if entry["explicitness"] in ("paraphrase", "implicit"):
            # The chats gave this fact only as a gloss: the plain question paraphrases it.
            add("RefRes", attribute.ask, value.forms, "exact",
                source, meta=meta)
        if config.include_diracq and entry["explicitness"] == "direct":
            add("DirAcq", attribute.ask, value.forms, "exact", source,
                meta=meta)
        # ImpRel: one recommendation per value of the attribute (three or four), only the
        # current value's fits; each option is the right one for a person holding its value.
        choices = [c for c in attribute.values if c != value]
        rng.shuffle(choices)
        position = gold_position(placed, "ImpRel", len(choices) + 1)
        choices.insert(position, value)
        letter = "ABCD"[position]
        options = [c.suggestion for c in choices]
        if solved_by(attribute.scenario, options, letter):
            audits["ImpRel"] += 1
            continue
        placed["ImpRel", len(choices)] += 1
        add("ImpRel", attribute.scenario, letter, "choice", source, options=options,
            meta={**meta, "gold_option": value.suggestion,
                  "option_values": [c.name for c in choices],
                  "affordances": list(attribute.affordances)})

    _comprel_items(config, rng, persona, shown, add, audits, placed)

    # BoundAbs: withheld facts, nearby-only and never-mentioned attributes.
    kinds = ([(a, "withheld") for a in persona.withheld]
             + [(a, "nearby_only") for a in persona.nearby_only]
             + [(a, "never_mentioned") for a in persona.never])
    for attribute, kind in kinds:
        question = attribute.ask
        if content_words(question) & corpus_words:
            continue  # the predicate shows up in the chats: not an absence item
        add("BoundAbs", question, ABSTAIN_GOLD, "abstain", [], axis=kind,
            meta={"attribute": attribute.key})
    return out


def gold_position(placed: Counter[tuple[str, int]], family: str, options: int) -> int:
    """Where the gold option of the next ``family`` item with ``options`` options goes: the
    positions taken in turn from the last, counting only items kept, so each letter is gold
    for at most its share of the family and always answering "A" never beats chance
    (docs/imprint.md §7.11)."""
    return options - 1 - placed[family, options] % options


def _comprel_items(config: PersonaConfig, rng: random.Random, persona: _Persona,
                   shown: dict[str, dict[str, Any]], add: Any, audits: Counter[str],
                   placed: Counter[tuple[str, int]]) -> None:
    """A decision over two or three facts of the person (App. D.3 CompRel; docs/imprint.md §4.5).

    The facts have distinct constraint dimensions. Every option is a plan bundling one
    recommendation per fact (a value's ``suggestion``); the options instantiate a truth table
    -- 2 facts: TT, FT, TF, FF; 3 facts: TTT, TFF, FTF, FFT -- where a T slot recommends what
    the fact's current value implies and an F slot what another value implies (the fact's
    previous value when it has one, a stale plan). The gold is the only all-T plan. Every slot
    is T in exactly two options, so no slot's majority points at the gold; the paper's
    three-fact table (TTT, FTT, TFT, TTF) is solved by the majority choice per slot, which its
    no-context option-bias audit rejects, so each three-fact distractor here violates two
    facts and each fact is violated by two distractors. Items the option-only audit still
    solves are dropped and counted. The stem is generic and names no fact, so the question is
    which plan fits the person, not which fact is true."""
    pid = persona.persona_id
    keys = sorted(shown, key=lambda k: shown[k]["seq"])
    for n in range(config.n_comprel):
        size = 2 if n % 2 == 0 else 3
        rng.shuffle(keys)
        picked: list[str] = []
        for key in keys:
            dims = {CATALOGUE_BY_KEY[k].constraint for k in picked}
            if CATALOGUE_BY_KEY[key].constraint not in dims:
                picked.append(key)
            if len(picked) == size:
                break
        if len(picked) < size:
            continue
        entries = [shown[k] for k in picked]
        attrs = [CATALOGUE_BY_KEY[k] for k in picked]
        wrong: list[str] = []
        for attribute, entry in zip(attrs, entries, strict=True):
            if entry["previous_value"] is not None:
                wrong.append(entry["previous_value"])
            else:
                pool = [v.name for v in attribute.values if v.name != entry["value"]]
                wrong.append(pool[rng.randrange(len(pool))])
        patterns = (["TT", "FT", "TF", "FF"] if size == 2 else ["TTT", "TFF", "FTF", "FFT"])
        rows = []
        for pattern in patterns:
            chosen = [e["value"] if flag == "T" else w
                      for e, w, flag in zip(entries, wrong, pattern, strict=True)]
            slots = [a.value(v).suggestion for a, v in zip(attrs, chosen, strict=True)]
            rows.append((pattern, _capital("; ".join(slots)), chosen))
        gold_row = rows.pop(0)  # the all-true pattern comes first above
        rng.shuffle(rows)
        position = gold_position(placed, "CompRel", len(rows) + 1)
        rows.insert(position, gold_row)
        letter = "ABCD"[position]
        if solved_by(COMPREL_STEM, [t for _, t, _ in rows], letter, [c for _, _, c in rows]):
            audits["CompRel"] += 1
            continue
        placed["CompRel", len(rows)] += 1
        add("CompRel", COMPREL_STEM, letter, "choice",
            sorted({_doc_id(pid, e["chunk"]) for e in entries}),
            axis=f"facts{size}", options=[t for _, t, _ in rows],
            meta={"attributes": picked, "ledger_seq": [e["seq"] for e in entries],
                  "support": [e["sentence"] for e in entries],
                  "values": [e["value"] for e in entries], "wrong_values": wrong,
                  "patterns": [p for p, _, _ in rows],
                  "option_values": [c for _, _, c in rows]})
