"""Offline RefRes descriptions: reworded with no content word of the docstring, else
structural, else none."""

from __future__ import annotations

import pytest

from clstream.protocols.imprint.settings.code.giveaways import distinctive_words
from clstream.protocols.imprint.settings.code.paraphrase import (
    content_words,
    offline_description,
    reword,
    shares_content,
    structural,
)
from clstream.protocols.imprint.settings.code.synthetic import (
    CLASSES,
    NEW_CLASS_DOC,
    NOUNS,
    TOPICS,
    VERBS,
)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_summary_of_the_fictional_library_is_reworded(verb: str) -> None:
    for noun, gloss in NOUNS.items():
        for qualifier in (*TOPICS.values(), "in a studio"):
            summary = f"{VERBS[verb][:1].upper()}{VERBS[verb][1:]} {gloss} {qualifier}."
            text = reword(summary)
            assert text, summary
            assert not shares_content(text, summary), (summary, text)
            assert not content_words(text) & distinctive_words(f"{verb}_{noun}"), text


def test_class_summaries_are_reworded() -> None:
    for doc in (*CLASSES.values(), NEW_CLASS_DOC):
        text = reword(doc)
        assert text and not shares_content(text, doc), doc


def test_content_words_fold_plurals_and_skip_stopwords() -> None:
    assert content_words("The columns of a Column") == {"column"}
    assert content_words("between the rows and over it") == {"row"}
    assert shares_content("moves the rows", "Sort a row.") == {"row"}


def test_a_word_outside_the_lexicon_falls_back_to_the_structure() -> None:
    doc = "Find the roots of a scalar function.\n\nParameters\n----------\nf : callable\n"
    assert reword("Find the roots of a scalar function.") is None
    found = offline_description("Find the roots of a scalar function.", doc, "find_root",
                                kind="function", version="1.15.0",
                                signature="f, init, /, *, args=(), tolerances=None")
    assert found == (structural("function", "1.15.0", "f, init, /, *, args=(), tolerances=None"),
                     "structural")
    assert "two leading inputs and two named options" in found[0]


def test_no_description_when_every_candidate_quotes_or_is_taken() -> None:
    summary = "Return the cumulative sum of the elements along a given axis."
    doc = summary + "\n\nThe running total, over each dimension; called with two leading inputs."
    # the rewording shares "running", "total" and "dimension"; the structure shares "called"...
    assert offline_description(summary, doc, "cumulative_sum", kind="function",
                               version="2.1.0", signature="x, y") is None
    plain = offline_description(summary, summary, "cumulative_sum", kind="function",
                                version="2.1.0", signature="x, y")
    assert plain is not None and plain[1] == "reworded"
    taken = offline_description(summary, summary, "cumulative_sum", kind="function",
                                version="2.1.0", signature="x, y", taken=[plain[0]])
    assert taken is not None and taken[1] == "structural"
