"""Training examples hash canonically (docs/parametric.md §4): equal data, equal hash."""

from __future__ import annotations

from clstream.core.types import Message
from clstream.training.data import Example, PairExample, TextExample, examples_hash

ASK = (Message(role="user", content="Where is Mary ?"),)


def test_hash_is_stable_and_reads_every_field_and_the_order() -> None:
    data: list[Example] = [TextExample("Mary went to the kitchen ."),
                           PairExample(ASK, "kitchen", "doc")]
    same: list[Example] = [TextExample("Mary went to the kitchen ."), PairExample(ASK, "kitchen", "doc")]
    assert examples_hash(data) == examples_hash(same)
    assert len(examples_hash(data)) == 64
    variants: list[list[Example]] = [
        [TextExample("Mary went to the garden ."), data[1]],
        [data[0], PairExample(ASK, "garden", "doc")],
        [data[0], PairExample(ASK, "kitchen", "other doc")],
        [data[0], PairExample((Message(role="system", content="Where is Mary ?"),), "kitchen",
                              "doc")],
        [data[1], data[0]],
        [data[0]],
    ]
    hashes = {examples_hash(v) for v in variants}
    assert len(hashes) == len(variants) and examples_hash(data) not in hashes
