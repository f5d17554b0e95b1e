"""Context strategies over the builtin reader: what each system shows changes the answers."""

import asyncio

from clstream.core.contracts import respond_all
from clstream.core.events import Chunk
from clstream.core.types import Query
from clstream.models.builtin import BuiltinReader
from clstream.systems.context import (
    ContextSystem,
    FullContext,
    RagSystem,
    RagWindow,
    RollingWindow,
)

FILLER = "The river ran slow and brown past the mill, and nobody in the valley minded it."
STREAM = [
    "Mara went to the cellar. " + FILLER,
    FILLER + " Tobin picked up the lantern.",
    FILLER,
    FILLER + " The lantern flickered.",
    FILLER,
]


def answers(system: ContextSystem) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"where": [], "who": []}
    for i, text in enumerate(STREAM):
        asyncio.run(system.observe(Chunk("doc", i, text)))
        t = i + 1
        queries = [
            Query(f"doc_q0@{t}", "Where is Mara?"),
            Query(f"doc_q1@{t}", "Who is holding the lantern?"),
        ]
        responses = asyncio.run(respond_all(system, queries))
        for key, response in zip(out, responses, strict=True):
            out[key].append(response.text.rsplit("## Answer: ", 1)[1])
    return out


def test_context_strategies_give_different_answers_with_builtin_reader() -> None:
    full = answers(FullContext(BuiltinReader()))
    window = answers(RollingWindow(BuiltinReader(), w=2))
    rag = answers(RagSystem(BuiltinReader(), k=1))
    rag_window = answers(RagWindow(BuiltinReader(), k=1, w=2))
    assert full["where"] == ["cellar"] * 5
    assert window["where"] == ["cellar", "cellar", "Unknown", "Unknown", "Unknown"]
    assert rag["where"] == ["cellar"] * 5
    assert rag_window["where"] == ["cellar"] * 5
    assert full["who"] == ["Unknown"] + ["Tobin"] * 4
    assert window["who"] == ["Unknown", "Tobin", "Tobin", "Unknown", "Unknown"]
    # From t = 4 RAG's single slot goes to chunk 3 (shorter, so a higher BM25 score for
    # "lantern"), which does not say who took it; rag+window keeps chunk 1 in its window
    # until t = 3 and then retrieves it from the older chunks, where chunk 3 cannot compete.
    assert rag["who"] == ["Unknown", "Tobin", "Tobin", "Unknown", "Unknown"]
    assert rag_window["who"] == ["Unknown"] + ["Tobin"] * 4
