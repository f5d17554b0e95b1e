"""Blind spectrum monitoring: generator, reward, stage activity, the stateless arm's state."""

from __future__ import annotations

import pytest

from clstream.protocols.clbench.envs.spectrum.environment import (
    BAND,
    SpectrumEnv,
    available_iou,
    complement,
    measure,
    merge,
)


def test_same_seed_same_scans_other_seed_other_scans() -> None:
    a, b, c = SpectrumEnv(5), SpectrumEnv(5), SpectrumEnv(6)
    assert a.channels == b.channels and a.scans == b.scans
    assert a.channels == c.channels and a.scans != c.scans  # the authors' geometry is fixed
    varied = SpectrumEnv(5, generator="varied"), SpectrumEnv(6, generator="varied")
    assert varied[0].channels != varied[1].channels
    for env in (a, b):
        env.reset()
    assert a.begin("scan-042").observation == b.begin("scan-042").observation


def test_thirteen_channels_on_a_grid() -> None:
    env = SpectrumEnv(2)
    wide = [c for c in env.channels if c.kind == "wide"]
    narrow = [c for c in env.channels if c.kind == "narrow"]
    assert len(wide) == 7 and len(narrow) == 6
    assert len({c.width for c in wide}) == 1 and 12 <= wide[0].width <= 16
    assert all(4 <= c.width <= 6 for c in narrow)
    intervals = sorted(c.interval for c in env.channels)
    assert all(a[1] <= b[0] for a, b in zip(intervals, intervals[1:], strict=False))  # disjoint
    assert BAND[0] <= intervals[0][0] and intervals[-1][1] <= BAND[1]


def test_available_iou_on_a_tiny_band() -> None:
    band = (0.0, 10.0)
    # free truth [0,2]+[4,10] = 8 MHz; free report [0,2]+[3,10] = 9 MHz; overlap 8
    assert available_iou([(2, 4)], [(2, 3)], band) == pytest.approx(8 / 9)
    assert available_iou([(2, 4)], [], band) == pytest.approx(8 / 10)
    assert available_iou([(2, 4)], [(2, 4)], band) == 1.0
    assert available_iou([(2, 4)], [(-5, 15)], band) == 0.0  # reports the whole band busy
    assert available_iou([(0, 10)], [(0, 10)], band) == 1.0  # nothing free on either side
    assert merge([(3, 5), (1, 4), (8, 12)], band) == [(1, 5), (8, 10)]
    assert measure(complement([(1, 5), (8, 10)], band)) == pytest.approx(4.0)


def test_reward_of_hand_made_reports() -> None:
    env = SpectrumEnv(0, "short")
    env.reset()
    env.begin("scan-001")
    perfect = {"transmitters": [{"center_freq": c.center, "bandwidth": c.width}
                                for c in env.channels]}
    res = env.step(perfect)
    assert res.instance_complete and res.reward == pytest.approx(1.0) and res.success
    assert res.feedback == "Scan scan-001 recorded."
    env.begin("scan-002")
    res = env.step({"transmitters": []})
    free = measure(complement(env.truth))
    assert res.reward == pytest.approx(free / (BAND[1] - BAND[0]))


def test_malformed_reports_name_the_problem() -> None:
    env = SpectrumEnv(0, "short")
    env.reset()
    env.begin("scan-001")
    res = env.step({"transmitters": [{"center_freq": 50, "bandwidth": -3}]})
    assert not res.valid and "bandwidth" in res.feedback and not res.instance_complete
    res = env.step({"transmitters": [{"center_freq": "high", "bandwidth": 3}]})
    assert not res.valid and "center_freq" in res.feedback
    res = env.step({"transmitters": [{"center_freq": 50.0, "bandwidth": 3.0}]})
    assert res.instance_complete and res.valid and res.reward is not None and res.reward > 0


def test_activity_grows_by_stage() -> None:
    env = SpectrumEnv(1)
    stages = env.schedule.stages
    narrow = {i for i, c in enumerate(env.channels) if c.kind == "narrow"}
    seen = [set().union(*(env.scans[i].active for i in s.instance_ids)) for s in stages]
    mean_active = [sum(len(env.scans[i].active) for i in s.instance_ids) / 30 for s in stages]
    assert mean_active[0] < mean_active[1] < mean_active[2]
    assert seen[2] == set(range(13))  # every channel wakes up in the last stage
    narrow_hits = [sum(len(set(env.scans[i].active) & narrow) for i in s.instance_ids) for s in stages]
    assert narrow_hits[0] < narrow_hits[1] < narrow_hits[2]


def test_reset_to_gives_the_stage_state_of_the_stateful_run() -> None:
    stateful = SpectrumEnv(4)
    stateful.reset()
    for instance_id in stateful.schedule.instance_ids[:60]:
        stateful.begin(instance_id)
        stateful.step({"transmitters": []})
    in_run = stateful.begin("scan-061")
    single = SpectrumEnv(4)
    single.reset_to("scan-061")
    alone = single.begin("scan-061")
    assert alone.stage == in_run.stage == 2 and alone.variant == "full_grid_active"
    assert alone.observation == in_run.observation
