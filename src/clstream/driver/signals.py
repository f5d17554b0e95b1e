"""How a run stops on SIGINT (Ctrl-C) and SIGTERM (``kill``, ``timeout``, a scheduler's
preemption): within a few seconds, with its committed work kept and its wall time stored, the
resume command printed and exit status 130 or 143 (128 + the signal, as a shell reports a
process the signal ended).

While :func:`stopping_on_signals` is open, both signals go to one handler. The first signal
asks the run's event loop to cancel the run (:meth:`Stopper.attach`), the way
``asyncio.run`` treats Ctrl-C: every awaiting cell ends at its next ``await`` and every
``finally`` of the driver runs. A cell whose work never gives the loop control (a CL-Bench
environment played with the builtin reader: every call returns at once, so the loop never
sees the signal) would ignore that request. So when the run has not ended :data:`GRACE_S`
seconds later, the signal is sent again to the main thread, and the second delivery raises
:class:`KeyboardInterrupt` wherever that thread is, as Python's own Ctrl-C does. Every store
write is one transaction, so a raise mid-write leaves that write undone and nothing else. A
second signal from the user forces the same way at once. With no run's loop attached (the
endpoint check, dataset storing), the first signal raises at once.

Executor threads (``asyncio.to_thread``: SeqMem's evaluations, Ray's waits) are not
interrupted: a cancelled run stops awaiting them, and the process ends when they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from clstream.core.errors import Interrupted

GRACE_S = 1.0  # how long a cancelled run has to end at an await before it is interrupted
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopper:
    """The state of one :func:`stopping_on_signals` block: which signal came first, and the
    run (its loop and task) a first signal cancels."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._cancel: Callable[[], None] | None = None
        self._timer: threading.Timer | None = None

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[object]) -> None:
        """From now on a first signal cancels ``task`` from inside ``loop``."""
        def cancel() -> None:
            loop.call_soon_threadsafe(task.cancel)

        self._cancel = cancel

    def detach(self) -> None:
        self._cancel = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            if self._cancel is not None:
                self._cancel()
                self._timer = threading.Timer(GRACE_S, signal.pthread_kill,
                                              (threading.main_thread().ident, signum))
                self._timer.daemon = True
                self._timer.start()
                return
        raise KeyboardInterrupt

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


_current: Stopper | None = None


def current() -> Stopper | None:
    """The open block's stopper; None outside one (or off the main thread)."""
    return _current


@contextlib.contextmanager
def stopping_on_signals(resume: str | None = None) -> Iterator[Stopper | None]:
    """SIGINT and SIGTERM stop the block as the module says; a block a signal ended raises
    :class:`~clstream.core.errors.Interrupted` with the signal and ``resume`` (the command
    that resumes the work). Only the main thread can take signals: elsewhere the block
    changes nothing and yields None."""
    global _current
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    if _current is not None:  # a block inside an open one: the open one stops both
        yield _current
        return
    stopper = Stopper()
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    for signum in SIGNALS:
        signal.signal(signum, stopper.handle)
    _current = stopper
    try:
        yield stopper
    except KeyboardInterrupt as exc:
        code = stopper.signum or (exc.signum if isinstance(exc, Interrupted)
                                  else signal.SIGINT)
        raise Interrupted(code, resume) from None
    finally:
        _current = None
        stopper.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stopper.signum is not None:  # a signal the block swallowed still ends the command
        raise Interrupted(stopper.signum, resume)
