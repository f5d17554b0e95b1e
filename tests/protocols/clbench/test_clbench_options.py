"""``--env-option``: named environment options are parsed per task, refused in one line when
unknown, and recorded in the run (parameters, dataset hash, run id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.core.errors import SpecError
from clstream.protocols.clbench.options import parse_env_options
from clstream.store.db import ResultsStore

DB, SALES = "database_exploration", "sales_prediction"


def test_an_option_without_a_task_applies_to_every_task_that_has_it() -> None:
    tasks = [DB, "exploitable_poker", SALES]
    assert parse_env_options(["feedback=rich"], tasks) == {DB: {"feedback": "rich"},
                                                           SALES: {"feedback": "rich"}}
    assert parse_env_options([f"{DB}:size=paper", f"{DB}:notice=on"], tasks) == {
        DB: {"size": "paper", "notice": "on"}}
    assert parse_env_options(None, tasks) == {}


@pytest.mark.parametrize(("given", "words"), [
    (["feedback"], "expected [TASK:]NAME=VALUE"),
    (["colour=red"], "no task of this run has an option 'colour'"),
    ([f"{SALES}:size=paper"], "no task of this run has an option 'size'"),
    (["exploitable_poker:feedback=rich"], "'exploitable_poker' is not a task of this run"),
    (["feedback=loud"], "option feedback must be one of paper, rich, got 'loud'"),
    ([f"{DB}:notice=on", "notice=off"], "option notice given twice"),
])
def test_bad_options_are_usage_errors(given: list[str], words: str) -> None:
    with pytest.raises(SpecError, match="flag --env-option") as err:
        parse_env_options(given, [DB, SALES])
    assert words in str(err.value)


def _argv(out: Path, *extra: str) -> list[str]:
    return ["run", "clbench", "--task", DB, "--schedule", "short", "--rollouts", "1",
            "--system", "memory-free", "--out", str(out), "--no-progress", *extra]


def test_options_are_recorded_in_the_run_and_change_its_id(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(_argv(out)) == 0
    assert main(_argv(out, "--env-option", "feedback=rich")) == 0
    with ResultsStore(str(out)) as store:
        runs = store.runs("clbench")
        assert len({r.run_id for r in runs}) == 2
        by_options = {json.dumps(r.info.get("env_options")): r for r in runs}
        assert set(by_options) == {"null", json.dumps({DB: {"feedback": "rich"}})}
        for key, run in by_options.items():
            view = store.get_dataset(run.dataset_sha256)[1]
            options = view["tasks"][DB]["params"]["options"]
            assert options == {"feedback": "paper" if key == "null" else "rich",
                               "notice": "off", "size": "small"}
    capsys.readouterr()
    assert main(_argv(tmp_path / "other", "--env-option", f"{DB}:size=huge")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--env-option" in err[0] and "size" in err[0]
    assert not (tmp_path / "other").exists()


def test_generate_writes_the_options_in_force(tmp_path: Path) -> None:
    out = tmp_path / "materials"
    assert main(["generate", "clbench", "--task", DB, "--schedule", "short", "--out", str(out),
                 "--env-option", "notice=on"]) == 0
    schedule = json.loads((out / DB / "schedule.json").read_text())
    assert schedule["params"]["options"] == {"feedback": "paper", "notice": "on",
                                             "size": "small"}
