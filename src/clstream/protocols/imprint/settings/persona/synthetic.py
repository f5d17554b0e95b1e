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
* sessions are packed into ``chunks`` dated documents per persona (kind ``"chunk"``); the chats
  that state *withheld* facts are left out of the corpus (the training view) and those facts
  become BoundAbs items, as do attributes never mentioned or mentioned only about someone else;
* items: TempUpd (``new_info`` / ``changed_info``), RefRes, CompRel (truth-table multiple
  choice), ImpRel (recommendation choice), BoundAbs, and DirAcq only on request (the paper
  generates it but does not report it, docs/imprint.md §5); training pairs Q use their own
  templates (:func:`~clstream.protocols.imprint.schema.check_disjoint` holds).

Every template here is written for this project. Output is byte-identical for one config.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

from clstream.core.errors import SpecError
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

GENERATOR = "imprint.persona_synthetic"
ABSTAIN_GOLD = "abstain"
__all__ = ["AFFORDANCES", "CATALOGUE", "CATALOGUE_BY_KEY", "EXPLICITNESS", "STOP_WORDS",
           "Attribute", "PersonaConfig", "Value", "content_words", "generate_persona",
           "history", "mentions", "state_at", "visible", "word_stems"]


# Chat scaffolding: a task request per session, assistant replies, small talk. No catalogue
# noun, alias or value occurs here (tests check), so only statements carry facts.
_TASKS: tuple[tuple[str, str], ...] = (
    ("a grocery list", "Can you help me put together a grocery list for the week?"),
    ("a landlord note", "Could you help me draft a note to my landlord about the heating?"),
    ("a weekend plan", "I need help planning this weekend."),
    ("a budget sheet", "Can you help me set up a simple sheet to track bills?"),
    ("a cover letter", "Would you look over a cover letter for me?"),
    ("a packing list", "Help me write a packing list for a short trip."),
    ("a birthday message", "I want to write a birthday message for a friend."),
    ("a cleaning rota", "Can we make a cleaning rota for the flat?"),
    ("a reading schedule", "Help me pace a long report over the coming week."),
    ("a dinner party", "I'm hosting a dinner party and need a plan."),
)
_ASSISTANT_OPEN = (
    "Happy to help with that. Let's start with a rough outline.",
    "Sure thing. Here is a first pass you can adjust.",
    "Of course. I'll sketch something and we can refine it.",
)
_USER_FILLER = (
    "That looks good, can you shorten the second part?",
    "Thanks, that is helpful.",
    "Could you reorder the list a little?",
    "Let's keep it friendly.",
    "Can you add a line at the end?",
    "Perfect, one more tweak please.",
    "Hmm, can we make it simpler?",
)
_ASSISTANT_FILLER = (
    "Done. I've tightened the wording.",
    "Here is the revised version.",
    "Good idea. I've updated it.",
    "Noted, I'll keep that in mind.",
    "Sounds good. Anything else you'd like to adjust?",
    "Understood. I've adjusted the plan.",
)
_ASSISTANT_CLOSE = "Glad that helps. Come back any time."

# Training-pair templates (Q); no test question uses their wording.
_QA_FACT = (
    ("In the chat on {date}, what did I say about my {noun}?", "{v}"),
    ("Which {noun} came up for me in session {session}?", "{v}"),
    ("Recall from {date}: my {noun} was mentioned as what?", "{v}"),
    ("Fill in from session {session}: my {noun} -> ?", "{v}"),
)
_QA_NEARBY = ("Whom did I mention on {date} in connection with {v}?", "my {who}")
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
    3); ``include_diracq``: also write DirAcq items (not reported by the paper).
    """

    seed: int = 0
    n_personas: int = 4
    chunks: int = 4
    sessions_per_chunk: int = 5
    turns_per_session: tuple[int, int] = (6, 14)
    n_attributes: int = 18
    p_update: float = 0.35
    p_implicit: float = 0.3
    p_paraphrase: float = 0.25
    p_nearby: float = 0.15
    n_withheld: int = 3
    n_comprel: int = 6
    include_diracq: bool = False

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
    index: int
    session_id: str
    chunk: int
    day: date
    task: tuple[str, str]
    withheld: bool = False
    statements: list[_Statement] = field(default_factory=list)
    turns: list[tuple[str, str, str]] = field(default_factory=list)  # (turn_id, role, text)
    stated_in: list[tuple[str, _Statement]] = field(default_factory=list)  # (turn_id, fact)


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
    for number in range(config.n_personas):
        persona = _build_persona(config, number)
        corpus.extend(persona.docs)
        ledger.extend(persona.ledger)
        qa.extend(_training_pairs(config, persona))
        items.extend(_items(config, persona))
    check_disjoint(qa, items, "persona generator")
    manifest = Manifest(setting="persona", generator=GENERATOR, seed=config.seed,
                        config=_config_dict(config))
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

    start = date(2024, 1, 8) + timedelta(days=rng.randrange(0, 200))
    sessions: list[_Session] = []
    day = start
    total = config.chunks * config.sessions_per_chunk
    for index in range(total):
        sessions.append(_Session(index, f"{persona_id}-s{index + 1:02d}",
                                 index // config.sessions_per_chunk, day,
                                 _TASKS[rng.randrange(len(_TASKS))]))
        day += timedelta(days=rng.randint(2, 6))

    for attribute in stated:
        values = list(attribute.values)
        first_value = values.pop(rng.randrange(len(values)))
        first = rng.randrange(total)
        roll = rng.random()
        how = ("implicit" if roll < config.p_implicit else
               "paraphrase" if roll < config.p_implicit + config.p_paraphrase else "direct")
        sessions[first].statements.append(_render(rng, attribute, first_value, how))
        used = [first_value]
        if first < total - 1 and rng.random() < config.p_update:
            later = rng.randrange(first + 1, total)
            new_value = values.pop(rng.randrange(len(values)))
            cause = "stated"
            if attribute.event is not None and rng.random() < 0.5:
                cause = f"life_event:{attribute.event[0]}"
            update = _render(rng, attribute, new_value, "direct", previous=first_value.name,
                             cause=cause)
            sessions[later].statements.append(update)
            used.append(new_value)
        if rng.random() < config.p_nearby:
            others = [v for v in attribute.values if v not in used]
            where = rng.randrange(total)
            sessions[where].statements.append(
                _render(rng, attribute, others[rng.randrange(len(others))], "nearby"))
    for attribute in nearby_only:
        for _ in range(rng.randint(1, 2)):
            value = attribute.values[rng.randrange(len(attribute.values))]
            sessions[rng.randrange(total)].statements.append(
                _render(rng, attribute, value, "nearby"))
    # Withheld facts: stated in chats of their own that the training view leaves out.
    for number_w, attribute in enumerate(withheld):
        after = sessions[rng.randrange(total)]
        value = attribute.values[rng.randrange(len(attribute.values))]
        session = _Session(-1, f"{persona_id}-w{number_w + 1:02d}", after.chunk, after.day,
                           _TASKS[rng.randrange(len(_TASKS))], withheld=True)
        session.statements.append(_render(rng, attribute, value, "direct"))
        sessions.append(session)

    for session in sessions:
        rng.shuffle(session.statements)
        _fill_turns(config, rng, session)
    ordered = sorted(sessions, key=lambda s: (s.day, s.withheld, s.session_id))
    ledger = _ledger(persona_id, ordered)
    docs = _chunk_docs(config, persona_id, name, ordered)
    return _Persona(persona_id, name, held, withheld, nearby_only, never, ordered, ledger, docs)


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


def _fill_turns(config: PersonaConfig, rng: random.Random, session: _Session) -> None:
    lo, hi = config.turns_per_session
    n_turns = max(rng.randint(lo, hi), 2 * len(session.statements) + 2)
    n_turns += n_turns % 2  # user/assistant pairs
    user_slots = list(range(1, n_turns // 2))
    rng.shuffle(user_slots)
    at = {slot: st for slot, st in zip(sorted(user_slots[:len(session.statements)]),
                                       session.statements, strict=True)}
    for pair in range(n_turns // 2):
        if pair == 0:
            user = session.task[1]
            assistant = rng.choice(_ASSISTANT_OPEN)
        elif pair in at:
            user = f"{rng.choice(_USER_FILLER)} {at[pair].sentence}"
            assistant = rng.choice(_ASSISTANT_FILLER)
        else:
            user = rng.choice(_USER_FILLER)
            assistant = rng.choice(_ASSISTANT_FILLER)
        if pair == n_turns // 2 - 1:
            assistant = _ASSISTANT_CLOSE
        for role, text in (("user", user), ("assistant", assistant)):
            turn_id = f"{session.session_id}.t{len(session.turns) + 1:02d}"
            session.turns.append((turn_id, role, text))
            if role == "user" and pair in at:
                session.stated_in.append((turn_id, at[pair]))


def _ledger(persona_id: str, sessions: list[_Session]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for session in sessions:
        for turn_id, st in session.stated_in:
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
                      for _, role, text in s.turns]
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
        for session in persona.sessions:
            if session.chunk != chunk or session.withheld:
                continue
            fill = {"date": session.day.isoformat(), "session": session.session_id,
                    "task": session.task[0]}
            rows += [(q.format(**fill), a.format(**fill)) for q, a in _QA_SESSION]
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


def _items(config: PersonaConfig, persona: _Persona) -> list[Item]:
    rng = _rng(config, "items", persona.persona_id)
    pid = persona.persona_id
    current = state_at(persona.ledger, pid)
    shown = {a: e for a, e in current.items() if not e["withheld"]}
    corpus_text = "\n".join(d.title + "\n" + d.text for d in persona.docs)
    corpus_words = content_words(corpus_text)
    out: list[Item] = []

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
        past = history(persona.ledger, pid, key)
        if entry["previous_value"] is not None:
            before = attribute.value(entry["previous_value"])
            add("TempUpd", attribute.ask_now(), value.forms, "exact",
                source, axis="changed_info", gold_before=before.forms,
                meta={**meta, "cause": entry["cause"]})
        elif entry["explicitness"] == "direct" and entry["chunk"] >= 1 and len(past) == 1:
            add("TempUpd", attribute.ask, value.forms, "exact",
                source, axis="new_info", meta=meta)
        if entry["explicitness"] in ("paraphrase", "implicit"):
            # The chats gave this fact only as a gloss: the plain question paraphrases it.
            add("RefRes", attribute.ask, value.forms, "exact",
                source, meta=meta)
        if config.include_diracq and entry["explicitness"] == "direct":
            add("DirAcq", attribute.ask, value.forms, "exact", source,
                meta=meta)
        # ImpRel: two or three recommendations, only the current value's fits.
        others = [v for v in attribute.values if v.name != value.name]
        rng.shuffle(others)
        choices = [value, *others[:rng.randint(1, 2)]]
        rng.shuffle(choices)
        letter = "ABC"[choices.index(value)]
        add("ImpRel", attribute.scenario, letter, "choice", source,
            options=[c.suggestion for c in choices],
            meta={**meta, "gold_option": value.suggestion,
                  "option_values": [c.name for c in choices],
                  "affordances": list(attribute.affordances)})

    _comprel_items(config, rng, persona, shown, add)

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


def _comprel_items(config: PersonaConfig, rng: random.Random, persona: _Persona,
                   shown: dict[str, dict[str, Any]], add: Any) -> None:
    """A decision over two or three facts of the person (App. D.3 CompRel; docs/imprint.md §4.5).

    The facts have distinct constraint dimensions. Every option is a plan bundling one
    recommendation per fact (a value's ``suggestion``); the options instantiate a truth table
    -- 2 facts: TT, FT, TF, FF; 3 facts: TTT, FTT, TFT, TTF -- where a T slot recommends what
    the fact's current value implies and an F slot what another value implies (the fact's
    previous value when it has one, a stale plan). The gold is the only all-T plan; every
    distractor violates a different fact (FF both). The stem is generic and names no fact, so
    the question is which plan fits the person, not which fact is true."""
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
        patterns = (["TT", "FT", "TF", "FF"] if size == 2 else ["TTT", "FTT", "TFT", "TTF"])
        rows = []
        for pattern in patterns:
            chosen = [e["value"] if flag == "T" else w
                      for e, w, flag in zip(entries, wrong, pattern, strict=True)]
            slots = [a.value(v).suggestion for a, v in zip(attrs, chosen, strict=True)]
            rows.append((pattern, _capital("; ".join(slots)), chosen))
        rng.shuffle(rows)
        letter = "ABCD"[[p for p, _, _ in rows].index("T" * size)]
        add("CompRel", COMPREL_STEM, letter, "choice",
            sorted({_doc_id(pid, e["chunk"]) for e in entries}),
            axis=f"facts{size}", options=[t for _, t, _ in rows],
            meta={"attributes": picked, "ledger_seq": [e["seq"] for e in entries],
                  "support": [e["sentence"] for e in entries],
                  "values": [e["value"] for e in entries], "wrong_values": wrong,
                  "patterns": [p for p, _, _ in rows],
                  "option_values": [c for _, _, c in rows]})
