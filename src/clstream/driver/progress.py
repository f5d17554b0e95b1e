"""Progress of a run: a bar with ETA on a terminal; where stderr is a file or a pipe (nohup, a
job scheduler, CI) one plain line every :data:`PROGRESS_INTERVAL_S` seconds instead, so a batch
job shows signs of life: done/total, errors, requests/s, output tokens/s and the current
concurrency of the remote backends in use (:func:`clstream.models.concurrency.live_limits`),
ETA. ``--no-progress`` silences both.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref

from tqdm import tqdm

from clstream.models.concurrency import ConcurrencyLimit, live_limits

PROGRESS_INTERVAL_S = 30.0  # between plain progress lines


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def _counts(limit: ConcurrencyLimit) -> tuple[int, int, int]:
    return limit.stats.requests, limit.stats.errors, limit.stats.output_tokens


class Notes:
    """Lines a run says before anything else it prints (``no --model given: ...``): printed
    once, with the first progress or result line, so a run that fails before printing
    anything still fails in one line."""

    def __init__(self, lines: list[str] | None = None) -> None:
        self.lines = list(lines or [])

    def flush(self) -> None:
        for line in self.lines:
            print(line, file=sys.stderr, flush=True)
        self.lines = []


class PlainProgress:
    """Progress for a stderr that is not a terminal: one line every ``interval`` seconds (from
    a daemon thread, so a run stuck on one slow answer still reports) and one at the end."""

    def __init__(self, total: int, initial: int, desc: str,
                 interval: float | None = None, notes: Notes | None = None) -> None:
        self.total, self.n, self.desc = total, initial, desc
        self._notes = notes or Notes()
        self._initial = initial
        self._start = time.monotonic()
        # Counters at the start, per backend: a backend made later (a new event loop) starts
        # from zero, and one dropped since no longer counts.
        self._baseline: weakref.WeakKeyDictionary[ConcurrencyLimit, tuple[int, int, int]] = (
            weakref.WeakKeyDictionary({x: _counts(x) for x in live_limits()}))
        self._stop = threading.Event()
        self._interval = PROGRESS_INTERVAL_S if interval is None else interval
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _since_start(self) -> tuple[int, int, int]:
        """Requests, errors and output tokens of the live backends since the start."""
        totals = [0, 0, 0]
        for limit in live_limits():
            before = self._baseline.get(limit, (0, 0, 0))
            for i, (now, then) in enumerate(zip(_counts(limit), before, strict=True)):
                totals[i] += now - then
        return totals[0], totals[1], totals[2]

    def update(self, n: int = 1) -> None:
        self.n += n

    def line(self) -> str:
        """The progress line as it reads now."""
        elapsed = max(time.monotonic() - self._start, 1e-9)
        requests, errors, tokens = self._since_start()
        done = self.n - self._initial
        eta = (f"ETA {_duration((self.total - self.n) * elapsed / done)}"
               if done > 0 and self.n < self.total else "ETA ?" if self.n < self.total
               else "done")
        limits = sorted({x.current for x in live_limits()})
        concurrency = ("" if not limits else
                       f", concurrency {'/'.join(str(v) for v in limits)}")
        return (f"clstream: progress {self.desc}: {self.n}/{self.total}, {errors} errors, "
                f"{requests / elapsed:.2f} requests/s, {tokens / elapsed:.1f} output tokens/s"
                f"{concurrency}, {eta} ({_duration(elapsed)} elapsed)")

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            self._notes.flush()
            print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._notes.flush()
            print(self.line(), file=sys.stderr, flush=True)


ProgressBar = tqdm | PlainProgress | None
"""A progress display, or None where none is shown."""


def progress_bar(total: int, initial: int, desc: str, notes: Notes | None = None
                 ) -> tqdm | PlainProgress:
    """A progress bar with ETA on a terminal; plain lines every 30 s elsewhere; ``notes``
    come before the first line either shows."""
    if not sys.stderr.isatty():
        return PlainProgress(total, initial, desc, notes=notes)
    if notes is not None:
        notes.flush()
    return tqdm(
        total=total, initial=initial, desc=desc, unit="probe", dynamic_ncols=True, leave=False,
    )
