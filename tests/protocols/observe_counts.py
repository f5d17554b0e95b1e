"""Counts of the work a run does per stream, for the linear-cost tests of every protocol: calls
to a system's ``observe`` (the context systems', or those of the class given) and insertions
into a BM25 index, counted at class level so that every instance a runner builds is seen. A runner that rebuilt memory by replaying a
prefix of its stream would observe (and index) the same item many times."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from clstream.core.events import Event
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.systems import context


class ObserveCounts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch,
                 system_class: type[Any] = context.ContextSystem):
        self.by_system: Counter[int] = Counter()  # id(system) -> events observed
        self.by_stream: Counter[str] = Counter()  # the event's stream id -> events observed
        self.by_document: Counter[str] = Counter()  # the event's doc id -> events observed
        self.by_kind: Counter[str] = Counter()  # the event's type name -> events observed
        self.inserted: Counter[tuple[int, int]] = Counter()  # (id(index), passage) -> inserts
        self._kept: list[object] = []  # systems and indexes kept alive: no two share an id
        observe, add = system_class.observe, IncrementalBM25.add
        counts = self

        async def counting_observe(system: Any, event: Event) -> Any:
            counts._keep(system)
            counts.by_system[id(system)] += 1
            counts.by_stream[str(getattr(event, "stream_id", ""))] += 1
            counts.by_document[str(getattr(event, "doc_id", ""))] += 1
            counts.by_kind[type(event).__name__] += 1
            return await observe(system, event)

        def counting_add(index: IncrementalBM25, doc_id: int, text: str) -> None:
            counts._keep(index)
            counts.inserted[(id(index), doc_id)] += 1
            add(index, doc_id, text)

        monkeypatch.setattr(system_class, "observe", counting_observe)
        monkeypatch.setattr(IncrementalBM25, "add", counting_add)

    def _keep(self, thing: object) -> None:
        if not any(thing is kept for kept in self._kept):
            self._kept.append(thing)

    def per_index(self) -> Counter[int]:
        """Insertions into each index."""
        out: Counter[int] = Counter()
        for (index, _), n in self.inserted.items():
            out[index] += n
        return out

    def clear(self) -> None:
        for counter in (self.by_system, self.by_stream, self.by_document, self.by_kind,
                        self.inserted):
            counter.clear()
