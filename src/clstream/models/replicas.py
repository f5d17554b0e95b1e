"""Routing a run's requests over several replicas of one model server, cache-aware.

docs/design.md §3.2 (talk to model servers; caching, retries and concurrency wrap any backend)
and the send order of :mod:`clstream.models.concurrency` exist so that a server's prefix cache
holds the long contexts a run sends again and again: every question of an OAKS document is asked
over the same document text, every step of a SeqMem stream over the same memory. With several
servers of one model (``--base-url`` given several times), spreading requests evenly (round
robin) would make every replica prefill every context. Instead each request goes to the replica
that owns its *affinity*, so a replica's cache holds the contexts it serves.

The affinity of a request (:func:`affinity_of`) is the cell of the run that made it: the driver
runs each cell (an OAKS document, a SeqMem task stream, a CL-Bench instance of one rollout, an
ImprintBench item) under :func:`routed_by` with ``<run id>/<cell id>``, and every request the
cell's system sends inherits it. Request keys cannot stand in for it: a SeqMem stream keys its
requests ``online/3`` whatever the stream, an OAKS probe ``<question id>@<t>`` names the
question, not its document. A request made outside any cell (the endpoint check, a model used
directly) is routed by its key up to the first ``@`` or ``#`` (so a retry or repair of a request
goes where the request went).

Assignment (:class:`ReplicaRouter`), at the first request of an affinity: the live replicas are
ranked by a hash of (affinity, replica position) (rendezvous hashing), and the affinity goes to
the first in that ranking that owns fewer than ``ceil((owned + 1) / live)`` affinities, so
owners differ by at most one affinity and the choice is a function of the order in which
affinities first appear (the order cells start in) and of the replicas' positions, not of their
addresses: a rerun that starts its cells in the same order routes the same way. The affinity
then sticks to its replica.

Failover: an attempt that got no response at all from a replica (connection refused or reset,
the signals the circuit breaker counts) marks the replica down for a while (1 s, doubling on each
failed try after that, at most 30 s) and the request is sent at once, without spending a
retry, to its affinity's new owner, chosen among the remaining replicas as at first sight;
every later request of an affinity the dead replica owned moves the same way when it comes.
Moved affinities stay where they moved (their contexts are cached there now). Once its wait is
over a replica is tried again: a request that reaches it brings it back, and it takes new
affinities (it owns the fewest). While every replica is down, requests go to their owners and
fail as with one server: the breaker opens when none answers.

With one replica nothing of this applies: every request goes to it, as before.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

DOWN_S = 1.0  # a replica that did not answer is left alone this long, doubled per failed try
MOST_DOWN_S = 30.0

_AFFINITY: ContextVar[str | None] = ContextVar("clstream_route_affinity", default=None)


@contextmanager
def routed_by(affinity: str) -> Iterator[None]:
    """Requests sent inside the block (and in tasks it starts) are routed by ``affinity``."""
    token = _AFFINITY.set(affinity)
    try:
        yield
    finally:
        _AFFINITY.reset(token)


def affinity_of(request_key: str) -> str:
    """The affinity a request is routed by (module docstring): the running cell's, else the
    request key up to its first ``@`` or ``#``."""
    cell = _AFFINITY.get()
    if cell is not None:
        return cell
    return request_key.split("@", 1)[0].split("#", 1)[0]


def _score(affinity: str, position: int) -> bytes:
    return hashlib.blake2b(f"{position}\x00{affinity}".encode(), digest_size=8).digest()


@dataclass
class _Replica:
    url: str
    owned: int = 0  # affinities assigned to it now
    requests: int = 0  # attempts sent to it
    failures: int = 0  # failed tries in a row (each after its wait was over)
    down_until: float = 0.0
    downs: int = 0  # times it was marked down


class ReplicaRouter:
    """Which replica serves each request (module docstring). Holds no event-loop state, so one
    router serves a model across runs."""

    def __init__(self, urls: Sequence[str], clock: Callable[[], float] = time.monotonic,
                 down_s: float = DOWN_S, most_down_s: float = MOST_DOWN_S):
        if not urls:
            raise ValueError("a router needs at least one replica")
        self.replicas = [_Replica(url) for url in urls]
        self._clock = clock
        self.down_s = down_s
        self.most_down_s = most_down_s
        self._owner: dict[str, int] = {}
        self.moved = 0  # affinities moved off a replica that was down

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.replicas]

    def _live(self, now: float) -> list[int]:
        return [i for i, r in enumerate(self.replicas) if r.down_until <= now]

    def _assign(self, affinity: str, live: list[int]) -> int:
        """The first live replica in ``affinity``'s ranking that is below the bound."""
        bound = math.ceil((sum(self.replicas[i].owned for i in live) + 1) / len(live))
        ranked = sorted(live, key=lambda i: _score(affinity, i), reverse=True)
        return next(i for i in ranked if self.replicas[i].owned < bound)

    def route(self, affinity: str) -> int:
        """The position of the replica the next attempt of a request of ``affinity`` goes to."""
        if len(self.replicas) == 1:
            self.replicas[0].requests += 1
            return 0
        now = self._clock()
        live = self._live(now)
        owner = self._owner.get(affinity)
        if owner is None or (live and owner not in live):
            chosen = self._assign(affinity, live or list(range(len(self.replicas))))
            if owner is not None:
                self.replicas[owner].owned -= 1
                self.moved += 1
            self.replicas[chosen].owned += 1
            self._owner[affinity] = owner = chosen
        self.replicas[owner].requests += 1
        return owner

    def owner(self, affinity: str) -> int | None:
        """The replica ``affinity`` is assigned to (None before its first request)."""
        return self._owner.get(affinity)

    def answered(self, position: int) -> None:
        """The replica answered something: it is up."""
        replica = self.replicas[position]
        replica.failures = 0
        replica.down_until = 0.0

    def unanswered(self, position: int) -> bool:
        """An attempt sent to the replica got no response; returns True when another replica
        is live, so the request can go there at once."""
        if len(self.replicas) == 1:
            return False
        now = self._clock()
        replica = self.replicas[position]
        if replica.down_until <= now:  # a try after its wait (or the first failure): longer wait
            replica.failures += 1
            replica.downs += 1
            wait = self.down_s * 2.0 ** min(replica.failures - 1, 16)
            replica.down_until = now + min(self.most_down_s, wait)
        return bool(self._live(now))

    def describe(self, show: Callable[[str], str] = str) -> dict[str, Any]:
        """Per replica: its address (through ``show``), the affinities it owns, the attempts
        sent to it and the times it was marked down; and the affinities moved."""
        now = self._clock()
        return {
            "replicas": [{"url": show(r.url), "affinities": r.owned, "requests": r.requests,
                          "marked_down": r.downs, "down": r.down_until > now}
                         for r in self.replicas],
            "moved_affinities": self.moved,
        }
