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

Every template here is written for this project. Output is byte-identical for one config. The
personas as objects and the ledger readers are in :mod:`.personas`, the training pairs and items
in :mod:`.questions`; this module builds the personas and re-exports their public names.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict
from datetime import date, timedelta
from typing import Any

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
from clstream.protocols.imprint.settings.persona.personas import (
    ABSTAIN_GOLD,
    PAPER_CHUNK_TOKENS,
    Persona,
    PersonaConfig,
    Session,
    Statement,
    capitalised,
    chunk_doc_id,
    history,
    seeded_rng,
    state_at,
    visible,
)
from clstream.protocols.imprint.settings.persona.questions import (
    gold_position,
    persona_items,
    training_pairs,
)
from clstream.protocols.imprint.stage_timings import timed_build

__all__ = ["ABSTAIN_GOLD", "AFFORDANCES", "CATALOGUE", "CATALOGUE_BY_KEY", "EXPLICITNESS",
           "GENERATOR", "PAPER_CHUNK_TOKENS", "STOP_WORDS", "Attribute", "PersonaConfig", "Value",
           "content_words", "generate_persona", "gold_position", "history", "mentions",
           "state_at", "visible", "word_stems"]

GENERATOR = "imprint.persona_synthetic"
_FIRST_NAMES = ("Ava", "Bruno", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hiro", "Ines",
                "Jonas", "Kemi", "Lior", "Maren", "Nils", "Odile", "Pavel")


@timed_build("template_build")
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
        qa.extend(training_pairs(config, persona))
        items.extend(persona_items(config, persona, audits))
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


def _build_persona(config: PersonaConfig, number: int) -> Persona:
    rng = seeded_rng(config, "persona", number)
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
    carriers = [Session(index // config.sessions_per_chunk, errand(rng))
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
    after: dict[int, list[Session]] = {}
    for attribute in withheld:
        host = rng.randrange(total)
        value = attribute.values[rng.randrange(len(attribute.values))]
        session = Session(carriers[host].chunk, errand(rng), withheld=True)
        session.statements.append(_render(rng, attribute, value, "direct"))
        after.setdefault(host, []).append(session)
    for session in [*carriers, *(s for group in after.values() for s in group)]:
        rng.shuffle(session.statements)
        _fill_turns(config, rng, session)
    ordered = _with_filler(config, rng, carriers, after)
    _date_and_name(config, rng, persona_id, ordered)
    ledger = _ledger(persona_id, ordered)
    docs = _chunk_docs(config, persona_id, name, ordered)
    return Persona(persona_id, name, held, withheld, nearby_only, never, ordered, ledger, docs)


def _with_filler(config: PersonaConfig, rng: random.Random, carriers: list[Session],
                 after: dict[int, list[Session]]) -> list[Session]:
    """All sessions in chat order: each chunk's fact-carrying sessions in their order, with
    ordinary filler sessions placed among them until the chunk holds ``chunk_tokens``
    tokens, and each withheld chat right after the session it follows."""
    tokens = approx_tokenizer().count
    ordered: list[Session] = []
    for chunk in range(config.chunks):
        own = [s for s in carriers if s.chunk == chunk]
        size = sum(tokens(text) + 2 for s in own for _, text in s.turns)
        filler: list[Session] = []
        while size < config.chunk_tokens:
            session = Session(chunk, errand(rng))
            _fill_turns(config, rng, session, pairs=rng.randint(4, 8))
            size += sum(tokens(text) + 2 for _, text in session.turns)
            filler.append(session)
        slots = sorted(rng.randrange(len(own) + 1) for _ in filler)
        merged: list[Session] = []
        for position, session in enumerate(own):
            merged += [f for f, slot in zip(filler, slots, strict=True) if slot == position]
            merged.append(session)
            merged += after.get(carriers.index(session), [])
        merged += [f for f, slot in zip(filler, slots, strict=True) if slot == len(own)]
        ordered += merged
    return ordered


def _date_and_name(config: PersonaConfig, rng: random.Random, persona_id: str,
                   sessions: list[Session]) -> None:
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
            previous: str | None = None, cause: str = "stated") -> Statement:
    """One statement of ``value`` in the attribute's own wording (see the catalogue): direct
    statements and updates say the ``fact`` clause, paraphrased and implicit ones the ``gloss``
    with the value's synonym, other people's preferences the gloss about ``their``."""
    if how == "nearby":
        who, pronoun = RELATIONS[rng.randrange(len(RELATIONS))]
        text = rng.choice(NEARBY).format(who=who, their=attribute.describe(value.said, pronoun))
        return Statement(attribute, value, how, text, who=who)
    fact = attribute.state(value.name)
    if previous is not None:
        if cause != "stated" and attribute.event is not None:
            text = EVENT_UPDATE.format(event=attribute.event[1], fact=fact)
        else:
            text = rng.choice(UPDATE).format(fact=fact)
        return Statement(attribute, value, how, text, previous=previous, cause=cause)
    if how == "direct":
        text = rng.choice(DIRECT).format(fact=fact)
    else:
        text = rng.choice(PARAPHRASE if how == "paraphrase" else IMPLICIT).format(
            gloss=attribute.describe(value.said))
    return Statement(attribute, value, how, capitalised(text))


def _fill_turns(config: PersonaConfig, rng: random.Random, session: Session,
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


def _ledger(persona_id: str, sessions: list[Session]) -> list[dict[str, Any]]:
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
                sessions: list[Session]) -> list[CorpusDoc]:
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
            doc_id=chunk_doc_id(persona_id, chunk), instance_id=persona_id,
            date=shown[-1].day.isoformat(), kind="chunk",
            title=f"Conversations with {name}, part {chunk + 1} of {config.chunks}",
            text="\n\n".join(blocks) + "\n",
            meta={"persona": persona_id, "chunk": chunk,
                  "sessions": [s.session_id for s in shown]}))
    return docs

