"""Stage timings of ``generate imprint`` (docs/imprint.md §4.8): nothing is recorded outside
``generate``, a stage's seconds leave out the stages inside it, and ``generate`` writes one row
per stage beside a card that stays byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.protocols.imprint import stage_timings
from clstream.protocols.imprint.stage_timings import TIMINGS_NAME, recording, timed


class _Clock:
    """A process clock that moves only when told to, so the accounting is checked exactly."""

    def __init__(self) -> None:
        self.now = 0.0

    def process_time(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now


def test_nothing_is_recorded_outside_a_recording() -> None:
    with recording() as timings:
        pass
    with timed("writer", 3) as row:
        row.kept = 2
    assert timings.rows == []


def test_inner_stages_are_left_out_of_the_outer_one_and_grouped_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(stage_timings, "time", clock)
    with recording() as timings:
        with timed("template_build", 0):
            clock.now += 1.0
            with timed("writer", 4) as writer:
                clock.now += 4.0
                writer.kept = 3
        with timed("golden_subset", 5, group=True):
            with timed("filter_answers", 5):
                clock.now += 2.0
    rows = {r.stage: r for r in timings.rows}
    assert list(rows) == ["template_build", "writer", "golden_subset",
                          "golden_subset/filter_answers"]
    assert {stage: (r.cpu_s, r.wall_s) for stage, r in rows.items()} == {
        "template_build": (1.0, 1.0), "writer": (4.0, 4.0), "golden_subset": (0.0, 0.0),
        "golden_subset/filter_answers": (2.0, 2.0)}
    assert rows["writer"].kept == 3


def _generate(out: Path, setting: str) -> int:
    return main(["generate", "imprint", "--setting", setting, "--size", "small", "--seed", "2",
                 "--model", "builtin", "--filter", "--out", str(out)])


STAGES = {
    "news": ["template_build", "writer", "filter_answers", "filter_verdicts"],
    "persona": ["template_build", "writer", "forced_commit", "option_bias", "fact_oracle",
                "universality", "filter_answers", "filter_verdicts"],
    "code": ["library_wheels", "template_build", "writer", "validator", "golden_subset",
             "golden_subset/filter_answers", "golden_subset/filter_verdicts",
             "filter_answers", "filter_verdicts"],
}


@pytest.mark.parametrize("setting", sorted(STAGES))
def test_generate_writes_a_row_per_stage_beside_an_unchanged_card(tmp_path: Path,
                                                                  setting: str) -> None:
    assert _generate(tmp_path / "a", setting) == 0
    assert _generate(tmp_path / "b", setting) == 0
    timings = json.loads((tmp_path / "a" / TIMINGS_NAME).read_text())
    assert timings["setting"] == setting and timings["model"] == "builtin"
    rows = timings["stages"]
    assert [r["stage"] for r in rows] == STAGES[setting]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert rows[-1]["kept"] == manifest["counts"]["items"]
    assert all(r["cpu_s"] >= 0 and r["items"] >= (r["kept"] or 0) for r in rows)
    for name in ("manifest.json", "items.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
