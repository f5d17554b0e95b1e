"""CL-Bench records (SPECS §5): the loader's errors, --allow-missing, the JSON shape of
``score clbench``, and the command's text and JSON output."""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.protocols.clbench.commands import add_score_arguments, score
from clstream.protocols.clbench.metrics import score_clbench
from clstream.protocols.clbench.records import load_clbench_records, records_from_rows


def task(name: str = "t", r_max: float = 1.0, n: int = 4, **extra: Any) -> dict[str, Any]:
    return {"kind": "task", "task": name, "r_max": r_max, "n_instances": n, **extra}


def inst(iid: str, reward: float, *, arm: str = "stateful", rollout: int = 0, pos: int = 1,
         stage: int = 0, name: str = "t", **extra: Any) -> dict[str, Any]:
    return {"kind": "instance", "task": name, "arm": arm, "rollout": rollout, "pos": pos,
            "instance_id": iid, "stage": stage, "reward": reward, **extra}


STAGES = {"a": 0, "b": 0, "c": 1, "d": 1}
STATELESS = {"a": 0.0, "b": 0.5, "c": 0.0, "d": 0.5}


def small(**task_extra: Any) -> list[dict[str, Any]]:
    """Task t: N 4, r_max 1, stages 0,0,1,1; rollout 0 in canonical order, rollout 1 permuted
    within each stage (b, a, d, c)."""
    rows = [task(**task_extra)]
    for pos, iid in enumerate("abcd", start=1):
        rows.append(inst(iid, STATELESS[iid], arm="stateless", pos=pos, stage=STAGES[iid]))
    r0 = {"a": 0.5, "b": 1.0, "c": 0.0, "d": 1.0}
    for pos, iid in enumerate("abcd", start=1):
        rows.append(inst(iid, r0[iid], pos=pos, stage=STAGES[iid], cost=0.25))
    r1 = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}
    for pos, iid in enumerate("badc", start=1):
        rows.append(inst(iid, r1[iid], rollout=1, pos=pos, stage=STAGES[iid], cost=0.5))
    return rows


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def load(rows: list[Any], **kw: Any) -> Any:
    return records_from_rows(enumerate(rows, start=1), source="recs.jsonl", **kw)


# ---------------------------------------------------------------- values and shape


def test_small_set_by_hand() -> None:
    out = score_clbench(small(s_ext=1.0))
    t = out["tasks"]["t"]
    # S_sl = 1. Rollout 0: S_sf 2.5, ghat 1.5/3 = 0.5; B = {a, c}: stab = .5 * (.25 - 0)/.75.
    # Rollout 1 (b, a, d, c): S_sf 3.5, ghat 2.5/3; B = {b, d}: stab = .5 * (.75 - .5)/.75.
    assert t["n_instances"] == 4 and t["rollouts"] == 2
    assert t["stateless_reward"] == 1.0
    assert t["reward"]["mean"] == 3.0 and t["reward"]["se"] == pytest.approx(0.5)
    assert t["gain"]["mean"] == 2.0 and t["gain"]["se"] == pytest.approx(0.5)
    assert t["normalized_gain"]["mean"] == pytest.approx((0.5 + 2.5 / 3) / 2)
    assert t["normalized_reward"]["mean"] == pytest.approx((1.5 / 3 + 2.5 / 3) / 2)
    stab0, stab1 = 0.5 * 0.25 / 0.75, 0.5 * 0.25 / 0.75
    plas0, plas1 = 0.5 - stab0, 2.5 / 3 - stab1
    assert t["stability"]["mean"] == pytest.approx((stab0 + stab1) / 2)
    assert t["plasticity"]["mean"] == pytest.approx((plas0 + plas1) / 2)
    assert t["plasticity"]["se"] == pytest.approx(abs(plas0 - plas1) / 2)
    assert t["cost"] == {"mean": pytest.approx(1.5), "se": pytest.approx(0.5)}
    agg = out["aggregate"]
    assert agg["normalized_gain"]["mean"] == t["normalized_gain"]["mean"]
    assert agg["normalized_gain"]["ci95"] == pytest.approx(1.96 * t["normalized_gain"]["se"])
    assert agg["stability"] == t["stability"]["mean"]
    assert agg["cost"] == pytest.approx(1.5)


def test_json_shape_is_exactly_the_specs() -> None:
    full = score_clbench(small(s_ext=1.0))
    assert set(full) == {"tasks", "aggregate"}
    assert set(full["tasks"]["t"]) == {
        "n_instances", "rollouts", "reward", "stateless_reward", "gain", "normalized_gain",
        "normalized_reward", "stability", "plasticity", "cost"}
    for key in ("reward", "gain", "normalized_gain", "normalized_reward", "stability",
                "plasticity", "cost"):
        assert set(full["tasks"]["t"][key]) == {"mean", "se"}
    assert set(full["aggregate"]) == {"normalized_gain", "normalized_reward", "stability",
                                      "plasticity", "cost"}
    assert set(full["aggregate"]["normalized_gain"]) == {"mean", "ci95"}
    assert set(full["aggregate"]["normalized_reward"]) == {"mean", "ci95"}
    # No s_ext, no cost: those keys are absent.
    bare = score_clbench([{k: v for k, v in r.items() if k != "cost"} for r in small()])
    assert "normalized_reward" not in bare["tasks"]["t"] and "cost" not in bare["tasks"]["t"]
    assert set(bare["aggregate"]) == {"normalized_gain", "stability", "plasticity"}
    json.dumps(full, allow_nan=False)


def test_line_order_does_not_matter() -> None:
    rows = small(s_ext=1.0)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert score_clbench(shuffled) == score_clbench(rows)


def test_one_rollout_has_no_standard_error_and_no_ci() -> None:
    rows = [r for r in small() if r.get("rollout") != 1]
    out = score_clbench(rows)
    assert out["tasks"]["t"]["reward"]["se"] is None
    assert out["aggregate"]["normalized_gain"]["ci95"] is None
    assert out["aggregate"]["normalized_gain"]["mean"] == pytest.approx(0.5)


def test_zero_headroom_is_null() -> None:
    rows = [task(n=1), inst("a", 1.0, arm="stateless"), inst("a", 1.0)]
    out = score_clbench(rows)
    assert out["tasks"]["t"]["normalized_gain"] == {"mean": None, "se": None}
    assert out["tasks"]["t"]["stability"] == {"mean": None, "se": None}
    assert out["aggregate"]["normalized_gain"] == {"mean": None, "ci95": None}
    assert out["aggregate"]["stability"] is None


def test_recurring_stage_label_through_records() -> None:
    # Labels 0,0,1,1,0,0: three stages. A reading by distinct label would give two.
    labels = [0, 0, 1, 1, 0, 0]
    rows = [task(n=6)]
    for pos, label in enumerate(labels, start=1):
        rows.append(inst(f"i{pos}", 0.0, arm="stateless", pos=pos, stage=label))
        rows.append(inst(f"i{pos}", 1.0 if pos in (1, 3, 5) else 0.0, pos=pos, stage=label))
    t = score_clbench(rows)["tasks"]["t"]
    # Gains only at B = {1, 3, 5}: all of ghat (= 0.5) is stability.
    assert t["stability"]["mean"] == pytest.approx(0.5)
    assert t["plasticity"]["mean"] == pytest.approx(0.0)


def test_costs_fall_back_to_tokens_and_units_do_not_mix() -> None:
    rows = [{k: v for k, v in r.items() if k != "cost"} for r in small()]
    rows = [dict(r, tokens=100) if r["kind"] == "instance" else r for r in rows]
    records = load(rows)
    assert records.tasks["t"].cost_unit == "tokens"
    assert score_clbench(records)["tasks"]["t"]["cost"]["mean"] == 400.0
    mixed = rows + [dict(r, task="u") for r in small()]
    out = score_clbench(load(mixed))
    assert "cost" in out["tasks"]["t"] and "cost" in out["tasks"]["u"]
    assert "cost" not in out["aggregate"]  # tokens and dollars are not summed


def test_t_multiplier_widens_the_interval() -> None:
    z = score_clbench(small())["aggregate"]["normalized_gain"]["ci95"]
    t = score_clbench(small(), t_multiplier=True)["aggregate"]["normalized_gain"]["ci95"]
    assert t / z == pytest.approx(12.706204736 / 1.96)  # R = 2: df 1


# ---------------------------------------------------------------- missing instances


def test_missing_instance_is_an_error_naming_it() -> None:
    rows = [r for r in small() if not (r.get("arm") == "stateless" and r["instance_id"] == "c")]
    with pytest.raises(DataError) as exc:
        load(rows)
    msg = str(exc.value)
    assert "'c'" in msg and "stateless arm" in msg and "field 'instance_id'" in msg
    assert msg.startswith("recs.jsonl, record line ") and "\n" not in msg
    rows = [r for r in small() if not (r.get("rollout") == 1 and r["instance_id"] == "b")]
    with pytest.raises(DataError, match="'b'.*stateful rollout 1"):
        load(rows)


def test_instance_in_neither_arm_is_an_error() -> None:
    rows = [task(n=5)] + small()[1:]
    with pytest.raises(DataError, match="declares 5 instances but its records name 4"):
        load(rows)
    records = load(rows, allow_missing=True)
    assert records.tasks["t"].n_unseen == 1 and records.n_missing == 1
    assert records.tasks["t"].n_instances == 4


def test_allow_missing_leaves_the_instance_out_of_both_arms() -> None:
    rows = [r for r in small(s_ext=1.0)
            if not (r.get("rollout") == 1 and r["instance_id"] == "d")]
    records = load(rows, allow_missing=True)
    t = records.tasks["t"]
    assert t.left_out == ["d"] and t.n_missing == 1 and t.n_instances == 3
    assert all("d" not in order for order in t.orders.values()) and "d" not in t.stateless
    # The same as a file that never had d (N 3; the reference scaled to the 3 scored).
    reduced = [r for r in small(s_ext=1.0) if r.get("instance_id") != "d"]
    reduced[0] = task(n=3, s_ext=0.75)
    for r in reduced[1:]:  # close the gap left by d in each order
        order = "bac" if r["rollout"] == 1 else "abc"
        r["pos"] = order.index(r["instance_id"]) + 1
    got, want = score_clbench(records), score_clbench(reduced)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def test_rollout_rule_leaves_the_incomplete_rollout_out_whole() -> None:
    rows = [r for r in small(s_ext=1.0)
            if not (r.get("rollout") == 1 and r["instance_id"] == "d")]
    records = load(rows, allow_missing=True, missing_rule="rollout")
    t = records.tasks["t"]
    assert t.rollouts_left_out == [1] and t.left_out == [] and t.rollouts == [0]
    assert t.n_instances == 4 and records.n_rollouts_left_out == 1
    # The same as a file that never had rollout 1.
    complete = [r for r in small(s_ext=1.0) if r.get("rollout") != 1 or r["arm"] != "stateful"]
    got, want = score_clbench(records), score_clbench(complete)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    # An instance missing from the stateless arm is still left out of both arms.
    rows = [r for r in small() if not (r.get("arm") == "stateless" and r["instance_id"] == "a")]
    t = load(rows, allow_missing=True, missing_rule="rollout").tasks["t"]
    assert t.left_out == ["a"] and t.rollouts_left_out == [] and t.rollouts == [0, 1]


def test_rollout_rule_with_no_complete_rollout_is_an_error() -> None:
    rows = [r for r in small() if not (r.get("arm") == "stateful" and r["instance_id"] == "c")]
    with pytest.raises(DataError, match="no stateful rollout holding all its instances"):
        load(rows, allow_missing=True, missing_rule="rollout")


def test_allow_missing_with_nothing_left_is_an_error() -> None:
    rows = [task(n=1), inst("a", 1.0)]
    with pytest.raises(DataError, match="no instance in both arms"):
        load(rows, allow_missing=True)


# ---------------------------------------------------------------- malformed records

def at(rows: list[Any], i: int, **changes: Any) -> list[Any]:
    """``rows`` with row i's fields changed (a value None drops the field)."""
    row = {k: v for k, v in {**rows[i], **changes}.items() if v is not None}
    return rows[:i] + [row] + rows[i + 1:]


BAD = [
    (lambda rows: rows + [inst("a", 1.0, name="nope")], "task", "'nope' has no task line"),
    (lambda rows: rows + [rows[5]], "instance_id", "duplicate record for instance 'a'"),
    (lambda rows: rows + [task()], "task", "a second task line"),
    (lambda rows: at(rows, 0, r_max="1"), "r_max", "must be a number"),
    (lambda rows: at(rows, 0, r_max=math.nan), "r_max", "finite"),
    (lambda rows: at(rows, 0, n_instances=0), "n_instances", ">= 1"),
    (lambda rows: at(rows, 0, s_ext="x"), "s_ext", "must be a number"),
    (lambda rows: at(rows, 5, reward=math.nan), "reward", "finite"),
    (lambda rows: at(rows, 5, reward=None), "reward", "missing"),
    (lambda rows: at(rows, 5, reward="1"), "reward", "must be a number"),
    (lambda rows: at(rows, 5, rollout=True), "rollout", "integer"),
    (lambda rows: at(rows, 5, rollout=-1), "rollout", ">= 0"),
    (lambda rows: at(rows, 5, stage="x"), "stage", "integer"),
    (lambda rows: at(rows, 5, arm="both"), "arm", "stateful' or 'stateless"),
    (lambda rows: at(rows, 5, instance_id=""), "instance_id", "non-empty"),
    (lambda rows: at(rows, 5, cost=-1), "cost", ">= 0"),
    (lambda rows: at(rows, 5, tokens=1.5), "tokens", "integer"),
    (lambda rows: at(rows, 5, steps="3"), "steps", "integer"),
    (lambda rows: at(rows, 1, rollout=2), "rollout",
     "must be 0 in the stateless arm"),
    (lambda rows: at(rows, 5, pos=5), "pos", "<= n_instances 4"),
    (lambda rows: at(rows, 6, pos=1), "pos", "is taken"),
    (lambda rows: at(rows, 5, stage=1), "stage", "is in stage 0"),
    (lambda rows: rows + [inst("e", 1.0, rollout=2)], "n_instances", "declares 4"),
    (lambda rows: at(rows, 5, cost=None), "cost",
     "other stateful records"),
    (lambda rows: rows + ["text"], None, "must be a JSON object"),
    (lambda rows: rows + [{"kind": "run"}], "kind", "'task' or 'instance'"),
    (lambda rows: rows + [task(name="empty")], "task", "'empty' has no stateful records"),
    (lambda rows: rows[1:], "task", "'t' has no task line"),
    (lambda rows: at(rows, 0, r_max=0), "r_max", "must be > 0"),
    (lambda rows: at(rows, 0, r_max=-1.0), "r_max", "must be > 0"),
    (lambda rows: at(rows, 0, s_ext=4.0), "s_ext", "below the ceiling"),
    (lambda rows: at(rows, 0, reward_min=1.0, reward_max=0.0), "reward_max",
     "above reward_min"),
    (lambda rows: at(rows, 0, reward_max=0.75), "reward", "outside task 't''s range"),
    (lambda rows: at(rows, 0, reward_min=0.25), "reward", "outside task 't''s range"),
    # stateless mean 0.25 above r_max 0.2: the normalized gain would flip its sign
    (lambda rows: at(rows, 0, r_max=0.2), "r_max", "above r_max 0.2"),
]


@pytest.mark.parametrize(("edit", "field", "text"), BAD)
def test_malformed_records_are_one_line_errors(edit: Any, field: str | None, text: str,
                                               tmp_path: Path) -> None:
    rows = edit(small())
    with pytest.raises(DataError) as exc:
        load(rows)
    msg = str(exc.value)
    assert text in msg and "\n" not in msg
    assert exc.value.field == field
    assert exc.value.record is None or str(exc.value.record).startswith("line ")
    if not any(isinstance(v, float) and math.isnan(v) for r in rows if isinstance(r, dict)
               for v in r.values()):
        path = write(tmp_path / "r.jsonl", rows)
        with pytest.raises(DataError) as again:
            load_clbench_records(path)
        assert str(again.value).startswith(str(path)) and text in str(again.value)


def test_nan_token_in_a_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in small())
    path.write_text(text.replace('"reward": 0.5', '"reward": NaN', 1), encoding="utf-8")
    with pytest.raises(DataError, match="line .*NaN"):
        load_clbench_records(path)


def test_no_task_lines() -> None:
    with pytest.raises(DataError, match="no task lines"):
        load([])


# ---------------------------------------------------------------- the command


def run_score(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    p = argparse.ArgumentParser()
    add_score_arguments(p)
    code = score(p.parse_args(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_score_command_json_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    path = write(tmp_path / "r.jsonl", small(s_ext=1.0))
    code, out, err = run_score([str(path), "--json"], capsys)
    assert code == 0 and err == ""
    assert json.loads(out) == json.loads(json.dumps(score_clbench(small(s_ext=1.0))))
    code, out, _ = run_score([str(path)], capsys)
    assert code == 0
    assert "task t  (N 4, R 2; ± SE)" in out
    assert "normalized gain" in out and "stability" in out and "(cost)" in out
    assert "aggregate over 1 tasks  (± 95% CI, multiplier 1.960)" in out
    _, out, _ = run_score([str(path), "--t-multiplier"], capsys)
    assert "multiplier 12.706" in out


def test_score_command_allow_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    rows = [r for r in small() if not (r.get("arm") == "stateless" and r["instance_id"] == "a")]
    path = write(tmp_path / "r.jsonl", rows)
    with pytest.raises(DataError, match="'a'"):
        run_score([str(path), "--json"], capsys)
    code, out, err = run_score([str(path), "--json", "--allow-missing"], capsys)
    assert code == 0 and json.loads(out)["tasks"]["t"]["n_instances"] == 3
    assert "left out 1 instance missing from an arm (t: 1 of 4 declared)" in err
    rows = [r for r in small() if not (r.get("rollout") == 1 and r["instance_id"] == "b")]
    path = write(tmp_path / "r2.jsonl", rows)
    code, out, err = run_score(
        [str(path), "--json", "--allow-missing", "--missing-rule", "rollout"], capsys)
    task_json = json.loads(out)["tasks"]["t"]
    assert code == 0 and task_json["n_instances"] == 4 and task_json["rollouts"] == 1
    assert "left out 1 incomplete stateful rollout (t: 1)" in err
