"""Ordinary chat filler of the procedural persona histories: histories of the paper's length,
filler that states no fact and leaves every absent fact absent."""

from __future__ import annotations

import re
from pathlib import Path

from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.imprint.settings.persona.catalogue import (
    CATALOGUE,
    mentions,
    word_stems,
)
from clstream.protocols.imprint.settings.persona.filler import every_line
from clstream.protocols.imprint.settings.persona.synthetic import (
    PAPER_CHUNK_TOKENS,
    PersonaConfig,
    generate_persona,
)


def test_filler_names_no_attribute_value_or_asked_word() -> None:
    text = " ".join(every_line())
    stems = word_stems(text)
    for attribute in CATALOGUE:
        assert not (word_stems(attribute.ask) | word_stems(attribute.noun)) & stems, \
            attribute.key
        for value in attribute.values:
            for form in value.forms:
                assert not mentions(text, form), form


def test_histories_reach_the_papers_length_at_the_paper_size() -> None:
    """Each persona-chunk holds at least the paper's 38,666 tokens (approximate tokenizer),
    and the statements are a small part of it."""
    data = generate_persona(PersonaConfig(seed=5, n_personas=1, chunk_tokens=PAPER_CHUNK_TOKENS))
    count = approx_tokenizer().count
    sizes = [count(d.text) for d in data.corpus]
    assert len(sizes) == 4 and min(sizes) >= PAPER_CHUNK_TOKENS
    assert max(sizes) <= 1.3 * PAPER_CHUNK_TOKENS
    stated = sum(count(e["sentence"]) for e in data.ledger if not e["withheld"])
    assert stated < 0.02 * sum(sizes)


def test_chunk_tokens_is_the_knob_and_zero_adds_no_filler() -> None:
    count = approx_tokenizer().count
    small = generate_persona(PersonaConfig(seed=5, n_personas=1, chunk_tokens=0))
    large = generate_persona(PersonaConfig(seed=5, n_personas=1, chunk_tokens=12_000))
    assert all(count(d.text) >= 12_000 for d in large.corpus)
    assert all(count(d.text) < 3_000 for d in small.corpus)
    # The facts and their items do not depend on how much filler surrounds them.
    assert [(e["attribute"], e["value"]) for e in small.ledger] == \
        [(e["attribute"], e["value"]) for e in large.ledger]


def test_sessions_are_dated_in_order_and_follow_ups_are_answered() -> None:
    data = generate_persona(PersonaConfig(seed=2, n_personas=1, chunk_tokens=8_000))
    dates = [line.split("(")[1].rstrip(")") for d in data.corpus
             for line in d.text.splitlines() if line.startswith("Session ")]
    assert dates == sorted(dates) and len(set(dates)) == len(dates)
    lines = "\n".join(d.text for d in data.corpus).splitlines()
    asked = 0
    for line, reply in zip(lines, lines[1:], strict=False):
        found = re.fullmatch(r"User: There will be (\d) guests\.", line)
        if found and "Come back any time" not in reply:
            asked += 1
            assert f"a plan for {found.group(1)} guests" in reply, (line, reply)
    assert asked > 0


def test_size_paper_on_the_command_line(tmp_path: Path) -> None:
    from clstream.cli import main
    from clstream.protocols.imprint.schema import load_dataset

    assert main(["generate", "imprint", "--setting", "persona", "--size", "paper", "--seed", "1",
                 "--out", str(tmp_path / "paper")]) == 0
    data = load_dataset(tmp_path / "paper")
    assert data.manifest.config["chunk_tokens"] == PAPER_CHUNK_TOKENS
    count = approx_tokenizer().count
    assert min(count(d.text) for d in data.corpus) >= PAPER_CHUNK_TOKENS
