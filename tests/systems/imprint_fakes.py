"""Small corpus, queries and a scripted model for the tests of the ImprintBench in-context
methods (oracle, agentic-rag, summary, scaffold)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from clstream.core.contracts import System, finalize_system
from clstream.core.events import Document, Event
from clstream.core.types import GenerationRequest, GenerationResult, Query, Sample, Usage
from clstream.models.tokenizers import approx_tokenizer

ARTICLES = [
    ("n1", "2026-02-01", "Acme names a leader",
     "Maria Lopez became chief executive of Acme Corp. The board approved the move."),
    ("n2", "2026-02-03", "Harbor reopens",
     "The Vell harbor reopened after repairs. Shipping resumed on Monday."),
    ("n3", "2026-02-09", "Leadership change at Acme",
     "Jonas Berg replaced Maria Lopez as chief executive of Acme Corp."),
    ("n4", "2026-02-11", "Bridge toll rises",
     "The Osk bridge toll rose to 7 crowns. Drivers protested the increase."),
]


def article(doc_id: str, date: str, title: str, body: str, supervision: str = "C") -> Document:
    return Document(doc_id, f"Title: {title}\nDate: {date}\n\n{body}",
                    meta={"date": date, "kind": "article", "title": title,
                          "instance_id": "all", "supervision": supervision})


def qa_pair(qa_id: str, source: str, question: str, answer: str) -> Document:
    return Document(qa_id, f"Q: {question}\nA: {answer}",
                    meta={"kind": "qa", "instance_id": "all", "supervision": "Q",
                          "source_doc_id": source})


def corpus() -> list[Document]:
    return [article(*a) for a in ARTICLES]


def item(item_id: str, question: str, sources: Sequence[str] = ()) -> Query:
    return Query(id=item_id, text=question,
                 meta={"source_doc_ids": list(sources), "instance_id": "all"})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def ingest(system: System, docs: Sequence[Event]) -> list[GenerationResult]:
    """reset, observe every document, finalize (the ImprintBench order); the calls made."""
    await system.reset()
    calls: list[GenerationResult] = []
    for doc in docs:
        calls += await system.observe(doc)
    calls += await finalize_system(system)
    return calls


class Scripted:
    """A model whose reply is a function of the request; records every request. A reply of
    None is a failed call. ``tools`` is what ``describe()`` declares."""

    name = "scripted"

    def __init__(self, reply: Callable[[GenerationRequest], str | None],
                 tools: bool = False,
                 calls: Callable[[GenerationRequest], list[dict[str, Any]]] | None = None):
        self.reply = reply
        self.calls = calls
        self.tools = tools
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name, "tools": self.tools}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            self.requests.append(r)
            text = self.reply(r)
            if text is None:
                out.append(GenerationResult(key=r.key, error="scripted failure", stage=r.stage))
                continue
            tool_calls = self.calls(r) if self.calls is not None and r.tools else []
            samples = [Sample(text=text, tool_calls=tool_calls) for _ in range(r.params.n)]
            out.append(GenerationResult(key=r.key, samples=samples, stage=r.stage,
                                        usage=Usage(prompt_tokens=7, completion_tokens=3)))
        return out

    def of_stage(self, stage: str) -> list[GenerationRequest]:
        return [r for r in self.requests if r.stage == stage]


def user_text(request: GenerationRequest) -> str:
    return "\n".join(m.content for m in request.messages if m.role == "user")
