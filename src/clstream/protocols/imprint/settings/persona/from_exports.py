"""ImprintBench personalization from files a user already has (docs/imprint.md §4.6).

The paper's persona histories come from PersonaMem and HorizonBench (ImprintBench App. D.3,
Tables 5 and 8). Nothing is downloaded here: the user points at local copies and the adapters
turn them into the shared dataset format (:mod:`clstream.protocols.imprint.schema`).

**PersonaMem v1** (:func:`load_personamem`): a directory with ``questions_<size>.csv`` and
``shared_contexts_<size>.jsonl``.

* CSV columns read: ``user_question_or_message`` (the question), ``correct_answer`` (the
  option letter, written ``(c)``, ``c`` or ``C``), ``all_options`` (a JSON or Python-literal
  list of strings; a leading ``(a)`` / ``a.`` label is stripped), ``shared_context_id``,
  ``end_index_in_shared_context`` (messages before this index are the history the question
  was asked after); optional ``question_type``, ``persona_id``, ``question_id``.
* Each JSONL line maps one shared-context id to its message list:
  ``{"<id>": [{"role": ..., "content": ...}, ...]}``.
* One instance per shared context (a method is built on one user's history). The messages up
  to the largest end index any question uses are split into ``chunks`` documents (kind
  ``"chunk"``; PersonaMem has no dates), and further at every question's end index, so that
  each question's history is a whole number of documents. Items are ``choice`` items, gold =
  the letter; ``after_doc`` = the documents that make up the question's history, so a run
  asks the question there, of a memory that has seen nothing later (PersonaMem asks each
  question at its place in the conversation); their source documents are those documents.
* Family from ``question_type`` (:data:`PERSONAMEM_FAMILIES`): recalling shared facts ->
  DirAcq; acknowledging the latest preference, tracking its evolution and revisiting the
  reasons behind an update -> TempUpd (axis ``latest`` / ``evolution`` / ``reason``);
  recommendations, new ideas and generalising to new scenarios -> ImpRel (they ask what fits
  the user without naming the fact). A row without a type is ImpRel; an unknown type is an
  error naming the row.

**HorizonBench-style export** (:func:`load_horizon`): a JSON Lines file, one persona a line::

    {"persona_id": "u07",
     "sessions": [{"session_id": "s01", "date": "2025-03-02",
                   "turns": [{"role": "user", "content": "..."}, ...]}, ...],
     "changes": [{"attribute": "diet", "old_value": "vegetarian" | null,
                  "new_value": "vegan", "session_id": "s05",
                  "cause"?: "stated" | "life_event:<id>", "explicitness"?: "direct" | ...,
                  "domain"?: "...", "constraint_dimension"?: "...", "affordances"?: [...]}],
     "items": [{"item_id"?: "...", "question": "...", "options": ["...", ...],
                "answer": "B" | 1, "family"?: "TempUpd", "axis"?: "...",
                "attribute"?: "diet", "stale_answer"?: "A" | 0}]}

Sessions are sorted by date and packed into ``chunks`` dated documents (the last session's
date); every change becomes a ledger entry in the format of
:mod:`clstream.protocols.imprint.settings.persona.synthetic` (its session's chunk, date and first user turn);
items are ``choice`` items (``answer`` a letter or a 0-based index), family ``TempUpd`` unless
given, ``gold_before`` the stale option's letter when ``stale_answer`` is given (HorizonBench's
main error is choosing the originally stated value), source documents the chunks holding the
item's attribute's changes (all the persona's chunks when it names none).

Every malformed file raises :class:`~clstream.core.errors.DataError` naming the file, the
line or row, and the field.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError
from clstream.core.jsonio import decode_utf8, iter_json_lines, read_file_bytes
from clstream.protocols.imprint.schema import (
    FAMILIES,
    CorpusDoc,
    Dataset,
    Item,
    Manifest,
)

PERSONAMEM_FAMILIES: dict[str, tuple[str, str | None]] = {
    "recall_user_shared_facts": ("DirAcq", None),
    "acknowledge_latest_user_preferences": ("TempUpd", "latest"),
    "track_full_preference_evolution": ("TempUpd", "evolution"),
    "revisit_reasons_behind_preference_updates": ("TempUpd", "reason"),
    "provide_preference_aligned_recommendations": ("ImpRel", None),
    "suggest_new_ideas": ("ImpRel", None),
    "generalize_to_new_scenarios": ("ImpRel", None),
}
_PERSONAMEM_COLUMNS = ("user_question_or_message", "correct_answer", "all_options",
                       "shared_context_id", "end_index_in_shared_context")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_OPTION_LABEL = re.compile(r"^\s*(?:\(([a-zA-Z])\)|([a-zA-Z])[.)])\s+")


# ----------------------------------------------------------------------------------------------
# Shared helpers


def _split(count: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous, near-equal, non-empty ranges over ``count`` things (fewer when
    there are fewer things)."""
    parts = max(1, min(parts, count))
    bounds = [round(i * count / parts) for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(parts)]


def _render_turns(turns: Sequence[dict[str, Any]]) -> str:
    return "\n".join(f"{str(t['role']).capitalize()}: {t['content']}" for t in turns)


def _letter(value: object, n_options: int, path: Path, record: str, field: str) -> str:
    """An answer given as ``B``, ``b``, ``(b)`` or a 0-based index, as an upper-case letter."""
    if isinstance(value, bool):
        raise DataError(path, record, field, "expected an option letter or a 0-based index")
    if isinstance(value, int):
        index = value
    elif isinstance(value, str) and re.fullmatch(r"\s*\(?([a-zA-Z])\)?\s*", value):
        index = _LETTERS.index(value.strip().strip("()").upper())
    else:
        raise DataError(path, record, field,
                        f"expected an option letter or a 0-based index, got {value!r}")
    if not 0 <= index < n_options:
        raise DataError(path, record, field,
                        f"answer {value!r} is outside the {n_options} options")
    return _LETTERS[index]


def _messages(value: object, path: Path, record: str, field: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise DataError(path, record, field, "expected a list of {role, content} messages")
    for k, msg in enumerate(value):
        if (not isinstance(msg, dict) or not isinstance(msg.get("role"), str)
                or not isinstance(msg.get("content"), str)):
            raise DataError(path, record, f"{field}[{k}]",
                            "expected an object with string 'role' and 'content'")
    return value


# ----------------------------------------------------------------------------------------------
# PersonaMem v1


def load_personamem(directory: str | Path, size: str | None = None,
                    chunks: int = 1) -> Dataset:
    """PersonaMem v1 files in ``directory`` (``questions_<size>.csv`` +
    ``shared_contexts_<size>.jsonl``) as a personalization dataset; ``size`` picks among
    several sizes (``32k``, ``128k``, ``1M``) and may be left out when there is one.
    ``chunks`` = documents per shared context (the paper packs PersonaMem into one)."""
    root = Path(directory)
    if not root.is_dir():
        raise DataError(root, None, None, "not a directory (expected questions_<size>.csv "
                        "and shared_contexts_<size>.jsonl)")
    if chunks < 1:
        raise DataError(root, None, "chunks", "must be >= 1")
    sizes = sorted(p.name[len("questions_"):-len(".csv")] for p in root.glob("questions_*.csv"))
    if size is None:
        if len(sizes) != 1:
            found = ", ".join(sizes) or "none"
            raise DataError(root, None, None,
                            f"expected exactly one questions_<size>.csv (found: {found}); "
                            "name the size")
        size = sizes[0]
    questions_path = root / f"questions_{size}.csv"
    contexts_path = root / f"shared_contexts_{size}.jsonl"
    rows = _read_csv(questions_path)
    contexts = _read_contexts(contexts_path)

    needed: dict[str, int] = {}
    ends: dict[str, set[int]] = {}
    parsed: list[tuple[str, dict[str, Any]]] = []
    for number, row in rows:
        record = f"row {number}"
        context_id = row["shared_context_id"].strip()
        if context_id not in contexts:
            raise DataError(questions_path, record, "shared_context_id",
                            f"no shared context {context_id!r} in {contexts_path.name}")
        end_text = row["end_index_in_shared_context"].strip()
        if not end_text.isdigit():
            raise DataError(questions_path, record, "end_index_in_shared_context",
                            f"expected a non-negative integer, got {end_text!r}")
        end = min(int(end_text), len(contexts[context_id]))
        needed[context_id] = max(needed.get(context_id, 0), end)
        ends.setdefault(context_id, set()).add(end)
        parsed.append((record, {**row, "_end": end, "_context": context_id}))

    corpus: list[CorpusDoc] = []
    spans: dict[str, list[tuple[str, int, int]]] = {}
    for context_id in sorted(needed, key=lambda c: list(contexts).index(c)):
        messages = contexts[context_id][:max(needed[context_id], 1)]
        bounds = sorted({0, *(hi for _, hi in _split(len(messages), chunks)),
                         *(e for e in ends[context_id] if 0 < e < len(messages))})
        for part, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            doc_id = f"{context_id}-c{part + 1}"
            corpus.append(CorpusDoc(
                doc_id=doc_id, instance_id=context_id, kind="chunk",
                title=f"PersonaMem history {context_id}, part {part + 1}",
                text=_render_turns(messages[lo:hi]) + "\n",
                meta={"source": "personamem", "messages": [lo, hi]}))
            spans.setdefault(context_id, []).append((doc_id, lo, hi))

    items: list[Item] = []
    for record, row in parsed:
        items.append(_personamem_item(questions_path, record, row, spans[row["_context"]]))
    manifest = Manifest(setting="persona", generator="imprint.persona_local.personamem",
                        config={"directory": str(root), "size": size, "chunks": chunks})
    return Dataset(manifest, corpus, [], items, [])


def _read_csv(path: Path) -> list[tuple[int, dict[str, str]]]:
    text = decode_utf8(read_file_bytes(path), path, None, allow_bom=True)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        missing = [c for c in _PERSONAMEM_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(path, "header", missing[0], "missing column")
        out: list[tuple[int, dict[str, str]]] = []
        for number, row in enumerate(reader, start=1):
            if None in row or any(v is None for v in row.values()):
                raise DataError(path, f"row {number}", None, "wrong number of fields")
            out.append((number, row))
    except csv.Error as exc:
        raise DataError(path, f"line {reader.line_num}", None, f"bad CSV: {exc}") from None
    if not out:
        raise DataError(path, None, None, "no question rows")
    return out


def _read_contexts(path: Path) -> dict[str, list[dict[str, Any]]]:
    contexts: dict[str, list[dict[str, Any]]] = {}
    for number, value in iter_json_lines(path):
        record = f"line {number}"
        if not isinstance(value, dict) or len(value) != 1:
            raise DataError(path, record, None,
                            "expected one object mapping a shared-context id to its messages")
        (context_id, messages), = value.items()
        if context_id in contexts:
            raise DataError(path, record, context_id, "duplicate shared context id")
        contexts[context_id] = _messages(messages, path, record, context_id)
    return contexts


def _parse_options(text: str, path: Path, record: str) -> list[str]:
    value: object
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise DataError(path, record, "all_options",
                            "expected a list of option strings") from None
    if (not isinstance(value, list | tuple) or len(value) < 2
            or not all(isinstance(o, str) and o.strip() for o in value)):
        raise DataError(path, record, "all_options", "expected a list of >= 2 option strings")
    if len(value) > len(_LETTERS):
        raise DataError(path, record, "all_options", f"more than {len(_LETTERS)} options")
    return [_OPTION_LABEL.sub("", o).strip() for o in value]


def _personamem_item(path: Path, record: str, row: dict[str, Any],
                     spans: list[tuple[str, int, int]]) -> Item:
    question = row["user_question_or_message"].strip()
    if not question:
        raise DataError(path, record, "user_question_or_message", "empty question")
    options = _parse_options(row["all_options"], path, record)
    gold = _letter(row["correct_answer"], len(options), path, record, "correct_answer")
    qtype = (row.get("question_type") or "").strip()
    if qtype and qtype not in PERSONAMEM_FAMILIES:
        known = ", ".join(PERSONAMEM_FAMILIES)
        raise DataError(path, record, "question_type",
                        f"unknown question type {qtype!r} (known: {known})")
    family, axis = PERSONAMEM_FAMILIES.get(qtype, ("ImpRel", None))
    context_id = row["_context"]
    end = row["_end"]
    sources = [doc_id for doc_id, _, hi in spans if hi <= end]
    item_id = (row.get("question_id") or "").strip() or f"{context_id}-{record.replace(' ', '')}"
    persona = (row.get("persona_id") or "").strip() or context_id
    return Item(item_id=item_id, setting="persona", family=family,  # type: ignore[arg-type]
                question=question, gold=gold, judge="choice", persona=persona, axis=axis,
                instance_id=context_id, source_doc_ids=sources, options=options,
                after_doc=len(sources),
                meta={"source": "personamem", "question_type": qtype or None,
                      "end_index_in_shared_context": end})


# ----------------------------------------------------------------------------------------------
# HorizonBench-style export


def load_horizon(path: str | Path, chunks: int = 4) -> Dataset:
    """A HorizonBench-style JSONL export (fields in the module docstring) as a
    personalization dataset: ``chunks`` dated documents per persona, its ledger, its items."""
    source = Path(path)
    if chunks < 1:
        raise DataError(source, None, "chunks", "must be >= 1")
    corpus: list[CorpusDoc] = []
    items: list[Item] = []
    ledger: list[dict[str, Any]] = []
    seen_personas: set[str] = set()
    seen_items: set[str] = set()
    for number, value in iter_json_lines(source):
        record = f"line {number}"
        if not isinstance(value, dict):
            raise DataError(source, record, None, "expected a JSON object")
        persona = _string(value, "persona_id", source, record)
        record = f"line {number} (persona {persona!r})"
        if persona in seen_personas:
            raise DataError(source, record, "persona_id", "duplicate persona")
        seen_personas.add(persona)
        docs, chunk_of, session_dates, first_user_turn = _horizon_chunks(
            source, record, persona, value.get("sessions"), chunks)
        corpus.extend(docs)
        entries = _horizon_ledger(source, record, persona, value.get("changes", []),
                                  chunk_of, session_dates, first_user_turn)
        ledger.extend(entries)
        items.extend(_horizon_items(source, record, persona, value.get("items", []),
                                    docs, entries, seen_items))
    if not seen_personas:
        raise DataError(source, None, None, "no personas in the file")
    manifest = Manifest(setting="persona", generator="imprint.persona_local.horizon",
                        config={"path": str(source), "chunks": chunks})
    return Dataset(manifest, corpus, [], items, ledger)


def _string(obj: dict[str, Any], key: str, path: Path, record: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataError(path, record, key, "expected a non-empty string")
    return value.strip()


def _horizon_chunks(path: Path, record: str, persona: str, sessions: object, chunks: int
                    ) -> tuple[list[CorpusDoc], dict[str, int], dict[str, str], dict[str, str]]:
    if not isinstance(sessions, list) or not sessions:
        raise DataError(path, record, "sessions", "expected a non-empty list of sessions")
    checked: list[tuple[str, str, list[dict[str, Any]]]] = []
    for k, session in enumerate(sessions):
        where = f"sessions[{k}]"
        if not isinstance(session, dict):
            raise DataError(path, record, where, "expected an object")
        session_id = _string(session, "session_id", path, f"{record} {where}")
        day = _string(session, "date", path, f"{record} {where}")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
            raise DataError(path, f"{record} {where}", "date",
                            f"expected YYYY-MM-DD, got {day!r}")
        turns = _messages(session.get("turns"), path, f"{record} {where}", "turns")
        checked.append((session_id, day, turns))
    ids = [s for s, _, _ in checked]
    if len(set(ids)) != len(ids):
        raise DataError(path, record, "sessions", "duplicate session_id")
    checked.sort(key=lambda s: s[1])  # stable: same-day sessions keep the file's order
    docs: list[CorpusDoc] = []
    chunk_of: dict[str, int] = {}
    dates = {s: d for s, d, _ in checked}
    first_user: dict[str, str] = {}
    for part, (lo, hi) in enumerate(_split(len(checked), chunks)):
        blocks = []
        for session_id, day, turns in checked[lo:hi]:
            chunk_of[session_id] = part
            user_turns = [i for i, t in enumerate(turns) if t["role"] == "user"]
            first_user[session_id] = f"{session_id}.t{(user_turns[0] if user_turns else 0) + 1:02d}"
            blocks.append(f"Session {session_id} ({day})\n{_render_turns(turns)}")
        docs.append(CorpusDoc(
            doc_id=f"{persona}-c{part + 1}", instance_id=persona, date=checked[hi - 1][1],
            kind="chunk", title=f"Conversations of {persona}, part {part + 1}",
            text="\n\n".join(blocks) + "\n",
            meta={"source": "horizon", "persona": persona, "chunk": part,
                  "sessions": [s for s, _, _ in checked[lo:hi]]}))
    return docs, chunk_of, dates, first_user


def _horizon_ledger(path: Path, record: str, persona: str, changes: object,
                    chunk_of: dict[str, int], dates: dict[str, str],
                    first_user: dict[str, str]) -> list[dict[str, Any]]:
    if not isinstance(changes, list):
        raise DataError(path, record, "changes", "expected a list")
    rows: list[tuple[str, int, dict[str, Any]]] = []
    for k, change in enumerate(changes):
        where = f"{record} changes[{k}]"
        if not isinstance(change, dict):
            raise DataError(path, where, None, "expected an object")
        attribute = _string(change, "attribute", path, where)
        new_value = _string(change, "new_value", path, where)
        old = change.get("old_value")
        if old is not None and not isinstance(old, str):
            raise DataError(path, where, "old_value", "expected a string or null")
        session_id = _string(change, "session_id", path, where)
        if session_id not in chunk_of:
            raise DataError(path, where, "session_id", f"no session {session_id!r}")
        affordances = change.get("affordances", [])
        if not isinstance(affordances, list) or not all(isinstance(a, str) for a in affordances):
            raise DataError(path, where, "affordances", "expected a list of strings")
        extra = {}
        for key in ("cause", "explicitness", "domain", "constraint_dimension"):
            if key in change and not isinstance(change[key], str):
                raise DataError(path, where, key, "expected a string")
            extra[key] = change.get(key)
        rows.append((dates[session_id], k, {
            "session": session_id, "chunk": chunk_of[session_id],
            "date": dates[session_id], "turn_id": first_user[session_id],
            "attribute": attribute, "value": new_value, "previous_value": old,
            "polarity": "+", "explicitness": extra["explicitness"] or "direct",
            "cause": extra["cause"] or "stated", "domain": extra["domain"] or "",
            "constraint_dimension": extra["constraint_dimension"] or "",
            "affordances": list(affordances), "withheld": False}))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [{"persona": persona, "seq": n + 1, **entry}
            for n, (_, _, entry) in enumerate(rows)]


def _horizon_items(path: Path, record: str, persona: str, raw: object, docs: list[CorpusDoc],
                   entries: list[dict[str, Any]], seen: set[str]) -> list[Item]:
    if not isinstance(raw, list):
        raise DataError(path, record, "items", "expected a list")
    out: list[Item] = []
    for k, obj in enumerate(raw):
        where = f"{record} items[{k}]"
        if not isinstance(obj, dict):
            raise DataError(path, where, None, "expected an object")
        question = _string(obj, "question", path, where)
        options = obj.get("options")
        if (not isinstance(options, list) or len(options) < 2
                or not all(isinstance(o, str) and o.strip() for o in options)
                or len(options) > len(_LETTERS)):
            raise DataError(path, where, "options", "expected a list of >= 2 option strings")
        if "answer" not in obj:
            raise DataError(path, where, "answer", "missing")
        gold = _letter(obj["answer"], len(options), path, where, "answer")
        stale = (_letter(obj["stale_answer"], len(options), path, where, "stale_answer")
                 if obj.get("stale_answer") is not None else None)
        family = obj.get("family", "TempUpd")
        if family not in FAMILIES:
            raise DataError(path, where, "family",
                            f"expected one of {', '.join(FAMILIES)}, got {family!r}")
        axis = obj.get("axis")
        if axis is not None and not isinstance(axis, str):
            raise DataError(path, where, "axis", "expected a string")
        attribute = obj.get("attribute")
        if attribute is not None and not isinstance(attribute, str):
            raise DataError(path, where, "attribute", "expected a string")
        chunks = sorted({e["chunk"] for e in entries if e["attribute"] == attribute})
        sources = ([docs[c].doc_id for c in chunks] if chunks else [d.doc_id for d in docs])
        item_id = obj.get("item_id") or f"{persona}-item{k + 1:03d}"
        if not isinstance(item_id, str):
            raise DataError(path, where, "item_id", "expected a string")
        if item_id in seen:
            raise DataError(path, where, "item_id", f"duplicate item id {item_id!r}")
        seen.add(item_id)
        out.append(Item(item_id=item_id, setting="persona", family=family, question=question,
                        gold=gold, judge="choice", persona=persona, axis=axis,
                        instance_id=persona, source_doc_ids=sources, gold_before=stale,
                        options=[o.strip() for o in options],
                        meta={"source": "horizon", "attribute": attribute}))
    return out
