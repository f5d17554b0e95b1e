"""Builtin (non-LLM) policies for the CL-Bench environments and a driver that plays them.

Each policy is a pure function of (turns seen, current observation) over the environments'
*texts* only (observations, its own JSON actions, feedback), so the builtin model can run it
from a prompt later. The stateful arm hands a policy the whole run's turns; the stateless arm
only the current instance's turns: the same code with its memory wiped, which is all that
separates the two (docs/clbench.md §6: each task has a stateful builtin policy that learns the latent
structure and a stateless one that cannot).

* :class:`SpectrumRegistry` -- keeps a registry of transmitters seen across scans (running
  mean centre and width, hit count) and reports confirmed ones even while they are silent;
  without memory it reports only the peaks of the current scan.
* :class:`~clstream.protocols.clbench.envs.sales.policy.SalesForecaster` -- keeps a
  forecasting program and a pooled panel (every export its program copied, and every year of
  actuals revealed where the feedback reveals them, ``feedback=rich``) in the workspace and reruns the program each year, so it estimates one
  growth rate per category; in a fresh workspace, with only the current instance's turns, it
  forecasts flat from the one visible store-year. It also keeps notes (revealed actuals,
  growth estimates) for notes-only memories.
* :class:`~clstream.protocols.clbench.envs.database.policy.SchemaExplorer` -- caches schema
  facts (table per category, columns, price/time/boolean encodings) and answers with one
  query once it knows them; forgets all on a drift notice or a wrong answer; without memory
  it rediscovers them for every question.
* :class:`~clstream.protocols.clbench.envs.poker.policy.OpponentModeler` -- counts each named
  opponent's folds, calls and raises over earlier hands and exploits the style they show;
  without memory it is :class:`~clstream.protocols.clbench.envs.poker.policy.TAGHeuristic`,
  the same tight-aggressive play against everyone.
* :class:`~clstream.protocols.clbench.envs.cohort.policy.PooledCohorts` -- pools per-cohort
  survival evidence (patients counted, Kaplan-Meier curve, the instance it came from) across
  studies and regions; without memory it has the one study's in-sample estimates. Its notes
  are that evidence (a :class:`~clstream.core.environment.NoteTaker`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.core.environment import (
    NOTE_SEPARATOR,
    Environment,
    NoteTaker,
    Policy,
    Turn,
    action_text,
    merge_notes,
    note_key,
    rollout_order,
)
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.codebase.policy import ScriptedDebugger
from clstream.protocols.clbench.envs.cohort.policy import PooledCohorts
from clstream.protocols.clbench.envs.database.policy import SchemaExplorer
from clstream.protocols.clbench.envs.poker.policy import OpponentModeler, TAGHeuristic
from clstream.protocols.clbench.envs.sales.policy import SalesForecaster

__all__ = [
    "POLICIES",
    "InstanceRun",
    "OpponentModeler",
    "PooledCohorts",
    "SalesForecaster",
    "SchemaExplorer",
    "ScriptedDebugger",
    "SpectrumRegistry",
    "TAGHeuristic",
    "current_turns",
    "play",
    "play_instance",
    "play_stateful",
    "play_stateless",
    "play_with_notes",
]


# --- driving a policy ----------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceRun:
    """One finished instance of a policy run."""

    instance_id: str
    stage: int
    reward: float
    success: bool | None
    steps: int
    info: dict[str, Any] = field(default_factory=dict)


def current_turns(history: Sequence[Turn], observation: str) -> list[Turn]:
    """The turns of the instance ``observation`` belongs to (by its header line)."""
    instance = instance_of(observation)
    return [t for t in history if instance_of(t.observation) == instance]


def play_instance(env: Environment, policy: Policy, instance_id: str, history: list[Turn]
                  ) -> InstanceRun:
    """Play one instance from ``env``'s current state, appending its turns to ``history``."""
    query = env.begin(instance_id)
    while True:
        action = policy.act(tuple(history), query.observation)
        result = env.step(action)
        history.append(Turn(query.observation, action_text(action), result.feedback))
        if result.instance_complete:
            assert result.reward is not None
            return InstanceRun(instance_id, query.stage, result.reward, result.success,
                               result.step, dict(result.info))
        assert result.next_query is not None
        query = result.next_query


def play(env: Environment, policy: Policy, order: Sequence[str], *, stateful: bool
         ) -> list[InstanceRun]:
    """Play ``order``: one memory through all of it (stateful), or each instance from
    :meth:`~clstream.core.environment.Environment.reset_to` with no memory (stateless)."""
    history: list[Turn] = []
    runs = []
    if stateful:
        env.reset()
    for instance_id in order:
        if not stateful:
            env.reset_to(instance_id)
            history = []
        runs.append(play_instance(env, policy, instance_id, history))
    return runs


def play_with_notes(env: Environment, policy: NoteTaker, rollout: int = 0) -> list[InstanceRun]:
    """A stateful rollout where the policy remembers earlier instances only through its notes
    (what a notepad would hold): after each instance its turns become notes, merged into the
    notes kept; within an instance the policy sees that instance's turns."""
    env.reset()
    notes: list[str] = []
    runs = []
    for instance_id in rollout_order(env.schedule, env.order_policy, env.seed, rollout):
        query = env.begin(instance_id)
        turns: list[Turn] = []
        while True:
            action = policy.act_from_notes(notes, tuple(turns), query.observation)
            result = env.step(action)
            turns.append(Turn(query.observation, action_text(action), result.feedback))
            if result.instance_complete:
                break
            assert result.next_query is not None
            query = result.next_query
        assert result.reward is not None
        runs.append(InstanceRun(instance_id, query.stage, result.reward, result.success,
                                result.step, dict(result.info)))
        notes = merge_notes(policy, [*notes, *policy.notes(turns)])
    return runs


def play_stateful(env: Environment, policy: Policy, rollout: int = 0) -> list[InstanceRun]:
    """A stateful rollout in the task's order for ``rollout`` (seeded by the env's seed)."""
    return play(env, policy, rollout_order(env.schedule, env.order_policy, env.seed, rollout),
                stateful=True)


def play_stateless(env: Environment, policy: Policy) -> list[InstanceRun]:
    """The stateless arm, every instance once in canonical order (it does not depend on order)."""
    return play(env, policy, env.schedule.instance_ids, stateful=False)


# --- spectrum monitoring --------------------------------------------------------------------

_PEAK = re.compile(r"^p\d+ \| (-?\d+(?:\.\d+)?) \| (-?\d+(?:\.\d+)?) \| (\d+(?:\.\d+)?)\s*$",
                   re.MULTILINE)
WIDE_FROM = 8.5  # MHz: peaks at least this wide belong to the wideband class
MATCH_GATE = 8.0  # MHz: a third of the 24 MHz pitch, wide enough for 3 MHz centre noise


def scan_peaks(observation: str) -> list[tuple[float, float]]:
    """(centre, width) of every peak line of a scan observation."""
    return [(float(m.group(1)), float(m.group(3))) for m in _PEAK.finditer(observation)]


@dataclass
class _Track:
    center: float
    width: float
    hits: int
    wide: bool

    def add(self, center: float, width: float) -> None:
        self.hits += 1
        self.center += (center - self.center) / self.hits
        self.width += (width - self.width) / self.hits


class SpectrumRegistry:
    """Transmitter registry over every scan seen; reports confirmed tracks plus current peaks.

    A peak joins the nearest track of its width class within :data:`MATCH_GATE` MHz (channels
    of one class sit 24 MHz apart, and a detected centre may be off by several MHz); a track
    with two hits or more is reported even when silent. With only the current scan, this is
    "report what you see".
    """

    name = "spectrum-registry"

    def __init__(self, min_hits: int = 2) -> None:
        self.min_hits = min_hits

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        scans: dict[str | None, list[tuple[float, float]]] = {}
        for turn in history:
            scans.setdefault(instance_of(turn.observation), scan_peaks(turn.observation))
        return self._report(scans, observation)

    # --- notes: the peaks of every scan seen, one note per 24 MHz stretch of the band -------

    def notes(self, history: Sequence[Turn]) -> list[str]:
        """One note per stretch of the band holding peaks: each peak as ``<scan> <centre>/<width>``
        (the scan id is the evidence, so merging a scan twice changes nothing)."""
        seen: dict[str, list[tuple[float, float]]] = {}
        for turn in history:
            scan = instance_of(turn.observation)
            if scan is not None:
                seen.setdefault(scan, scan_peaks(turn.observation))
        stretches: dict[int, set[_Sighting]] = {}
        for scan, peaks in seen.items():
            for c, w in peaks:
                stretches.setdefault(_stretch(c), set()).add((scan, c, w))
        return [_spectrum_note(k, stretches[k]) for k in sorted(stretches)]

    def merge(self, old: str, new: str) -> str:
        key = note_key(new)
        stretch = _SUBJECT.fullmatch(key or "")
        start = int(float(stretch.group(1))) if stretch else 0
        return _spectrum_note(start // SPECTRUM_STRETCH, _sightings(old) | _sightings(new))

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        remembered: dict[str | None, list[tuple[float, float]]] = {}
        for scan, c, w in sorted(s for note in notes if _SUBJECT.fullmatch(note_key(note) or "")
                                 for s in _sightings(note)):
            remembered.setdefault(scan, []).append((c, w))
        scans: dict[str | None, list[tuple[float, float]]] = remembered
        for turn in history:
            scans.setdefault(instance_of(turn.observation), scan_peaks(turn.observation))
        return self._report(scans, observation)

    def _report(self, scans: dict[str | None, list[tuple[float, float]]], observation: str
                ) -> dict[str, Any]:
        current = instance_of(observation)
        scans.pop(current, None)
        tracks: list[_Track] = []
        for peaks in scans.values():
            for c, w in peaks:
                self._match(tracks, c, w)
        now = [self._match(tracks, c, w) for c, w in scan_peaks(observation)]
        report = [t for t in tracks if t.hits >= self.min_hits or any(t is n for n in now)]
        report.sort(key=lambda t: t.center)
        return {"transmitters": [
            {"center_freq": round(t.center, 2), "bandwidth": round(t.width, 2),
             "currently_active": any(t is n for n in now)} for t in report]}

    @staticmethod
    def _match(tracks: list[_Track], center: float, width: float) -> _Track:
        wide = width >= WIDE_FROM
        best, gap = None, math.inf
        for t in tracks:
            d = abs(t.center - center)
            if t.wide == wide and d < MATCH_GATE and d < gap:
                best, gap = t, d
        if best is None:
            best = _Track(center, width, 1, wide)
            tracks.append(best)
        else:
            best.add(center, width)
        return best


SPECTRUM_STRETCH = 24  # MHz of band per note: few notes, each naming the words of a scan
_SUBJECT = re.compile(r"spectrum (\d+)-\d+ MHz")
_ENTRY = re.compile(r"(\S+) (-?\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)")
_Sighting = tuple[str, float, float]


def _stretch(center: float) -> int:
    return max(0, math.floor(center / SPECTRUM_STRETCH))


def _spectrum_note(stretch: int, sightings: set[_Sighting]) -> str:
    lo = stretch * SPECTRUM_STRETCH
    entries = ", ".join(f"{scan} {c:g}/{w:g}" for scan, c, w in sorted(sightings))
    return (f"spectrum {lo}-{lo + SPECTRUM_STRETCH} MHz: detected peaks (scan centre/width "
            f"MHz) {entries}")


def _sightings(note: str) -> set[_Sighting]:
    body = note.split(NOTE_SEPARATOR, 1)[1] if NOTE_SEPARATOR in note else ""
    body = body.split(") ", 1)[1] if ") " in body else ""
    return {(m.group(1), float(m.group(2)), float(m.group(3))) for m in _ENTRY.finditer(body)}


POLICIES: dict[str, Callable[[], Policy]] = {
    "blind_spectrum_monitoring": SpectrumRegistry,
    "sales_prediction": SalesForecaster,
    "database_exploration": SchemaExplorer,
    "exploitable_poker": OpponentModeler,
    "codebase_adaptation": ScriptedDebugger,
    "cohort_studies": PooledCohorts,
}
"""The builtin policy of each task, by environment name."""
