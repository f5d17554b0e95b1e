"""A circuit breaker for a remote model server that stopped answering.

docs/design.md (§3.2 the model contract; §7 trust: a run that failed says why and how to
resume): retries are for a server that answers badly now and then, not for one that is
gone. When a server dies in the middle of a run, every remaining request would otherwise spend
all its retries (seven attempts, minutes of backoff) on connections nobody accepts, and the run
would crawl through thousands of failures before it ends.

The breaker counts *connection failures*: attempts that got no response at all (a refused or
reset connection, a connection that could not be made in time). Any answer from the server, a
5xx included, shows it alive and clears the count. Once ``failures`` connection failures have
come in a row, the first at least ``window_s`` seconds before the latest, the breaker opens for
good: the request that tripped it and every request still waiting (in a backoff, in the queue
for a slot, or not yet sent) fail at once, without retries, with one error naming the server
and the reason. Both conditions matter: a burst of refusals from one restart of a proxy is not
a dead server, and neither is one unlucky request that a slow restart refused a few times.

The run then ends with its failed records, and the protocol commands print the command that
resumes it; a rerun after the server is back makes a new breaker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

BREAK_AFTER = 8  # connection failures in a row, at least
BREAK_WINDOW_S = 2.0  # seconds from the first of them to the latest, at least


class CircuitBreaker:
    """Connection failures of one server, on one event loop (module docstring)."""

    def __init__(self, where: str, failures: int = BREAK_AFTER,
                 window_s: float = BREAK_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic):
        self.where = where
        self.failures = failures
        self.window_s = window_s
        self._clock = clock
        self._streak = 0
        self._since = 0.0
        self.error: str | None = None  # why it opened; None while closed
        self._opened: asyncio.Event | None = None

    @property
    def open(self) -> bool:
        return self.error is not None

    def answered(self) -> None:
        """The server answered something: it is alive."""
        self._streak = 0

    def failed(self, cause: str) -> bool:
        """An attempt got no response (``cause``: the operating system's reason); returns
        True when this failure opened the breaker."""
        if self.open:
            return False
        now = self._clock()
        if self._streak == 0:
            self._since = now
        self._streak += 1
        elapsed = now - self._since
        if self._streak < self.failures or elapsed < self.window_s:
            return False
        self.error = (f"server at {self.where} stopped answering: {cause} "
                      f"({self._streak} connection failures in a row over {elapsed:.1f}s)")
        if self._opened is not None:
            self._opened.set()
        return True

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a retry's backoff), or less when the breaker opens meanwhile."""
        if self.open or seconds <= 0:
            await asyncio.sleep(0)
            return
        if self._opened is None:
            self._opened = asyncio.Event()
        try:
            async with asyncio.timeout(seconds):
                await self._opened.wait()
        except TimeoutError:
            pass
