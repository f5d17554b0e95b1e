"""Sales workspace: programs run in the sandbox over the workspace, their files persist in
the stateful run, ``reset_to`` wipes them, snapshots carry them; the builtin policy gains
through its persisted program and through its notes."""

from __future__ import annotations

import sys

import pytest

from clstream.core.environment import EnvironmentStateError, Turn, merge_notes
from clstream.judges.isolation import IsolationUnavailable, detect
from clstream.protocols.clbench.envs.sales import environment as sales_environment
from clstream.protocols.clbench.envs.sales.environment import WORKSPACE_CAP, SalesEnv
from clstream.protocols.clbench.envs.sales.policy import SalesForecaster
from clstream.protocols.clbench.policies import (
    play_instance,
    play_stateful,
    play_stateless,
    play_with_notes,
)

FOUND = detect() if sys.platform == "linux" else "the sandbox relies on Linux"
# The revealed actuals (feedback=rich) are what the policy's panel and notes pool on the short
# schedule, where each store is shown once; the paper's feedback (the composite score) leaves
# it the store-years it was shown, enough on the default schedule only.
RICH = {"feedback": "rich"}


def started(schedule: str = "short", instance: str = "year-2027") -> SalesEnv:
    env = SalesEnv(0, schedule)
    env.reset()
    env.begin(instance)
    return env


def submit_all(env: SalesEnv, instance: str) -> None:
    cells = [{"locality": c, "furniture_name": n, "year": y, "items_sold": a}
             for (c, n, y), a in env.actuals(instance).items()]
    assert env.step({"tool": "submit", "predictions": cells}).instance_complete


@pytest.mark.skipif(isinstance(FOUND, str), reason="the sandbox needs bubblewrap")
def test_a_program_reads_data_and_its_files_persist_to_the_next_year() -> None:
    env = started()
    code = ("import glob, json\n"
            "rows = open(sorted(glob.glob('data/sales_*.csv'))[0]).read().splitlines()\n"
            "open('model.bin', 'wb').write(bytes([len(rows) % 256, 0, 255]))\n"
            "print('rows', len(rows))")
    ran = env.step({"tool": "run_python", "code": code})
    assert ran.valid and ran.feedback.startswith("Ran the snippet: ok")
    assert "rows 1" in ran.feedback and sorted(env.own_files()) == ["model.bin"]
    submit_all(env, "year-2027")
    query = env.begin("year-2028")
    assert "Your own files: model.bin" in query.observation
    assert "numpy" in query.observation  # what programs may import is said
    read = env.step({"tool": "read_file", "path": "model.bin"})
    assert "binary file of 3 bytes" in read.feedback
    env.step({"tool": "write_file", "path": "show.py",
              "content": "print(list(open('model.bin', 'rb').read()))"})
    shown = env.step({"tool": "run_python", "path": "show.py"})
    assert shown.feedback.split("stdout:\n")[1].startswith("[")
    env.reset_to("year-2028")
    env.begin("year-2028")
    assert env.own_files() == {} and sorted(env.files)[0].startswith("data/")


@pytest.mark.skipif(isinstance(FOUND, str), reason="the sandbox needs bubblewrap")
def test_data_stays_the_environments_and_long_output_is_cut() -> None:
    env = started()
    ran = env.step({"tool": "run_python",
                    "code": "import glob\nfor p in glob.glob('data/*'): open(p, 'w').write('x')\n"
                            "print('y' * 10000)"})
    assert "cut at 4000 of" in ran.feedback
    assert env.files["data/furniture.json"].startswith(b"[")  # the export is unchanged


@pytest.mark.skipif(isinstance(FOUND, str), reason="the sandbox needs bubblewrap")
def test_a_stopped_program_leaves_the_workspace_as_it_was(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(sales_environment, "PROGRAM_TIMEOUT_S", 1.0)
    env = started()
    env.step({"tool": "write_file", "path": "keep.txt", "content": "before"})
    ran = env.step({"tool": "run_python",
                    "code": "open('keep.txt', 'w').write('after')\nwhile True: pass"})
    assert "timeout" in ran.feedback and "discarded" in ran.feedback
    assert env.own_files() == {"keep.txt": b"before"}


def test_run_python_needs_one_of_path_or_code() -> None:
    env = started()
    for action in ({"tool": "run_python"}, {"tool": "run_python", "path": "a.py", "code": "1"}):
        res = env.step(action)
        assert not res.valid and "run_python needs" in res.feedback
    missing = env.step({"tool": "run_python", "path": "nothing.py"})
    assert missing.valid and missing.feedback.startswith("No file")


def test_without_a_sandbox_programs_are_refused_in_feedback(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise IsolationUnavailable("refusing to run model-written code: no bubblewrap")
    monkeypatch.setattr(sales_environment, "run_in_workspace", refuse)
    env = started()
    res = env.step({"tool": "run_python", "code": "print(1)"})
    assert res.valid and res.feedback.startswith("Programs cannot run here")


def test_snapshot_round_trips_text_and_binary_files() -> None:
    env = started()
    env.step({"tool": "write_file", "path": "notes/a.txt", "content": "panel"})
    env.files["model.bin"] = b"\x00\xff\x10"
    submit_all(env, "year-2027")
    snap = env.snapshot()
    assert snap["state"]["files"] == {"notes/a.txt": "panel"}
    assert snap["state"]["binary_files"] == {"model.bin": "AP8Q"}
    other = SalesEnv(0, "short")
    other.restore(snap)
    other.begin("year-2028")
    assert other.own_files() == {"notes/a.txt": b"panel", "model.bin": b"\x00\xff\x10"}
    for bad in ({"files": {"../up": "x"}}, {"binary_files": {"a": "not base64!"}},
                {"files": {"big": "x" * (WORKSPACE_CAP + 1)}}, {"files": {"data/x": "y"}}):
        with pytest.raises(EnvironmentStateError):
            SalesEnv(0, "short").restore({**snap, "state": bad})


@pytest.mark.parametrize(("schedule", "feedback"),
                         [("short", "rich"), ("default", "paper"), ("default", "rich")])
def test_builtin_policy_gains_through_its_program_and_its_notes(schedule: str,
                                                                feedback: str) -> None:
    env = SalesEnv(0, schedule, options={"feedback": feedback})
    policy = SalesForecaster()
    stateless = play_stateless(env, policy)
    n, s_sl = len(stateless), sum(r.reward for r in stateless)
    for rollout in (0, 1):
        for play in (play_stateful, play_with_notes):
            runs = play(env, policy, rollout)
            gain = (sum(r.reward for r in runs) - s_sl) / (n * env.r_max - s_sl)
            assert gain > 0.1, (schedule, rollout, play.__name__, gain)


@pytest.mark.skipif(isinstance(FOUND, str), reason="the sandbox needs bubblewrap")
def test_the_program_and_its_panel_persist_in_the_stateful_workspace() -> None:
    env = SalesEnv(0, "short", options=RICH)
    play_stateful(env, SalesForecaster())
    own = env.own_files()
    assert {"forecast.py", "task.json", "panel/actuals_2027.csv", "panel/actuals_2028.csv",
            "panel/export_sales_sf_2026.csv", "panel/export_sales_chi_2028.csv"} <= set(own)
    paper = SalesEnv(0, "short")  # the composite score alone reveals no actuals to keep
    play_stateful(paper, SalesForecaster())
    assert not any(p.startswith("panel/actuals") for p in paper.own_files())
    assert "panel/export_sales_chi_2028.csv" in paper.own_files()
    stateless = SalesEnv(0, "short", options=RICH)
    play_stateless(stateless, SalesForecaster())
    assert not any(p.startswith("panel/actuals") for p in stateless.own_files())


def test_without_a_sandbox_the_policy_still_gains(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise IsolationUnavailable("refusing to run model-written code: no bubblewrap")
    monkeypatch.setattr(sales_environment, "run_in_workspace", refuse)
    env, policy = SalesEnv(0, "short", options=RICH), SalesForecaster()
    s_sl = sum(r.reward for r in play_stateless(env, policy))
    for play in (play_stateful, play_with_notes):
        assert sum(r.reward for r in play(env, policy, 0)) > s_sl + 0.1


@pytest.mark.parametrize("feedback", ["paper", "rich"])
def test_notes_carry_actuals_and_growth_and_merge_idempotently(feedback: str) -> None:
    env = SalesEnv(0, "short", options={"feedback": feedback})
    policy = SalesForecaster()
    turns: list[Turn] = []
    env.reset()
    for instance_id in env.schedule.instance_ids:
        play_instance(env, policy, instance_id, turns)
    notes = policy.notes(turns)
    subjects = [n.split(":", 1)[0] for n in notes]
    assert len(subjects) == len(set(subjects))
    if feedback == "paper":  # no actuals are revealed, so none are noted
        assert not any(subject.startswith("sales actuals") for subject in subjects)
    else:
        assert "sales actuals 2027" in subjects and "sales actuals 2029" in subjects
        actuals = next(n for n in notes if n.startswith("sales actuals 2027"))
        assert "San Francisco |" in actuals and actuals.count(";") == 14
        if not isinstance(FOUND, str):  # the program ran and printed its growth estimates
            growth = [n for n in notes if n.startswith("sales growth ")]
            assert len(growth) == 5 and all("estimated in 2029" in n for n in growth)
    for note in notes:
        assert policy.merge(note, note) == note
        assert policy.merge(policy.merge(note, note), note) == note
    assert merge_notes(policy, [*notes, *notes]) == notes
