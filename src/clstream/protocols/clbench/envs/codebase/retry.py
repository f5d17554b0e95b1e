"""The second generated repository of the codebase task: a retry/backoff library (docs/clbench.md §4.6).

It mirrors the layout of tenacity, with conventions unlike the first repository's: the
package lives under ``src/``, stop conditions, wait strategies and retry predicates are
separate modules of small callables, an argument checker module holds the ``require_*``
helpers, and the tests live under ``test/`` and run through the repository's own
``run_tests.py`` (``python run_tests.py`` or ``python run_tests.py -k NAME``), which puts
``src`` on the path. Sleeping is injected, so nothing waits for real.

The seed picks the package name and the names of the stop and wait modules (:func:`names`).
"""

from __future__ import annotations

import random

PACKAGES = ("retryx", "persist", "againpy", "backoffkit", "steadfast")
STOP_MODULES = ("stop", "stopping", "halt")
WAIT_MODULES = ("wait", "waiting", "backoff")


def names(seed: int) -> dict[str, str]:
    """The seed's names for the placeholders of :data:`FILES`."""
    rng = random.Random(f"{seed}:codebase:retry")
    return {"PKG": rng.choice(PACKAGES), "STOP": rng.choice(STOP_MODULES),
            "WAIT": rng.choice(WAIT_MODULES)}


README = '''# @PKG@

Retrying with stop conditions, wait strategies and retry predicates. The package lives in
`src/@PKG@`; a snippet outside the test runner needs `import sys; sys.path.insert(0, "src")`.

Conventions: argument checks go through `src/@PKG@/_args.py` (`require_*`); giving up raises
`RetryError`, which keeps the last attempt.

Run the tests from the repository root with:

    python run_tests.py            # everything
    python run_tests.py -k wait    # tests whose name contains "wait"
'''

RUN_TESTS = '''"""Run the test suite under test/ with src/ on the path."""

import os
import sys
import unittest

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "src"))


def main(argv):
    pattern = argv[argv.index("-k") + 1] if "-k" in argv else ""
    suite = unittest.defaultTestLoader.discover(os.path.join(ROOT, "test"), top_level_dir=ROOT)
    chosen = unittest.TestSuite()
    stack = [suite]
    while stack:
        for item in stack.pop():
            if isinstance(item, unittest.TestSuite):
                stack.append(item)
            elif pattern in item.id():
                chosen.addTest(item)
    result = unittest.TextTestRunner(verbosity=1).run(chosen)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

INIT = '''"""@PKG@: retrying with stop, wait and retry strategies."""

from .api import RetryError, Retrying, retry
from .predicates import retry_if_exception_type, retry_if_result
from .@STOP@ import stop_after_attempt, stop_after_delay, stop_any
from .@WAIT@ import wait_exponential, wait_fixed, wait_incrementing

__all__ = ["RetryError", "Retrying", "retry", "retry_if_exception_type", "retry_if_result",
           "stop_after_attempt", "stop_after_delay", "stop_any", "wait_exponential",
           "wait_fixed", "wait_incrementing"]
'''

ARGS = '''"""Argument checks (every check of the package goes through here)."""


def require_positive(name, value):
    """Raise ValueError unless ``value`` is a number above zero."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError("%s must be positive, got %r" % (name, value))


def require_non_negative(name, value):
    """Raise ValueError unless ``value`` is a number at least zero."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError("%s must not be negative, got %r" % (name, value))
'''

STOP = '''"""Stop conditions: callables of (attempt number, seconds elapsed) -> bool."""

from ._args import require_non_negative, require_positive


def stop_after_attempt(max_attempts):
    """Stop once ``max_attempts`` attempts were made."""
    require_positive("max_attempts", max_attempts)

    def stop(attempt, elapsed):
        return attempt >= max_attempts
    return stop


def stop_after_delay(max_delay):
    """Stop once ``max_delay`` seconds have passed since the first attempt."""
    require_non_negative("max_delay", max_delay)

    def stop(attempt, elapsed):
        return elapsed >= max_delay
    return stop


def stop_any(*conditions):
    """Stop as soon as any of ``conditions`` says so."""
    def stop(attempt, elapsed):
        return any(condition(attempt, elapsed) for condition in conditions)
    return stop
'''

WAIT = '''"""Wait strategies: callables of the attempt number (1 after the first failure) -> seconds."""

from ._args import require_non_negative, require_positive


def wait_fixed(seconds):
    """Always wait ``seconds``."""
    require_non_negative("seconds", seconds)

    def wait(attempt):
        return seconds
    return wait


def wait_exponential(multiplier=1, maximum=60, minimum=0, base=2):
    """Wait ``multiplier`` (default 1) times ``base`` (default 2) to the power attempt - 1,
    clamped to [minimum, maximum]; ``maximum`` (default 60)."""
    require_positive("multiplier", multiplier)

    def wait(attempt):
        value = multiplier * base ** (attempt - 1)
        return max(minimum, min(value, maximum))
    return wait


def wait_incrementing(start=0, increment=1, maximum=60):
    """Wait ``start`` plus ``increment`` (default 1) per earlier attempt, at most ``maximum``."""
    require_non_negative("increment", increment)

    def wait(attempt):
        value = start + increment * (attempt - 1)
        return min(value, maximum)
    return wait
'''

PREDICATES = '''"""Retry predicates: callables of an outcome (value, error) -> bool (True: try again)."""


def retry_if_exception_type(*types):
    """Retry when the attempt raised one of ``types`` (default: any Exception)."""
    kinds = types or (Exception,)

    def predicate(value, error):
        return error is not None and isinstance(error, kinds)
    return predicate


def retry_if_result(test):
    """Retry when the attempt returned a value for which ``test`` is true."""
    def predicate(value, error):
        return error is None and bool(test(value))
    return predicate
'''

API = '''"""Retrying: call a function until it succeeds or a stop condition says to give up."""

from .predicates import retry_if_exception_type
from .@STOP@ import stop_after_attempt
from .@WAIT@ import wait_fixed


class RetryError(Exception):
    """Raised on giving up; ``attempts`` and ``last_error`` describe the last attempt."""

    def __init__(self, attempts, last_error):
        super().__init__("gave up after %d attempts" % attempts)
        self.attempts = attempts
        self.last_error = last_error


class Retrying:
    """Calls a function under stop, wait and retry strategies; ``sleep`` does the waiting."""

    def __init__(self, stop=None, wait=None, retry=None, sleep=None, clock=None):
        if sleep is not None and not callable(sleep):
            raise TypeError("sleep must be callable")
        self.stop = stop or stop_after_attempt(3)
        self.wait = wait or wait_fixed(0)
        self.retry = retry or retry_if_exception_type()
        self.sleep = sleep or (lambda seconds: None)
        self.clock = clock
        self.slept = []

    def call(self, fn, *args, **kwargs):
        """fn(*args, **kwargs), retried; the value of the first attempt not retried."""
        attempt, elapsed = 0, 0.0
        while True:
            attempt += 1
            value, error = None, None
            try:
                value = fn(*args, **kwargs)
            except Exception as exc:
                error = exc
            if not self.retry(value, error):
                if error is not None:
                    raise error
                return value
            if self.stop(attempt, elapsed):
                raise RetryError(attempt, error)
            delay = self.wait(attempt)
            self.slept.append(delay)
            self.sleep(delay)
            elapsed += delay


def retry(**options):
    """Decorator form of Retrying: ``@retry(stop=..., wait=...)``."""
    def decorate(fn):
        def wrapped(*args, **kwargs):
            return Retrying(**options).call(fn, *args, **kwargs)
        wrapped.__name__ = fn.__name__
        return wrapped
    return decorate
'''

TEST_STOP = '''import unittest

from @PKG@ import Retrying, stop_after_attempt, stop_any


class StopTests(unittest.TestCase):
    def test_first_success_returns(self):
        self.assertEqual(Retrying(stop=stop_after_attempt(2)).call(lambda: 42), 42)

    def test_any(self):
        self.assertTrue(stop_any(lambda a, e: False, lambda a, e: True)(1, 0.0))


if __name__ == "__main__":
    unittest.main()
'''

TEST_WAIT = '''import unittest

from @PKG@ import Retrying, wait_fixed


class WaitTests(unittest.TestCase):
    def test_fixed(self):
        self.assertEqual(wait_fixed(2)(7), 2)

    def test_success_needs_no_wait(self):
        retrying = Retrying(wait=wait_fixed(1))
        self.assertEqual(retrying.call(lambda: 42), 42)
        self.assertEqual(retrying.slept, [])


if __name__ == "__main__":
    unittest.main()
'''

FILES = {
    "README.md": README,
    "run_tests.py": RUN_TESTS,
    "src/@PKG@/__init__.py": INIT,
    "src/@PKG@/_args.py": ARGS,
    "src/@PKG@/@STOP@.py": STOP,
    "src/@PKG@/@WAIT@.py": WAIT,
    "src/@PKG@/predicates.py": PREDICATES,
    "src/@PKG@/api.py": API,
    "test/__init__.py": "",
    "test/test_stop.py": TEST_STOP,
    "test/test_wait.py": TEST_WAIT,
}
TEST_COMMAND = "python run_tests.py"
PRELUDE = 'import sys; sys.path.insert(0, "src")\n'
"""What a snippet needs before it can import the package."""
