"""The ImprintBench data a generator writes and a run reads (docs/imprint.md §3).

A dataset is one directory:

* ``manifest.json`` -- ``{"setting", "generator", "seed", "config", "counts", "version"}``;
* ``corpus.jsonl`` -- the new-knowledge corpus C, one :class:`CorpusDoc` per line, in the order
  a method ingests it (chronological within an instance);
* ``qa.jsonl`` -- the training QA pairs Q (:class:`QAPair`), distilled from C; never a test
  question (:func:`check_disjoint`);
* ``items.jsonl`` -- the held-out test items (:class:`Item`), in the docs/imprint.md §3.2 item format plus
  the fields a run needs (instance, source documents, the stale answer, options);
* ``ledger.jsonl`` -- optional: the setting's ledger, one entry per line, from which every gold
  was derived (kept so a reader can re-derive and audit the golds).

One *instance* is one corpus a method is built on (docs/imprint.md §2): news and code have one instance
(``"all"``); personalization has one per persona (the instance id is the persona id).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clstream.core.errors import DataError
from clstream.core.files import WriteError, atomic_writer, os_error_cause, write_atomic
from clstream.core.jsonio import iter_json_lines, load_json_file
from clstream.core.secrets import storable

SCHEMA_VERSION = "imprint-data-v1"

Setting = Literal["news", "code", "persona"]
Family = Literal["DirAcq", "TempUpd", "RefRes", "CompRel", "ImpRel", "BoundAbs"]
JudgeName = Literal["yesno", "abstain", "identifier", "choice", "exact", "llm"]

SETTINGS: tuple[str, ...] = ("news", "code", "persona")
FAMILIES: tuple[str, ...] = ("DirAcq", "TempUpd", "RefRes", "CompRel", "ImpRel", "BoundAbs")
JUDGES: tuple[str, ...] = ("yesno", "abstain", "identifier", "choice", "exact", "llm")
# The families each setting's tables report (docs/imprint.md §5, §7.5): its "Avg" averages these.
REPORTED_FAMILIES: dict[str, tuple[str, ...]] = {
    "news": ("DirAcq", "TempUpd", "CompRel", "ImpRel", "BoundAbs"),
    "code": ("DirAcq", "RefRes", "CompRel", "ImpRel"),
    "persona": ("TempUpd", "RefRes", "CompRel", "ImpRel", "BoundAbs"),
}
DOC_KINDS: tuple[str, ...] = ("article", "feature", "chunk", "background")
SUPERVISIONS: tuple[str, ...] = ("C", "Q", "C+Q")
SINGLE_INSTANCE = "all"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CorpusDoc(_Strict):
    """One document of C: a news article, a code feature's page, a persona's chat chunk."""

    doc_id: str = Field(min_length=1)
    instance_id: str = SINGLE_INSTANCE
    date: str = ""  # ISO date (YYYY-MM-DD); ingestion order is the file's order
    kind: str = "article"
    title: str = ""
    text: str
    meta: dict[str, Any] = Field(default_factory=dict)


class QAPair(_Strict):
    """One training pair of Q, tied to the document it was distilled from."""

    qa_id: str = Field(min_length=1)
    instance_id: str = SINGLE_INSTANCE
    doc_id: str
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class Item(_Strict):
    """One held-out test item (docs/imprint.md §3.2, with the fields a run and a judge need).

    ``gold`` is the answer (a list: any of them is accepted, the first is the canonical one).
    ``axis`` is the family's sub-type (news TempUpd ``forward``/``negation``/``prior``/
    ``backward``, CompRel ``hop2``..., code CompRel ``no_import``, persona TempUpd
    ``new_info``/``changed_info``). ``gold_before`` is the answer before the update (stale
    answers are counted against it). ``options`` are the lettered options of a ``choice`` item
    (gold is then the letter). ``source_doc_ids`` are the documents the item was made from (the
    oracle shows them; nothing else may read them). ``after_doc`` places the question in the
    stream: it is asked once the first ``after_doc`` documents of its instance have been
    observed, of a memory that has seen nothing later (PersonaMem's end index, docs/imprint.md
    §2, §4.6); absent, it is asked after all of them.
    """

    item_id: str = Field(min_length=1)
    setting: Setting
    family: Family
    question: str = Field(min_length=1)
    gold: str | list[str]
    judge: JudgeName
    persona: str | None = None
    axis: str | None = None
    instance_id: str = SINGLE_INSTANCE
    source_doc_ids: list[str] = Field(default_factory=list)
    gold_before: str | list[str] | None = None
    options: list[str] = Field(default_factory=list)
    filters: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    after_doc: int | None = Field(default=None, ge=0)

    @property
    def golds(self) -> list[str]:
        return [self.gold] if isinstance(self.gold, str) else list(self.gold)

    @property
    def stale_golds(self) -> list[str]:
        if self.gold_before is None:
            return []
        return [self.gold_before] if isinstance(self.gold_before, str) else list(self.gold_before)


class Manifest(_Strict):
    setting: Setting
    generator: str
    seed: int | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    counts: dict[str, Any] = Field(default_factory=dict)
    version: str = SCHEMA_VERSION


@dataclass
class Dataset:
    """A loaded dataset directory (or one built in memory by a generator)."""

    manifest: Manifest
    corpus: list[CorpusDoc]
    qa: list[QAPair]
    items: list[Item]
    ledger: list[dict[str, Any]] = field(default_factory=list)

    @property
    def setting(self) -> str:
        return self.manifest.setting

    def instances(self) -> list[str]:
        """Instance ids in first-appearance order over the corpus, then the items."""
        seen: dict[str, None] = {}
        for doc in self.corpus:
            seen.setdefault(doc.instance_id, None)
        for item in self.items:
            seen.setdefault(item.instance_id, None)
        return list(seen)


M = TypeVar("M", bound=BaseModel)


def _field_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(record)"
    return f"field {loc!r}: {err['msg']}"


def _storable_strings(value: Any) -> Any:
    """``value`` with every string (keys too) passed through :func:`storable`: a lone surrogate
    (``"\\ud800"``, valid JSON) is kept as its escape, as in OAKS and SeqMem data and every
    store write (docs/design.md §7), instead of the models refusing the record."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {_storable_strings(k): _storable_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable_strings(item) for item in value]
    return value


def read_models(path: str | Path, model: type[M], key: str) -> list[M]:
    """Every line of a JSON Lines file as ``model``; one-line errors naming file, line (and
    the record's ``key`` value where it has one) and field. Duplicate keys are an error."""
    out: list[M] = []
    seen: set[str] = set()
    for number, raw in iter_json_lines(path):
        value = _storable_strings(raw)
        record = f"line {number}"
        if not isinstance(value, dict):
            raise DataError(path, record, None, "expected a JSON object")
        if isinstance(value.get(key), str):
            record = f"line {number} ({key} {value[key]!r})"
        try:
            obj = model.model_validate(value)
        except ValidationError as exc:
            raise DataError(path, record, None, _field_error(exc)) from None
        ident = getattr(obj, key)
        if ident in seen:
            raise DataError(path, record, key, f"duplicate {key} {ident!r}")
        seen.add(ident)
        out.append(obj)
    return out


def letter_of(gold: str) -> str | None:
    """The option letter a gold spells ("B", "(b)", "B."), None when it is not one letter."""
    text = gold.strip().strip("()").strip().rstrip(".").upper()
    return text if len(text) == 1 and "A" <= text <= "Z" else None


def load_items(path: str | Path) -> list[Item]:
    """The items file alone (``clstream score imprint`` reads only this and predictions)."""
    items = read_models(path, Item, "item_id")
    for item in items:
        if item.judge == "choice" and not item.options and letter_of(item.golds[0]) is None:
            raise DataError(path, f"item {item.item_id!r}", "gold",
                            "a 'choice' item without options needs a letter gold (A-Z)")
        if item.judge == "choice" and item.options:
            check_choice_gold(item, path)
        if not item.golds or any(not isinstance(g, str) or not g.strip() for g in item.golds):
            raise DataError(path, f"item {item.item_id!r}", "gold", "empty gold")
    return items


def load_dataset(directory: str | Path) -> Dataset:
    """Read a dataset directory written by :func:`write_dataset` (or by hand)."""
    root = Path(directory)
    if not root.is_dir():
        raise DataError(root, None, None, "not a dataset directory (expected manifest.json, "
                        "corpus.jsonl, qa.jsonl, items.jsonl)")
    manifest_path = root / "manifest.json"
    raw = load_json_file(manifest_path)
    if not isinstance(raw, dict):
        raise DataError(manifest_path, None, None, "expected a JSON object")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        raise DataError(manifest_path, None, None, _field_error(exc)) from None
    corpus = read_models(root / "corpus.jsonl", CorpusDoc, "doc_id")
    qa_path = root / "qa.jsonl"
    qa = read_models(qa_path, QAPair, "qa_id") if qa_path.exists() else []
    items = load_items(root / "items.jsonl")
    ledger_path = root / "ledger.jsonl"
    ledger = [v for _, v in iter_json_lines(ledger_path)] if ledger_path.exists() else []
    data = Dataset(manifest, corpus, qa, items, ledger)
    check_references(data, root)
    return data


def check_references(data: Dataset, where: str | Path = "dataset") -> None:
    """Every item's and pair's document exists, in the same instance; items match the
    manifest's setting; Q holds no test question (:func:`check_disjoint`). An error names the
    file of the record at fault when ``where`` is the dataset directory."""
    items_file: str | Path = Path(where) / "items.jsonl" if isinstance(where, Path) else where
    qa_file: str | Path = Path(where) / "qa.jsonl" if isinstance(where, Path) else where
    docs = {d.doc_id: d for d in data.corpus}
    per_instance: dict[str, int] = {}
    for corpus_doc in data.corpus:
        per_instance[corpus_doc.instance_id] = per_instance.get(corpus_doc.instance_id, 0) + 1
    for item in data.items:
        if item.after_doc is not None and item.after_doc > per_instance.get(item.instance_id, 0):
            raise DataError(items_file, f"item {item.item_id!r}", "after_doc",
                            f"{item.after_doc} is past the instance's "
                            f"{per_instance.get(item.instance_id, 0)} documents")
        if item.setting != data.setting:
            raise DataError(items_file, f"item {item.item_id!r}", "setting",
                            f"{item.setting!r} in a {data.setting!r} dataset")
        for doc_id in item.source_doc_ids:
            doc = docs.get(doc_id)
            if doc is None:
                raise DataError(items_file, f"item {item.item_id!r}", "source_doc_ids",
                                f"no document {doc_id!r} in corpus.jsonl")
            if doc.instance_id != item.instance_id:
                raise DataError(items_file, f"item {item.item_id!r}", "source_doc_ids",
                                f"document {doc_id!r} belongs to instance {doc.instance_id!r}")
        if item.judge == "choice" and item.options:
            check_choice_gold(item, items_file)
    for pair in data.qa:
        if pair.doc_id not in docs:
            raise DataError(qa_file, f"qa {pair.qa_id!r}", "doc_id",
                            f"no document {pair.doc_id!r} in corpus.jsonl")
    check_disjoint(data.qa, data.items, where)


def check_choice_gold(item: Item, where: str | Path = "dataset") -> None:
    """A multiple-choice item with options names one of them as its gold: a letter within
    the options, or an option's text. (Options are optional, docs/imprint.md §3.2: without
    them a letter gold is read as it is.)"""
    gold = item.golds[0] if item.golds else ""
    letters = [chr(ord("A") + i) for i in range(len(item.options))]
    letter = letter_of(gold)
    if letter is not None:
        if letter not in letters:
            raise DataError(where, f"item {item.item_id!r}", "gold",
                            f"letter {letter!r} names no option (options {letters[0]}-"
                            f"{letters[-1]})")
        return
    if question_key(gold) not in {question_key(o) for o in item.options}:
        raise DataError(where, f"item {item.item_id!r}", "gold",
                        f"{item.golds[0]!r} is neither an option letter nor an option's text")


_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def question_key(text: str) -> str:
    """A question's identity for the disjointness check: case, accents, punctuation and
    spacing ignored."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return _NON_WORD.sub(" ", folded).strip()


def check_disjoint(qa: Sequence[QAPair], items: Sequence[Item],
                   where: str | Path = "dataset") -> None:
    """Q and the test set are disjoint (docs/imprint.md §3.1): no training question equals a test
    question up to case, accents, punctuation and spacing."""
    tests = {question_key(i.question): i.item_id for i in items}
    for pair in qa:
        hit = tests.get(question_key(pair.question))
        if hit is not None:
            raise DataError(where, f"qa {pair.qa_id!r}", "question",
                            f"repeats test item {hit!r} (Q must not hold test questions)")


def _jsonl(records: Iterable[BaseModel | dict[str, Any]]) -> Iterable[str]:
    for r in records:
        value = r.model_dump(exclude_defaults=True) if isinstance(r, BaseModel) else r
        if isinstance(r, Item | QAPair | CorpusDoc):
            # Keys docs/imprint.md §3.2 and the loaders need are written even at their default.
            value = {**_required(r), **value}
        yield json.dumps(value, ensure_ascii=False, sort_keys=False) + "\n"


def _required(r: BaseModel) -> dict[str, Any]:
    keys = {"Item": ("item_id", "setting", "family", "question", "gold", "judge",
                     "instance_id"),
            "QAPair": ("qa_id", "instance_id", "doc_id", "question", "answer"),
            "CorpusDoc": ("doc_id", "instance_id", "date", "kind", "title", "text")}
    return {k: getattr(r, k) for k in keys[type(r).__name__]}


DATASET_FILES: tuple[str, ...] = ("corpus.jsonl", "qa.jsonl", "items.jsonl", "ledger.jsonl",
                                  "manifest.json")


def write_dataset(directory: str | Path, data: Dataset) -> Path:
    """Write ``data`` as a dataset directory; returns the directory.

    All or nothing: the files are written into a hidden staging directory beside it, then
    renamed into place, manifest last; a failure (a full disk) removes the staging directory
    and leaves the directory as it was (absent, or holding the previous dataset and any
    model-reply caches). The manifest's ``counts`` are filled in here (documents, pairs, items
    per family)."""
    root = Path(directory)
    check_references(data, root)
    by_family: dict[str, int] = {}
    for item in data.items:
        by_family[item.family] = by_family.get(item.family, 0) + 1
    counts = {"documents": len(data.corpus), "qa_pairs": len(data.qa),
              "items": len(data.items), "instances": len(data.instances()),
              "by_family": {f: by_family[f] for f in FAMILIES if f in by_family}}
    manifest = data.manifest.model_copy(update={"counts": counts})
    existed = root.exists()
    root.mkdir(parents=True, exist_ok=True)
    stage = root.parent / f".{root.name}.partial-{os.getpid()}"
    name = ""
    try:
        stage.mkdir(exist_ok=True)
        for name, rows in (("corpus.jsonl", data.corpus), ("qa.jsonl", data.qa),
                           ("items.jsonl", data.items), ("ledger.jsonl", data.ledger)):
            if name == "ledger.jsonl" and not rows:
                continue
            with atomic_writer(stage / name) as handle:
                for line in _jsonl(rows):
                    handle.write(line)
        name = "manifest.json"
        write_atomic(stage / name,
                     json.dumps(manifest.model_dump(), indent=2, ensure_ascii=False) + "\n")
        for name in DATASET_FILES:
            if (stage / name).exists():
                os.replace(stage / name, root / name)
            elif (root / name).exists():
                (root / name).unlink()  # an older dataset's ledger
    except (OSError, WriteError) as error:
        shutil.rmtree(stage, ignore_errors=True)
        if not existed:
            shutil.rmtree(root, ignore_errors=True)
        cause = error.cause if isinstance(error, WriteError) else os_error_cause(error)
        raise WriteError(root / name, cause) from None
    stage.rmdir()
    return root
