"""How many requests a remote model backend keeps in flight: a fixed bound or an adaptive one.

A served model has a number of sequence slots (one for a default llama.cpp server, hundreds for
vLLM) and a queue in front of them. Fewer requests in flight than slots leaves the server idle;
more builds a queue whose waits count against every request's timeout and help no throughput.
Neither a fixed default nor the user can know the right number in advance, so by default the
bound adapts (``--max-concurrency N`` still fixes it at N):

- it starts at the server's slot count where the server reports one, else at
  :data:`DEFAULT_START`, and doubles once per *epoch* (about one round of the current limit's
  completions) while no queue is seen;
- a queue is seen from the answers themselves: the wait before the first token beyond the
  fastest first token seen lately (pure queueing on a streaming server) against the time spent
  generating. When the mean wait exceeds half the mean generation time while output tokens per
  second are near the best seen lately (within 10%: more in flight bought no throughput), the
  limit drops to the estimate ``limit * generation / (generation + wait)`` (Little's law: the
  number of requests the server really serves at once), so it settles at the slot count
  instead of below it. Waits while a step up still brought proportionally more throughput come
  from elsewhere (longer prompts, a busy client) and do not stop the growth; waits while
  throughput is well below its best hold the limit where it is;
- while calm it grows by a quarter per epoch up to just below the level where a queue was last
  found, then by one (or a tenth of itself) per epoch; a limit that found a queue at the same level
  again waits twice as many calm epochs before its next step up there (at most 32), so a
  one-slot server is probed rarely;
- 429/503 answers, silence timeouts and interrupted streams halve it at once (once per change:
  answers to requests sent before a decrease neither decrease it again nor count in the next
  epoch's figures).

Waiting requests are admitted in the order of their ``order`` number (the position of the
request in the run), so a request sent again after a timeout goes ahead of later ones. Admitted
requests then hand their bodies to the network one after another in admission order
(:class:`SendOrder`): each waits, connection in hand, until the one admitted before it has
written its last byte (a large body: until the server has acknowledged it,
:func:`clstream.models.http.delivered`). Connections still open in parallel, but which
request's bytes reach the server first no longer depends on which connection happened to be
ready, so with no failures the order requests reach the server is a function of the run's
requests alone. A server that reads its sockets on one event loop (vLLM's and SGLang's uvicorn)
queues them in that order, which is what lets its prefix cache reuse the context consecutive
requests share. Results never depend on the limit: each request's body, seed included, is fixed
by its key.

The limit's history (time, new limit, reason) and counters (requests, errors, output tokens,
time to first token) are kept for the run's record and for progress lines.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_START = 4  # requests in flight at the start when the server reports no slot count
DEFAULT_CEILING = 512  # the adaptive limit never exceeds this
QUEUE_SHARE = 0.5  # mean queue wait above this share of generation time: a queue is forming
NEAR_BEST = 0.9  # throughput at least this share of the best seen lately: saturated
BEST_DECAY = 0.97  # per epoch, so the best throughput seen follows a server that changes
GREW = 1.15  # throughput this much above the last epoch's, after a step up: not saturated
STEP = 0.1  # growth per calm epoch near the level where a queue was found: this share, or 1
SLACK_S = 0.005  # queue waits below this are noise, whatever the share
MIN_EPOCH = 4  # completions per epoch at least
MAX_HOLD = 32  # calm epochs at most before probing a level that queued before
HISTORY_MAX = 2000  # limit changes kept


_LIVE: weakref.WeakSet[ConcurrencyLimit] = weakref.WeakSet()
_INSTANCES = itertools.count(1)


def live_limits() -> list[ConcurrencyLimit]:
    """The bounds of the remote backends alive in this process (for progress lines)."""
    return list(_LIVE)


class SendOrder:
    """Turns for writing request bodies: turn ``k`` writes after turns ``0..k-1`` have written
    (or given up). Turns are dealt at admission, one per admitted request, so a turn that never
    writes must still be passed (:meth:`Turn.sent` is called on every path out of an attempt),
    or every later request would wait for it.
    """

    def __init__(self) -> None:
        self._dealt = 0
        self._next = 0  # the turn allowed to write now
        self._passed: set[int] = set()  # turns done ahead of ``_next``
        self._waiting: dict[int, asyncio.Future[None]] = {}

    def deal(self) -> Turn:
        turn = Turn(self, self._dealt)
        self._dealt += 1
        return turn

    async def wait(self, number: int) -> None:
        if number <= self._next:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[number] = future
        try:
            await future
        finally:
            self._waiting.pop(number, None)

    def done(self, number: int) -> None:
        """Turn ``number`` has written or given up (once per turn: :meth:`Turn.sent`)."""
        self._passed.add(number)
        while self._next in self._passed:
            self._passed.discard(self._next)
            self._next += 1
        future = self._waiting.get(self._next)
        if future is not None and not future.done():
            future.set_result(None)


class Turn:
    """One admitted request's place in :class:`SendOrder`."""

    __slots__ = ("_order", "number", "_done")

    def __init__(self, order: SendOrder, number: int):
        self._order = order
        self.number = number
        self._done = False

    @property
    def passed(self) -> bool:
        return self._done

    async def ready(self) -> None:
        """Wait until every request admitted before this one has written its body."""
        await self._order.wait(self.number)

    def sent(self) -> None:
        """This request's body is with the network, or it will not be sent: the next may go.
        Idempotent."""
        if not self._done:
            self._done = True
            self._order.done(self.number)


@dataclass
class Ticket:
    """One admitted request: when it was sent, at which change of the limit, and its turn to
    write (:class:`SendOrder`)."""

    order: int
    sent_at: float
    generation: int
    in_flight_at_send: int
    turn: Turn


@dataclass
class TransportStats:
    """Counters of one model's requests, read by progress lines and stored with the run."""

    requests: int = 0
    errors: int = 0
    resent: int = 0
    output_tokens: int = 0
    ttft_sum_s: float = 0.0
    ttft_count: int = 0
    started_at: float = field(default_factory=time.monotonic)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "errors": self.errors, "resent": self.resent,
            "output_tokens": self.output_tokens,
            "mean_ttft_s": round(self.ttft_sum_s / self.ttft_count, 4) if self.ttft_count
            else None,
        }


class ConcurrencyLimit:
    """A bound on requests in flight, fixed (``adaptive=False``) or adaptive (module docstring).

    Use ``ticket = await limit.acquire(order)`` before sending and exactly one of
    :meth:`succeeded`, :meth:`congested` or :meth:`released` when the attempt ends.
    """

    def __init__(self, start: int, adaptive: bool, ceiling: int = DEFAULT_CEILING):
        self.adaptive = adaptive
        self.ceiling = max(1, ceiling if adaptive else start)
        self.limit = float(min(max(1, start), self.ceiling))
        self.in_flight = 0
        self.stats = TransportStats()
        self.instance = next(_INSTANCES)  # tells two bounds apart in saved snapshots
        self.history: list[tuple[float, int, str]] = [(0.0, self.current, "start")]
        self._t0 = time.monotonic()
        self._waiters: list[tuple[int, int, asyncio.Future[Turn]]] = []
        self.send_order = SendOrder()
        self._tiebreak = itertools.count()
        self._generation = 0
        self._slow_start = adaptive
        # epoch accounting
        self._epoch_start = time.monotonic()
        self._epoch_done = 0
        self._epoch_wait = 0.0
        self._epoch_gen = 0.0
        self._epoch_first: float | None = None
        self._epoch_tokens = 0
        self._best_rate = 0.0
        self._previous: tuple[int, float] = (0, 0.0)  # limit and rate of the last epoch
        self._first_token_floor: deque[float] = deque(maxlen=16)  # minima of recent epochs
        self._hold = 0
        self._queued_level = 0  # the level at which a queue was last found
        self._repeat = 0  # queues found again at or below that level
        _LIVE.add(self)

    @property
    def current(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def describe(self) -> dict[str, Any]:
        return {"instance": self.instance, "adaptive": self.adaptive, "limit": self.current,
                "ceiling": self.ceiling,
                "history": [list(h) for h in self.history], **self.stats.as_dict()}

    # -- admission -------------------------------------------------------------------------

    async def acquire(self, order: int) -> Ticket:
        if self.in_flight >= self.current or self._waiters:
            future: asyncio.Future[Turn] = asyncio.get_running_loop().create_future()
            entry = (order, next(self._tiebreak), future)
            heapq.heappush(self._waiters, entry)
            self._wake()
            try:
                turn = await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    future.result().sent()  # admitted just as it was cancelled: pass its turn
                    self.in_flight -= 1  # and give the slot back
                    self._wake()
                elif entry in self._waiters:
                    self._waiters.remove(entry)
                    heapq.heapify(self._waiters)
                raise
        else:
            self.in_flight += 1
            turn = self.send_order.deal()
        return Ticket(order, time.monotonic(), self._generation, self.in_flight, turn)

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.current:
            _, _, future = heapq.heappop(self._waiters)
            if future.done():
                continue
            self.in_flight += 1
            future.set_result(self.send_order.deal())

    def _leave(self, ticket: Ticket) -> None:
        ticket.turn.sent()
        self.in_flight -= 1
        self._wake()

    # -- outcomes --------------------------------------------------------------------------

    def released(self, ticket: Ticket, error: bool = False) -> None:
        """The attempt ended with no signal about the server's load (a 4xx, a refused
        connection); ``error`` counts it as a failed request."""
        self.stats.errors += int(error)
        self._leave(ticket)

    def congested(self, ticket: Ticket, reason: str) -> None:
        """The attempt met a full server (429/503, silence while others were in flight, an
        interrupted stream): the limit halves unless it already fell since the send."""
        self._leave(ticket)
        if self.adaptive and ticket.generation == self._generation:
            self._decrease(self.current * 0.5, reason)
            self._wake()

    def succeeded(self, ticket: Ticket, first_token_s: float, total_s: float,
                  output_tokens: int) -> None:
        """An answer came back: ``first_token_s`` after sending (the whole latency for an
        answer that was not streamed), ``total_s`` in all."""
        self._leave(ticket)
        stats = self.stats
        stats.requests += 1
        stats.output_tokens += output_tokens
        stats.ttft_sum_s += first_token_s
        stats.ttft_count += 1
        if not self.adaptive or ticket.generation != self._generation:
            return  # sent before the last decrease: its wait tells of the old limit
        self._epoch_done += 1
        self._epoch_tokens += output_tokens + 1
        self._epoch_wait += first_token_s
        self._epoch_gen += max(0.0, total_s - first_token_s)
        if self._epoch_first is None or first_token_s < self._epoch_first:
            self._epoch_first = first_token_s
        if self._epoch_done >= max(MIN_EPOCH, self.current):
            self._end_epoch()
            self._wake()

    def note_resend(self) -> None:
        self.stats.resent += 1

    # -- the adaptive rule ---------------------------------------------------------------------

    def _end_epoch(self) -> None:
        now = time.monotonic()
        done = self._epoch_done
        rate = self._epoch_tokens / max(now - self._epoch_start, 1e-6)
        self._best_rate = max(self._best_rate * BEST_DECAY, rate)
        if self._epoch_first is not None:
            self._first_token_floor.append(self._epoch_first)
        floor = min(self._first_token_floor) if self._first_token_floor else 0.0
        wait = max(0.0, self._epoch_wait / done - floor)
        generation = self._epoch_gen / done
        if generation <= 0.0:  # answers that were not streamed: all of it is latency
            generation = max(floor, 1e-6)
        queued = wait > SLACK_S and wait > QUEUE_SHARE * generation
        before_limit, before_rate = self._previous
        self._previous = (self.current, rate)
        # More in flight than last epoch and proportionally more throughput: not saturated,
        # whatever the waits say (a busy client's own delays look like waits).
        growing = 0 < before_limit < self.current and rate > GREW * before_rate
        if queued and rate >= NEAR_BEST * self._best_rate and not growing:
            served = self.current * generation / (generation + wait)
            self._decrease(served, "queue")
        elif queued and not growing:
            pass  # waits without a clear cause: neither more nor fewer in flight
        elif self._below_queued_level():
            self._increase()  # well below where the queue was: no need to wait
        elif self._hold > 0:
            self._hold -= 1
        else:
            self._increase()
        self._epoch_start, self._epoch_done, self._epoch_tokens = now, 0, 0
        self._epoch_wait = self._epoch_gen = 0.0
        self._epoch_first = None

    def _below_queued_level(self) -> bool:
        """Even one more in flight stays well below the level where a queue was last found."""
        return self.current + 1 < 0.9 * self._queued_level

    def _increase(self) -> None:
        before = self.current
        if self._slow_start:
            self.limit = min(self.limit * 2, self.ceiling)
        elif self._below_queued_level():
            self.limit = min(max(self.limit * 1.25, self.limit + 1), self._queued_level - 1.0)
        else:
            self.limit = min(self.limit + max(1.0, round(self.limit * STEP)), self.ceiling)
        if before > self._queued_level:
            self._repeat = 0  # a calm epoch above the old level: that level was noise
        if self.current != before:
            self._record("grow")

    def _decrease(self, target: float, reason: str) -> None:
        level = self.current
        self._slow_start = False
        self._generation += 1
        self._repeat = self._repeat + 1 if level <= self._queued_level else 0
        self._queued_level = level
        self._hold = min(MAX_HOLD, 2 ** self._repeat)
        self.limit = max(1.0, min(float(level - 1), math.floor(target + 0.5)))
        self._epoch_start, self._epoch_done, self._epoch_tokens = time.monotonic(), 0, 0
        self._epoch_wait = self._epoch_gen = 0.0
        self._epoch_first = None
        self._record(reason)

    def _record(self, reason: str) -> None:
        if len(self.history) < HISTORY_MAX:
            self.history.append((round(time.monotonic() - self._t0, 3), self.current, reason))
