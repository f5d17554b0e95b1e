"""A procedural SeqMem-Eval stream in which memory helps by construction (docs/seqmem.md §2.5).

The paper's benchmarks need datasets and a capable model; this stream runs offline and has a
known answer to "can this memory method learn from feedback at all?".

Design. A seeded generator invents a small world (pronounceable made-up names, so no model
knows the answers beforehand) and four task *families*, each governed by hidden parameters:

- ``registry``: a secret value per (entity, attribute), e.g. the vault code of a person;
- ``lexicon``: the English meaning of each word of an invented language;
- ``cipher``: a letter shift per named cipher, applied to everyday English words;
- ``conversion``: an integer factor per pair of invented units, applied to a quantity.

The question alone never reveals its answer. The evaluator's feedback does: every task
carries a ``reveal`` sentence that states the rule instance and ends with
``Correct answer: X.`` (e.g. "The vault code of Tirovan is 4721. Correct answer: 4721.").
Items recur along the stream with the same question text, so a later task is answerable from
an earlier record that a lexical retriever finds by the rare invented names it shares; the
same record shown in a prompt as "Question: ... Correct answer: X" lets even a simple
heuristic reader copy the answer. Cipher and conversion items also appear with new inputs,
which only a system that generalizes the revealed rule can solve: a gap between copying and
learning that the metrics can show.

Hold-out tasks (never used for updates) share the families and hidden parameters: registry
and lexicon items seen in the stream asked with a different wording, and cipher/conversion
rules applied to inputs the stream never used. A memory-free system scores near zero on both
stream and hold-out; a system that remembers feedback rises above it.

Everything comes from ``random.Random(seed)``; :func:`write_seqmem_synthetic` writes
sorted-key JSON, so the same seed gives a byte-identical file.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError, SpecError
from clstream.core.files import write_atomic
from clstream.core.jsonio import loads_json_bytes, read_file_bytes
from clstream.protocols.seqmem.tasks import SeqStream, SeqTask

FORMAT = "clstream-seqmem-synthetic"
VERSION = 1
FAMILIES = ("registry", "lexicon", "cipher", "conversion")
_SHARE = (0.35, 0.2, 0.25, 0.2)

_ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "gr",
    "kr",
    "tr",
    "th",
    "sh",
    "st",
    "qu",
    "vh",
)
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou", "ae")
_CODAS = ("", "", "n", "r", "l", "s", "th", "x", "m", "sk")
_ENGLISH = (
    "river",
    "stone",
    "lantern",
    "garden",
    "window",
    "copper",
    "meadow",
    "harbor",
    "pepper",
    "thunder",
    "candle",
    "orchard",
    "ladder",
    "silver",
    "forest",
    "kettle",
    "mirror",
    "basket",
    "velvet",
    "pillow",
    "anchor",
    "bridge",
    "castle",
    "feather",
    "marble",
    "pocket",
    "rabbit",
    "saddle",
    "timber",
    "wagon",
    "blanket",
    "compass",
)
_ATTRIBUTES = (("vault code", "code"), ("berth number", "berth"), ("house sigil", "word"))


class _Namer:
    """Unique invented words from syllables; ``cap`` for proper names."""

    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set(_ENGLISH)

    def word(self, syllables: int, cap: bool = False, codas: tuple[str, ...] = _CODAS) -> str:
        while True:
            w = "".join(
                self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)
            ) + self.rng.choice(codas)
            if w not in self.used and 4 <= len(w) <= 11:
                self.used.add(w)
                return w.capitalize() if cap else w


def _shift(word: str, k: int) -> str:
    return "".join(chr((ord(c) - 97 + k) % 26 + 97) for c in word)


def _task(family: str, key: str, prompt: str, target: str, rule: str) -> dict[str, Any]:
    return {
        "family": family,
        "key": key,
        "prompt": prompt,
        "target": target,
        "reveal": f"{rule} Correct answer: {target}.",
    }


def _registry(rng: random.Random, namer: _Namer, n: int) -> list[dict[str, Any]]:
    items = []
    for _ in range(n):
        who, (attr, sort) = namer.word(rng.choice((2, 3)), cap=True), rng.choice(_ATTRIBUTES)
        value = (
            str(rng.randint(1000, 9999))
            if sort == "code"
            else str(rng.randint(10, 99))
            if sort == "berth"
            else namer.word(2)
        )
        items.append(
            {
                "key": f"{who}/{attr}",
                "target": value,
                "rule": f"The {attr} of {who} is {value}.",
                "ask": f"What is the {attr} of {who}?",
                "ask_other": f"Tell me the {attr} that belongs to {who}.",
            }
        )
    return items


def _lexicon(rng: random.Random, namer: _Namer, n: int) -> list[dict[str, Any]]:
    tongue = namer.word(2, cap=True)
    meanings = rng.sample(_ENGLISH, min(n, len(_ENGLISH)))
    items = []
    for meaning in meanings:
        word = namer.word(2)
        items.append(
            {
                "key": f"{tongue}/{word}",
                "target": meaning,
                "rule": f"In the {tongue} tongue, '{word}' means {meaning}.",
                "ask": f"In the {tongue} tongue, what does the word '{word}' mean?",
                "ask_other": f"Translate the {tongue} word '{word}' into English.",
            }
        )
    return items


def _make_cipher(rng: random.Random, namer: _Namer) -> tuple[str, int]:
    return namer.word(2, cap=True), rng.randint(1, 25)


def _cipher_item(name: str, k: int, plain: str) -> dict[str, Any]:
    enc = _shift(plain, k)
    return {
        "key": f"{name}/{plain}",
        "target": enc,
        "rule": f"The {name} cipher moves every letter {k} places forward in the alphabet "
        f"(wrapping from z to a), so '{plain}' becomes '{enc}'.",
        "ask": f"Using the {name} cipher, encode the word '{plain}'.",
    }


def _make_units(rng: random.Random, namer: _Namer) -> tuple[str, str, int]:
    plural_friendly = ("n", "r", "l", "m", "rk", "nd")  # unit names take a plain "s"
    return (
        namer.word(1, codas=plural_friendly),
        namer.word(2, codas=plural_friendly),
        rng.randint(2, 12),
    )


def _conversion_item(big: str, small: str, factor: int, q: int) -> dict[str, Any]:
    total = str(q * factor)
    return {
        "key": f"{big}->{small}/{q}",
        "target": total,
        "rule": f"One {big} equals {factor} {small}s, so {q} {big}s make {total} {small}s.",
        "ask": f"How many {small}s make {q} {big}s?",
    }


def _counts(total: int) -> list[int]:
    counts = [int(total * s) for s in _SHARE]
    for i in range(total - sum(counts)):
        counts[i % len(counts)] += 1
    return counts


def generate_seqmem_synthetic(seed: int = 0, tasks: int = 200, holdout: int = 40) -> dict[str, Any]:
    """The stream as JSON-serializable data: ``{"format", "version", "seed", "tasks", "holdout"}``.

    Each task is ``{"id", "family", "key", "prompt", "target", "reveal"}``; ``reveal`` is the
    feedback text the evaluator adds after "Correct." or "Incorrect.".
    """
    if isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 8:
        raise SpecError(f"synthetic stream: tasks must be an integer >= 8, got {tasks!r}")
    if isinstance(holdout, bool) or not isinstance(holdout, int) or holdout < 0:
        raise SpecError(f"synthetic stream: holdout must be an integer >= 0, got {holdout!r}")
    rng = random.Random(seed)
    namer = _Namer(rng)
    n_reg, n_lex, n_cip, n_conv = _counts(tasks)
    held_reg, held_lex, held_cip, held_conv = _counts(holdout) if holdout else (0, 0, 0, 0)
    # distinct items per family: each is asked about three times on average
    registry = _registry(rng, namer, max(2, n_reg // 3))
    lexicon = _lexicon(rng, namer, max(2, min(len(_ENGLISH) // 2, n_lex // 3)))
    ciphers = [_make_cipher(rng, namer) for _ in range(2 if tasks < 60 else 3)]
    units = [_make_units(rng, namer) for _ in range(2 if tasks < 60 else 3)]
    plain_pool = rng.sample(_ENGLISH, len(_ENGLISH) // 2)
    held_plain = [w for w in _ENGLISH if w not in plain_pool]
    stream: list[dict[str, Any]] = []
    for family, items, count in (("registry", registry, n_reg), ("lexicon", lexicon, n_lex)):
        picks = [items[i % len(items)] for i in range(count)]  # every item at least once
        for item in picks:
            stream.append(_task(family, item["key"], item["ask"], item["target"], item["rule"]))
    for _ in range(n_cip):
        name, k = rng.choice(ciphers)
        item = _cipher_item(name, k, rng.choice(plain_pool))
        stream.append(_task("cipher", item["key"], item["ask"], item["target"], item["rule"]))
    for _ in range(n_conv):
        big, small, factor = rng.choice(units)
        item = _conversion_item(big, small, factor, rng.randint(2, 9))
        stream.append(_task("conversion", item["key"], item["ask"], item["target"], item["rule"]))
    rng.shuffle(stream)
    held: list[dict[str, Any]] = []
    for family, items, count in (("registry", registry, held_reg), ("lexicon", lexicon, held_lex)):
        for item in rng.sample(items, min(count, len(items))) if count else []:
            held.append(_task(family, item["key"], item["ask_other"], item["target"], item["rule"]))
    held_conv += held_reg + held_lex - len(held)  # too few distinct items: more conversions
    for i in range(held_cip):
        name, k = ciphers[i % len(ciphers)]
        item = _cipher_item(name, k, held_plain[i % len(held_plain)])
        held.append(_task("cipher", item["key"], item["ask"], item["target"], item["rule"]))
    for i in range(held_conv):
        big, small, factor = units[i % len(units)]
        item = _conversion_item(big, small, factor, 10 + i)
        held.append(_task("conversion", item["key"], item["ask"], item["target"], item["rule"]))
    for prefix, rows in (("syn", stream), ("syn-ho", held)):
        for i, row in enumerate(rows, start=1):
            row["id"] = f"{prefix}-{i:04d}"
    return {
        "format": FORMAT,
        "version": VERSION,
        "seed": seed,
        "families": list(FAMILIES),
        "tasks": stream,
        "holdout": held,
    }


def dumps_seqmem_synthetic(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write_seqmem_synthetic(data: dict[str, Any], path: str | Path) -> Path:
    """Write the stream as canonical JSON (byte-identical for the same data)."""
    p = Path(path)
    write_atomic(p, dumps_seqmem_synthetic(data))
    return p


_FIELDS = ("id", "family", "key", "prompt", "target", "reveal")


def _to_tasks(source: str, part: str, rows: Any, seen: set[str]) -> list[SeqTask]:
    if not isinstance(rows, list):
        raise DataError(source, None, part, "must be a list of tasks")
    out = []
    for i, row in enumerate(rows):
        where = f"{part}[{i}]"
        if not isinstance(row, dict):
            raise DataError(source, where, None, "a task must be a JSON object")
        for name in _FIELDS:
            if not isinstance(row.get(name), str) or not row[name]:
                raise DataError(source, where, name, "missing or not a non-empty string")
        if row["family"] not in FAMILIES:
            raise DataError(source, where, "family", f"unknown family {row['family']!r}")
        if row["id"] in seen:
            raise DataError(source, where, "id", f"duplicate task id {row['id']!r}")
        seen.add(row["id"])
        out.append(
            SeqTask(
                row["id"],
                row["prompt"],
                row["target"],
                "synthetic",
                {
                    "family": row["family"],
                    "key": row["key"],
                    "reveal": row["reveal"],
                    "source": source,
                },
            )
        )
    return out


def synthetic_stream(
    data: dict[str, Any], source: str = "<generated>", sha256: str | None = None
) -> SeqStream:
    """Validate generated (or loaded) data into a :class:`SeqStream` of kind ``synthetic``."""
    if not isinstance(data, dict):
        raise DataError(source, None, None, "expected a JSON object")
    if data.get("format") != FORMAT:
        raise DataError(source, None, "format", f"expected {FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != VERSION:
        raise DataError(source, None, "version", f"unsupported version {data.get('version')!r}")
    seen: set[str] = set()
    tasks = _to_tasks(source, "tasks", data.get("tasks"), seen)
    held = _to_tasks(source, "holdout", data.get("holdout"), seen)
    if not tasks:
        raise DataError(source, None, "tasks", "the stream has no tasks")
    digest = sha256 or hashlib.sha256(dumps_seqmem_synthetic(data).encode()).hexdigest()
    return SeqStream(tuple(tasks), tuple(held), source, digest, "synthetic")


def load_seqmem_synthetic(path: str | Path) -> SeqStream:
    """Read a file written by :func:`write_seqmem_synthetic`."""
    p = Path(path)
    raw = read_file_bytes(p)
    data = loads_json_bytes(raw, p)
    return synthetic_stream(data, str(p), hashlib.sha256(raw).hexdigest())
