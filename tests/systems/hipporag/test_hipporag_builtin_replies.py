"""The builtin model's reader of the hipporag requests (docs/agentic.md "hipporag"): triples of
simple clauses, question entities, and None for every other request."""

from __future__ import annotations

import pytest

from clstream.core.types import GenerationRequest, Message
from clstream.models.builtin import BuiltinReader
from clstream.systems.hipporag import formats
from clstream.systems.hipporag.builtin_replies import entities, reply, triples


@pytest.mark.parametrize(("text", "expected"), [
    ("Mary went to the kitchen.", [("Mary", "went to", "kitchen")]),
    ("John picked up the apple.", [("John", "picked up", "apple")]),
    ("Paris is the capital of France.", [("Paris", "is the capital of", "France")]),
    ("Fenwyn travelled to Dunost Crossing.", [("Fenwyn", "travelled to", "Dunost Crossing")]),
    ("Later, Mara went back to the hall and then Tobin dropped the football!",
     [("Mara", "went back to", "hall"), ("Tobin", "dropped", "football")]),
    ("Daniel travelled home", [("Daniel", "travelled", "home")]),
    ("The cat sat on the mat.", [("cat", "sat on", "mat")]),
])
def test_simple_clauses_give_subject_verb_phrase_object(
        text: str, expected: list[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


def test_narrative_pronouns_and_repeats_give_nothing_more() -> None:
    text = ("She went to the hall. Every child in the district learned early that fog on the "
            "hill means a stranger on the road. Candlelight slid across the water while the "
            "swallows skimmed low over the meadow. The talk in the tavern turned to the lights. "
            "Mary went to the kitchen. Mary went to the kitchen.")
    assert triples(text) == [("Mary", "went to", "kitchen")]


def test_question_entities_are_names_and_nouns_after_determiners() -> None:
    assert entities("Where is Mary?") == ["Mary"]
    assert entities("Where was the football before the garden?") == ["football", "garden"]
    assert entities("How many times has Torox moved to Vesmar Reach?") == ["Torox",
                                                                          "Vesmar Reach"]
    assert entities("What happened?") == []


def test_replies_only_to_hipporag_requests_in_their_formats() -> None:
    extract = formats.extract_messages("Mary went to the kitchen. It rained.")
    assert reply(extract) == "TRIPLE: Mary | went to | kitchen"
    assert reply(formats.extract_messages("It rained all day.")) == "NONE"
    assert reply(formats.query_messages("Where is Mary?")) == "ENTITY: Mary"
    assert reply(formats.query_messages("What happened?")) == "NONE"
    assert reply((Message(role="user", content="Where is Mary?"),)) is None
    # The builtin model routes the request to this reader before answering questions.
    text, _ = BuiltinReader().reply(GenerationRequest(key="k", messages=extract))
    assert formats.parse_triples(text) == [("Mary", "went to", "kitchen")]
