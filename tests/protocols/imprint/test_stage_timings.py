"""Stage timings of ``generate imprint`` (docs/imprint.md §4.8): nothing is recorded outside
``generate``, a stage's seconds leave out the stages inside it, and ``generate`` writes one row
per stage beside a card that stays byte-identical."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.protocols.imprint.stage_timings import TIMINGS_NAME, recording, timed


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_nothing_is_recorded_outside_a_recording() -> None:
    with recording() as timings:
        pass
    with timed("writer", 3) as row:
        row.kept = 2
    assert timings.rows == []


def test_inner_stages_are_left_out_of_the_outer_one_and_grouped_by_name() -> None:
    with recording() as timings:
        with timed("template_build", 0):
            with timed("writer", 4) as writer:
                _spin(0.05)
                writer.kept = 3
        with timed("golden_subset", 5, group=True):
            with timed("filter_answers", 5):
                _spin(0.05)
    rows = {r.stage: r for r in timings.rows}
    assert list(rows) == ["template_build", "writer", "golden_subset",
                          "golden_subset/filter_answers"]
    assert rows["writer"].cpu_s >= 0.05 and rows["writer"].kept == 3
    assert rows["template_build"].cpu_s < rows["writer"].cpu_s
    assert rows["golden_subset"].cpu_s < rows["golden_subset/filter_answers"].cpu_s


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
