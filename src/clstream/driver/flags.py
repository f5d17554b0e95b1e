"""The values and bounds of the flags every protocol's ``run`` verb shares, as the driver
checks them: seeds, counts, real-valued sampling, transcripts and executor.

The flags themselves are declared at the command layer
(:mod:`clstream.arguments.groups`), which types each value as it is parsed; spec files type
theirs with the same bounds (:mod:`clstream.commands.specfile`), and the driver reads the
request both build (:mod:`clstream.driver.request`).
"""

from __future__ import annotations

import math

from clstream.core.errors import SpecError

# The openai backend's default endpoint (clstream.models.openai_compat.DEFAULT_BASE_URL, not
# imported here so that building the command line does not load the HTTP client).
OPENAI_DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


MOST_SEEDS = 1_000
"""Most seeds one command runs (each seed is a run of every system)."""


SEED_MAX = 2**63 - 1
"""The largest seed: what a signed 64-bit integer holds, so every backend and store can keep
it; seeds are 0..SEED_MAX wherever they are typed (flags, ``--seeds``, spec files)."""


def short_text(text: str) -> str:
    """A typed value as a message quotes it: whole when short, else its length."""
    return repr(text) if len(text) <= 40 else f"a value of {len(text):,} characters"


def bounded_int(text: str, least: int, most: int) -> int:
    """``text`` as an integer in [least, most], or a :class:`ValueError` whose message says
    so (a number of thousands of digits is refused by its length, never converted)."""
    stripped = text.strip()
    value: int | None = None
    if len(stripped) <= 24:
        try:
            value = int(stripped)
        except ValueError:
            value = None
    if value is None or not least <= value <= most:
        raise ValueError(f"must be an integer in [{least:,}, {most:,}], got {short_text(text)}")
    return value


def interval(least: float, most: float, above: bool) -> str:
    """``[least, most]``, or ``(least, most]`` with ``above``, as a message writes it."""
    return f"({least:g}, {most:g}]" if above else f"[{least:g}, {most:g}]"


def in_interval(value: float, least: float, most: float, above: bool) -> bool:
    """Whether ``value`` is finite and in the interval :func:`interval` writes."""
    low_ok = value > least if above else value >= least
    return math.isfinite(value) and low_ok and value <= most


REAL_SAMPLING: dict[str, tuple[float, float, bool]] = {
    "temperature": (0.0, 2.0, False), "top_p": (0.0, 1.0, True), "min_p": (0.0, 1.0, False)}
"""The bounds of the real-valued sampling flags (least, most, whether least is excluded):
what OpenAI-compatible servers accept; never ``inf`` or ``nan``."""


TRANSCRIPTS = ("all", "none")
"""``--transcripts``: what a run stores of its model calls (recorded in the run's info, never
in its spec hash: docs/design.md §5.1)."""


EXECUTORS = ("local", "ray")
RAY_MISSING = "--executor ray: ray is not installed (pip install 'clstream[ray]')"
EXECUTOR_FLAGS = frozenset({"executor", "ray_address", "ray_workers"})
"""Destinations of the executor flags: how a run is carried out, never what it is (not in the
run spec, not among the flags a results directory records)."""


MOST_ROLLOUTS = 1_000
"""More stateful rollouts than any study reports; the bound keeps a typo from sizing work."""
MOST_IN_FLIGHT = 1_024
"""Cells (rollouts, documents, instances) played at once."""


def positive(flag: str, value: int | None, most: int | None = None) -> None:
    """A count flag must be >= 1 when given, and at most ``most`` where the count sizes work
    (checked before anything is registered: docs/design.md §7, one line and exit 2)."""
    if value is not None and value < 1:
        raise SpecError(f"flag {flag}: must be >= 1, got {value}")
    if value is not None and most is not None and value > most:
        raise SpecError(f"flag {flag}: must be at most {most:,}, got {_short(value)}")


def _short(value: int) -> str:
    """A number as a message shows it: whole when short, else its digit count."""
    text = str(value)
    return text if len(text) <= 24 else f"a {len(text)}-digit number"
