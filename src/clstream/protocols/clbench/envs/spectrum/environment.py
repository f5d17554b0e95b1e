"""Blind spectrum monitoring (signal processing; docs/clbench.md §4.1; paper App. A.1).

A 168 MHz band holds 13 fixed transmitters on a regular grid: 7 wideband channels, one per
24 MHz slot, and 6 narrowband channels in the guard gaps between them. Each scan (one
instance, one step) shows the peaks a noisy detector found; the agent reports the
transmitters it believes occupy the band. What is scored never changes: the union of all 13
channels. What changes at each stage is how much of it is ever active.

Two generators (the ``generator`` parameter, recorded in the environment's parameters and so
in the run's dataset and id):

``"authors"`` (the default) follows the authors' generator: wideband width 15 MHz with a 9 MHz
guard (wide centres 7.5 + 24k), narrowband channels 5 MHz wide centred in the gaps
(19.5 + 24k), and fixed awake channels per stage:

| stage | variant | awake (active in turn) | active per scan | dormant (p = 0.1 per scan) |
| --- | --- | --- | --- | --- |
| 1 | five_ch_wide | wide slots 0-4 | 2 | wide slots 5-6, all 6 narrow |
| 2 | five_plus_four_mixed | wide slots 0-4, narrow gaps 0-3 | 3 | wide 5-6, narrow gaps 4-5 |
| 3 | full_grid_active | all 13 | 4 | none |

Awake channels take turns from a shuffled pool (round robin, distinct within a scan). The
detector finds an active channel with probability 0.85 and reports its centre with Gaussian
noise of sd 3.0 MHz, its width with noise of sd 10% of the width and its power as
-30 dBm + N(0, 5 dB); a scan may also hold a false alarm (p 0.2) or a strong interferer
(p 0.1) at a random frequency.

``"varied"`` is clstream's earlier variant, kept for comparison: the wideband width drawn
from [12, 16] MHz per seed, narrowband widths from [4, 6] MHz with a small jitter in their
gaps, the awake channels of stages 1-2 drawn at random (5 of 7 wide, 4 of 6 narrow), centre
noise sd 10% of the width, and false alarms weaker (about -47 dBm) than the channels.

Reward (the authors' code, not the paper's wording): the IoU of the *available* spectrum, band
minus the union of all channels, against the band minus the union of the reported intervals;
1.0 when both are empty. r_max 1. Feedback is only "Scan <id> recorded." Every instance's scan
is fixed by its id, so permuted rollouts and the stateless arm see the same scans.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core.environment import ActionError, OrderPolicy, Schedule
from clstream.protocols.clbench.envs.base import EnvironmentBase, Outcome, build_schedule

BAND = (0.0, 168.0)
PITCH = 24.0
N_WIDE, N_NARROW = 7, 6
VARIANTS = ("five_ch_wide", "five_plus_four_mixed", "full_grid_active")
SCHEDULES: dict[str, tuple[int, ...]] = {"default": (30, 30, 30), "short": (5, 5, 5)}
MAX_TRANSMITTERS = 64
P_MISS, P_FALSE_ALARM, P_INTERFERENCE, P_DORMANT = 0.15, 0.20, 0.10, 0.10
ACTIVE_PER_SCAN = (2, 3, 4)
GENERATORS = ("authors", "varied")
AUTHORS_WIDE, AUTHORS_GUARD, AUTHORS_NARROW = 15.0, 9.0, 5.0
AUTHORS_FREQ_NOISE = 3.0  # MHz, sd of a detected centre
CHANNEL_POWER, POWER_NOISE = -30.0, 5.0  # dBm, dB

Interval = tuple[float, float]


@dataclass(frozen=True)
class Channel:
    center: float
    width: float
    kind: str  # "wide" | "narrow"

    @property
    def interval(self) -> Interval:
        return (self.center - self.width / 2, self.center + self.width / 2)


@dataclass(frozen=True)
class Peak:
    freq: float
    power: float
    width: float


@dataclass(frozen=True)
class Scan:
    instance_id: str
    index: int
    noise_floor: float
    peaks: tuple[Peak, ...]
    active: tuple[int, ...]  # channel indexes active in this scan (not shown)


# --- interval arithmetic -------------------------------------------------------------------


def merge(intervals: Iterable[Interval], band: Interval = BAND) -> list[Interval]:
    """The union of ``intervals`` clipped to ``band``, as sorted disjoint intervals."""
    lo_b, hi_b = band
    clipped = sorted((max(lo, lo_b), min(hi, hi_b)) for lo, hi in intervals)
    out: list[Interval] = []
    for lo, hi in clipped:
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def complement(intervals: Sequence[Interval], band: Interval = BAND) -> list[Interval]:
    """``band`` minus the (merged, sorted) ``intervals``."""
    out, at = [], band[0]
    for lo, hi in intervals:
        if lo > at:
            out.append((at, lo))
        at = max(at, hi)
    if at < band[1]:
        out.append((at, band[1]))
    return out


def measure(intervals: Sequence[Interval]) -> float:
    return sum(hi - lo for lo, hi in intervals)


def intersection(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def available_iou(truth: Iterable[Interval], reported: Iterable[Interval],
                  band: Interval = BAND) -> float:
    """IoU of the available spectrum: band minus ``truth`` against band minus ``reported``."""
    gt_avail = complement(merge(truth, band), band)
    rep_avail = complement(merge(reported, band), band)
    inter = measure(intersection(gt_avail, rep_avail))
    union = measure(gt_avail) + measure(rep_avail) - inter
    return 1.0 if union <= 1e-12 else inter / union


# --- the generator -------------------------------------------------------------------------


def make_channels(rng: random.Random, generator: str = "authors") -> list[Channel]:
    """The 13 channels: wide ones 0..6 by slot, narrow ones 7..12 by gap."""
    if generator == "authors":
        return ([Channel(k * PITCH + AUTHORS_WIDE / 2, AUTHORS_WIDE, "wide")
                 for k in range(N_WIDE)]
                + [Channel(k * PITCH + AUTHORS_WIDE + AUTHORS_GUARD / 2, AUTHORS_NARROW, "narrow")
                   for k in range(N_NARROW)])
    wide = round(rng.uniform(12.0, 16.0), 1)
    channels = [Channel(round(k * PITCH + wide / 2, 2), wide, "wide") for k in range(N_WIDE)]
    gap = PITCH - wide
    for k in range(N_NARROW):
        width = round(rng.uniform(4.0, 6.0), 1)
        slack = (gap - width) / 2
        center = k * PITCH + wide + gap / 2 + rng.uniform(-0.5, 0.5) * slack
        channels.append(Channel(round(center, 2), width, "narrow"))
    return channels


def _stage_plan(rng: random.Random, generator: str) -> list[tuple[list[int], list[int]]]:
    """(awake, dormant) channel indexes per stage; wide are 0..6, narrow 7..12."""
    wide, narrow = list(range(N_WIDE)), list(range(N_WIDE, N_WIDE + N_NARROW))
    if generator == "authors":
        awake_wide, awake_narrow = wide[:5], narrow[:4]
    else:
        awake_wide = sorted(rng.sample(wide, 5))
        awake_narrow = sorted(rng.sample(narrow, 4))
    rest_wide = [c for c in wide if c not in awake_wide]
    rest_narrow = [c for c in narrow if c not in awake_narrow]
    return [(awake_wide, rest_wide + narrow),
            (awake_wide + awake_narrow, rest_wide + rest_narrow),
            (wide + narrow, [])]


def _detect(rng: random.Random, ch: Channel, generator: str) -> Peak:
    sd = AUTHORS_FREQ_NOISE if generator == "authors" else 0.1 * ch.width
    return Peak(round(ch.center + rng.gauss(0.0, sd), 1),
                round(CHANNEL_POWER + rng.gauss(0.0, POWER_NOISE), 1),
                round(max(0.5, ch.width * (1.0 + rng.gauss(0.0, 0.1))), 1))


def _spurious(rng: random.Random, generator: str, strong: bool) -> Peak:
    """A false alarm (``strong`` False) or an interferer at a random frequency. Under the
    authors' generator a false alarm's power follows the channels' model (the detector cannot
    tell it by power); the widths are clstream's choice (docs/clbench.md §4.1)."""
    freq = round(rng.uniform(*BAND), 1)
    if strong:
        return Peak(freq, round(rng.gauss(-24.0, 4.0), 1), round(rng.uniform(3.0, 12.0), 1))
    power = (CHANNEL_POWER + rng.gauss(0.0, POWER_NOISE) if generator == "authors"
             else rng.gauss(-47.0, 4.0))
    return Peak(freq, round(power, 1), round(rng.uniform(1.0, 6.0), 1))


def make_scans(seed: int, sizes: Sequence[int], ids: Sequence[str],
               channels: Sequence[Channel], generator: str = "authors") -> list[Scan]:
    rng = random.Random(f"spectrum-activity:{seed}")
    plan = _stage_plan(rng, generator)
    scans: list[Scan] = []
    index = 0
    for stage, size in enumerate(sizes):
        awake, dormant = plan[stage]
        pool = list(awake)
        rng.shuffle(pool)
        turn = 0
        for _ in range(size):
            n = ACTIVE_PER_SCAN[stage]
            active = {pool[(turn + j) % len(pool)] for j in range(n)}
            turn += n
            active |= {c for c in dormant if rng.random() < P_DORMANT}
            peaks = [_detect(rng, channels[c], generator) for c in sorted(active)
                     if rng.random() >= P_MISS]
            if rng.random() < P_FALSE_ALARM:
                peaks.append(_spurious(rng, generator, strong=False))
            if rng.random() < P_INTERFERENCE:
                peaks.append(_spurious(rng, generator, strong=True))
            peaks.sort(key=lambda p: p.freq)
            scans.append(Scan(ids[index], index, round(-95.0 + rng.gauss(0.0, 1.5), 1),
                              tuple(peaks), tuple(sorted(active))))
            index += 1
    return scans


# --- the environment -----------------------------------------------------------------------

INSTRUCTIONS = (
    "You watch a radio band for a spectrum monitoring team. A fixed set of transmitters shares "
    "the band; each one is active only some of the time, and the detector misses signals and "
    "sometimes reports spurious ones. After every scan, report every transmitter you believe "
    "occupies part of the band, including ones that are silent right now, as centre frequency "
    "and bandwidth in MHz. Your report is scored on the spectrum it leaves free: the overlap "
    "between the band minus your reported intervals and the band minus the true transmitters "
    "(1.0 is a perfect map). Each scan is one step; the only feedback is that it was recorded."
)
ACTION_FORMAT = (
    'Reply with one JSON object: {"transmitters": [{"center_freq": <MHz>, "bandwidth": <MHz>, '
    '"currently_active": <true|false>, "estimated_power": <dBm>}, ...]}. Only centre and '
    "bandwidth are scored; the other two fields are optional. An empty list reports a free band."
)
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["transmitters"],
    "properties": {"transmitters": {
        "type": "array", "maxItems": MAX_TRANSMITTERS,
        "items": {"type": "object", "required": ["center_freq", "bandwidth"], "properties": {
            "center_freq": {"type": "number"},
            "bandwidth": {"type": "number", "exclusiveMinimum": 0, "maximum": 168},
            "currently_active": {"type": "boolean"},
            "estimated_power": {"type": "number"}}}}},
}


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ActionError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def reported_intervals(action: Mapping[str, Any]) -> list[Interval]:
    """The occupied intervals an (already checked) action reports."""
    out = []
    for tx in action["transmitters"]:
        c, w = float(tx["center_freq"]), float(tx["bandwidth"])
        out.append((c - w / 2, c + w / 2))
    return out


class SpectrumEnv(EnvironmentBase):
    """Blind spectrum monitoring: 13 channels, three stages of activity, one scan per step."""

    name: ClassVar[str] = "blind_spectrum_monitoring"
    order_policy: ClassVar[OrderPolicy] = OrderPolicy.STAGE_PERMUTE
    best_reward: ClassVar[float] = 1.0
    min_reward: ClassVar[float] = 0.0
    max_steps: ClassVar[int] = 1
    instructions: ClassVar[str] = INSTRUCTIONS
    action_format: ClassVar[str] = ACTION_FORMAT
    action_schema: ClassVar[Mapping[str, Any]] = ACTION_SCHEMA

    def __init__(self, seed: int = 0, schedule: str = "default", max_invalid: int = 3,
                 generator: str = "authors") -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; known: {sorted(SCHEDULES)}")
        if generator not in GENERATORS:
            raise ValueError(f"unknown generator {generator!r}; known: {', '.join(GENERATORS)}")
        self.generator = generator
        sizes = SCHEDULES[schedule]
        ids = [f"scan-{i + 1:03d}" for i in range(sum(sizes))]
        sched: Schedule = build_schedule(schedule, sizes, VARIANTS, ids)
        super().__init__(seed, sched, max_invalid)
        self.channels = make_channels(random.Random(f"spectrum-geometry:{seed}"), generator)
        self.scans = {s.instance_id: s for s in make_scans(seed, sizes, ids, self.channels,
                                                            generator)}

    @property
    def truth(self) -> list[Interval]:
        """The scored occupancy: the union of every channel's interval."""
        return merge(ch.interval for ch in self.channels)

    def _params(self) -> dict[str, Any]:
        return {"band": list(BAND), "generator": self.generator,
                "channels": [[c.center, c.width] for c in self.channels]}

    def _observation(self, first: bool) -> str:
        assert self.current is not None
        scan = self.scans[self.current]
        minutes = 5 * scan.index
        stamp = f"2026-01-{1 + minutes // 1440:02d}T{minutes % 1440 // 60:02d}:{minutes % 60:02d}Z"
        lines = [f"Scan {scan.instance_id}: time {stamp} | sensor SEN-A | integration 100 ms | "
                 f"noise floor {scan.noise_floor:.1f} dBm",
                 f"Band: {BAND[0]:.1f}-{BAND[1]:.1f} MHz",
                 "Detected peaks (id | centre MHz | power dBm | width MHz):"]
        lines += [f"p{i + 1} | {p.freq:.1f} | {p.power:.1f} | {p.width:.1f}"
                  for i, p in enumerate(scan.peaks)] or ["(no peaks detected)"]
        lines.append("Report the transmitters occupying the band.")
        return "\n".join(lines)

    def _check(self, action: dict[str, Any]) -> None:
        txs = action.get("transmitters")
        if not isinstance(txs, list):
            raise ActionError('the action needs a "transmitters" list')
        if len(txs) > MAX_TRANSMITTERS:
            raise ActionError(f"at most {MAX_TRANSMITTERS} transmitters, got {len(txs)}")
        for n, tx in enumerate(txs):
            where = f"transmitters[{n}]"
            if not isinstance(tx, dict):
                raise ActionError(f"{where} must be an object")
            _number(tx.get("center_freq"), f"{where}.center_freq")
            width = _number(tx.get("bandwidth"), f"{where}.bandwidth")
            if not 0 < width <= BAND[1] - BAND[0]:
                raise ActionError(f"{where}.bandwidth must be in (0, 168] MHz, got {width:g}")

    def _apply(self, action: dict[str, Any]) -> Outcome:
        assert self.current is not None
        reward = available_iou(self.truth, reported_intervals(action))
        return Outcome(f"Scan {self.current} recorded.", True, reward, reward >= 0.999,
                       {"raw_metric": reward, "reported": len(action["transmitters"])})
