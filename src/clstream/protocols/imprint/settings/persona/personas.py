"""The procedural personas as objects (docs/imprint.md §4.5; ImprintBench App. D.3): their
config, their sessions and statements, and the readers of the ledger every gold is derived from
(:func:`state_at`, :func:`history`, :func:`visible`). :mod:`.synthetic` builds them and describes
the setting.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from clstream.core.errors import SpecError
from clstream.protocols.imprint.schema import CorpusDoc
from clstream.protocols.imprint.settings.persona.catalogue import (
    CATALOGUE,
    Attribute,
    Value,
)

# Tokens of one persona-chunk in the paper: 1.93M tokens over 50 persona-chunks (ImprintBench
# Tables 5 and 8); 38,666 is the figure the paper gives per chunk.
PAPER_CHUNK_TOKENS = 38_666
ABSTAIN_GOLD = "abstain"

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
class Statement:
    attribute: Attribute
    value: Value
    explicitness: str
    sentence: str
    previous: str | None = None
    cause: str = "stated"
    who: str | None = None


@dataclass
class Session:
    chunk: int
    task: tuple[str, str]
    withheld: bool = False
    session_id: str = ""
    day: date = date(2024, 1, 1)
    statements: list[Statement] = field(default_factory=list)
    turns: list[tuple[str, str]] = field(default_factory=list)  # (role, text)
    stated_in: list[tuple[int, Statement]] = field(default_factory=list)  # (turn index, fact)

    def turn_id(self, index: int) -> str:
        return f"{self.session_id}.t{index + 1:02d}"


@dataclass
class Persona:
    persona_id: str
    name: str
    held: list[Attribute]
    withheld: list[Attribute]
    nearby_only: list[Attribute]
    never: list[Attribute]
    sessions: list[Session]
    ledger: list[dict[str, Any]]
    docs: list[CorpusDoc]


def seeded_rng(config: PersonaConfig, *parts: object) -> random.Random:
    """A generator seeded by the config's seed and ``parts``, so each persona and each of its
    stages draws the same values whatever else the config asks for."""
    return random.Random(":".join(str(p) for p in (config.seed, *parts)))


def capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


def chunk_doc_id(persona_id: str, chunk: int) -> str:
    """The corpus document id of a persona's chunk (numbered from 1)."""
    return f"{persona_id}-c{chunk + 1}"
