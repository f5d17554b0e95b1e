"""Snapshots of a stateful rollout, stored compactly (docs/clbench.md §2.5; the runner resumes from them).

After every instance of a stateful rollout the runner stores the system's memory and the
environment's state, ``{"system": ..., "env": ...}``, under the rollout's stream with t = the
number of instances done. A memory mostly grows by appending (passages, turns, records), so
storing it whole after every instance would cost O(N^2) space over a rollout; the store keeps
each snapshot as a delta against the one before (:mod:`clstream.store.snapshots`), so it is
handed over whole, as ``{"full": ...}``. Rollouts stored before the store did that hold every
20th snapshot whole and the others as ``{"delta": ...}`` from the one before:

* two objects: the keys whose values changed (each as a delta when it can be one) and the keys
  removed;
* two lists where the old one is a prefix of the new one: the items appended;
* anything else: the new value.

:func:`load_snapshot` walks back to the last whole snapshot and applies the deltas forward.
"""

from __future__ import annotations

from typing import Any

from clstream.core.errors import StoreError
from clstream.store.db import ResultsStore
from clstream.store.snapshots import rebuild_chain


def apply_delta(old: Any, delta: Any) -> Any:
    """``old`` changed by a delta of a rollout stored before (the module docstring)."""
    if "=" in delta:
        return delta["="]
    if "append" in delta:
        if not isinstance(old, list):
            raise ValueError("a list delta applied to a non-list")
        return [*old, *delta["append"]]
    if not isinstance(old, dict):
        raise ValueError("an object delta applied to a non-object")
    out = {k: v for k, v in old.items() if k not in set(delta["del"])}
    for key, change in delta["dict"].items():
        out[key] = apply_delta(old.get(key), change)
    return out


def load_snapshot(store: ResultsStore, run_id: str, stream: str, t: int) -> dict[str, Any]:
    """The snapshot stored for ``t`` of ``stream``, rebuilt from its deltas."""
    state = rebuild_chain(store, run_id, stream, t, apply_delta)
    if state is None:
        raise StoreError(f"{store.dir}: snapshot {t} of {stream!r} (run {run_id}) is missing "
                         "or incomplete; delete the run to start it again")
    if not isinstance(state, dict):
        raise StoreError(f"{store.dir}: snapshot {t} of {stream!r} (run {run_id}) is malformed")
    return state
