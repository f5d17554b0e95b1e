"""A procedural persona's training pairs Q and test items (docs/imprint.md §4.5; ImprintBench
App. D.3), every gold read from the persona's ledger; CompRel and ImpRel items an options-only
reader solves are dropped and counted (:mod:`.option_audit`). :mod:`.synthetic` describes the
families.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from clstream.protocols.imprint.schema import (
    Item,
    QAPair,
)
from clstream.protocols.imprint.settings.persona.catalogue import (
    CATALOGUE_BY_KEY,
    COMPREL_STEM,
    content_words,
)
from clstream.protocols.imprint.settings.persona.option_audit import solved_by
from clstream.protocols.imprint.settings.persona.personas import (
    ABSTAIN_GOLD,
    Persona,
    PersonaConfig,
    capitalised,
    chunk_doc_id,
    history,
    seeded_rng,
    state_at,
)

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
# Training pairs Q


def training_pairs(config: PersonaConfig, persona: Persona) -> list[QAPair]:
    """The persona's training pairs Q, about 100 per chunk from the shown ledger entries and
    sessions (the paper's Q, Table 5), in templates no test question uses."""
    pairs: list[QAPair] = []
    pid = persona.persona_id
    shown = [e for e in persona.ledger if not e["withheld"]]
    for chunk in range(config.chunks):
        doc_id = chunk_doc_id(pid, chunk)
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


def persona_items(config: PersonaConfig, persona: Persona, audits: Counter[str]) -> list[Item]:
    """The persona's items; ``audits`` counts, per family, the items the option-only audit
    removed (:mod:`~clstream.protocols.imprint.settings.persona.option_audit`)."""
    rng = seeded_rng(config, "items", persona.persona_id)
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
        source = [chunk_doc_id(pid, entry["chunk"])]
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
                sorted({source[0], chunk_doc_id(pid, stale["chunk"])}), axis=axis,
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


def _comprel_items(config: PersonaConfig, rng: random.Random, persona: Persona,
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
            rows.append((pattern, capitalised("; ".join(slots)), chosen))
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
            sorted({chunk_doc_id(pid, e["chunk"]) for e in entries}),
            axis=f"facts{size}", options=[t for _, t, _ in rows],
            meta={"attributes": picked, "ledger_seq": [e["seq"] for e in entries],
                  "support": [e["sentence"] for e in entries],
                  "values": [e["value"] for e in entries], "wrong_values": wrong,
                  "patterns": [p for p, _, _ in rows],
                  "option_values": [c for _, _, c in rows]})
