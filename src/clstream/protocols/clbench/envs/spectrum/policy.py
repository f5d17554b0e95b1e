"""The builtin policy of the blind spectrum monitoring task (see :mod:`...policies`;
docs/clbench.md §4.1, §6).

:class:`SpectrumRegistry` keeps a registry of transmitters seen across scans (running mean
centre and width, hit count) and reports confirmed ones even while they are silent; without
memory it reports only the peaks of the current scan. Its notes (a
:class:`~clstream.core.environment.NoteTaker`) are one per 24 MHz stretch of the band, listing
every peak seen there with its scan id.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.environment import (
    NOTE_SEPARATOR,
    Turn,
    note_key,
)
from clstream.protocols.clbench.envs.base import instance_of

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
