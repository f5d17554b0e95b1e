"""What a SeqMem-Eval run probes, and how its memory states are stored (docs/seqmem.md §2.2).

The *plan* fixes the hold-out checkpoints (0 plus K_i = round(i*T/9) by default), the
backward-transfer horizons (powers of two below T) and which tasks are re-evaluated at each
horizon (all, or a seeded fraction with ``--retro-sample``). Re-evaluating x_tau under a
later state M_{tau+t} needs that state, so every state the run passes through is stored; the
second half of this module says what is stored per step and rebuilds any step's state.
The runner that uses both is :mod:`clstream.protocols.seqmem.runner`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.errors import SpecError
from clstream.core.specs import derive_seed
from clstream.store.db import ResultsStore
from clstream.store.snapshots import rebuild_chain

MEMORY = "memory"  # the stream name under which memory snapshots are stored


# --- the plan: which probes exist ------------------------------------------------------------


def default_checkpoints(n_tasks: int, count: int = 9) -> list[int]:
    """0 plus K_i = round(i*T/count), i = 1..count (docs/seqmem.md §2.2); halves round up here."""
    if count < 1:
        raise SpecError(f"checkpoint count must be >= 1, got {count}")
    return sorted({0} | {(2 * i * n_tasks + count) // (2 * count) for i in range(1, count + 1)})


def default_horizons(n_tasks: int) -> list[int]:
    """Powers of two below T (docs/seqmem.md §2.2)."""
    out, t = [], 1
    while t < n_tasks:
        out.append(t)
        t *= 2
    return out


@dataclass(frozen=True)
class SeqMemPlan:
    """The checkpoints, horizons and re-evaluated tasks of one run."""

    n_tasks: int
    checkpoints: tuple[int, ...]
    horizons: tuple[int, ...]
    retro_taus: frozenset[int]
    retro_sample: float = 1.0

    @classmethod
    def build(
        cls,
        n_tasks: int,
        checkpoints: Sequence[int] | None = None,
        horizons: Sequence[int] | None = None,
        retro_sample: float = 1.0,
        seed: int = 0,
    ) -> SeqMemPlan:
        if n_tasks < 1:
            raise SpecError("a SeqMem stream needs at least one task")
        ks = default_checkpoints(n_tasks) if checkpoints is None else sorted(set(checkpoints))
        for k in ks:
            if not 0 <= k <= n_tasks:
                raise SpecError(f"flag --checkpoints: {k} is outside 0..T (T = {n_tasks})")
        hs = default_horizons(n_tasks) if horizons is None else sorted(set(horizons))
        for h in hs:
            if not 1 <= h < n_tasks:
                raise SpecError(f"flag --horizons: {h} is outside 1..T-1 (T = {n_tasks})")
        if not 0.0 <= retro_sample <= 1.0:
            raise SpecError(f"flag --retro-sample: must be in [0, 1], got {retro_sample}")
        return cls(n_tasks, tuple(ks), tuple(hs), sample_taus(n_tasks, retro_sample, seed),
                   float(retro_sample))

    def retro_at(self, k: int) -> list[tuple[int, int]]:
        """(tau, horizon) pairs answered under the state after k updates: tau + h - 1 = k."""
        pairs = []
        for h in self.horizons:
            tau = k - h + 1
            if tau >= 1 and tau + h <= self.n_tasks and tau in self.retro_taus:
                pairs.append((tau, h))
        return pairs

    def as_params(self) -> dict[str, Any]:
        return {"checkpoints": list(self.checkpoints), "horizons": list(self.horizons),
                "retro_sample": self.retro_sample}


def sample_taus(n_tasks: int, fraction: float, seed: int) -> frozenset[int]:
    """The tasks re-evaluated at every horizon: all, or a seeded fraction (same set for every
    horizon, so forgetting can compare a task across horizons)."""
    candidates = list(range(1, n_tasks))
    if fraction >= 1.0:
        return frozenset(candidates)
    count = round(fraction * len(candidates))
    rng = random.Random(derive_seed(seed, "seqmem/retro-sample"))
    return frozenset(rng.sample(candidates, count))


# --- memory snapshots ------------------------------------------------------------------------
#
# Memories mostly grow by appending (records, nodes); the store keeps each step's state as a
# delta against the step before (clstream.store.snapshots), so every step is handed to it whole,
# as ``{"full": state}``, and storage grows linearly in T. Runs stored before the store did
# that hold ``{"delta": ...}`` for most steps (dicts patched key by key, a list that only grew
# stored as its new tail, anything else replaced); :func:`load_memory` still rebuilds them.


def apply_delta(old: Any, delta: dict[str, Any]) -> Any:
    """``old`` changed by a delta of a run stored step by step (the comment above)."""
    if "$set" in delta:
        return delta["$set"]
    if "$append" in delta:
        return [*old, *delta["$append"]]
    out = dict(old)
    for key, sub in delta["$dict"].items():
        out[key] = apply_delta(out.get(key), sub)
    for key in delta.get("$del", ()):
        out.pop(key, None)
    return out


def load_memory(store: ResultsStore, run_id: str, t: int) -> dict[str, Any] | None:
    """The system snapshot stored for step t (after t updates) of a SeqMem run, or None."""
    state: dict[str, Any] | None = rebuild_chain(store, run_id, MEMORY, t, apply_delta)
    return state
