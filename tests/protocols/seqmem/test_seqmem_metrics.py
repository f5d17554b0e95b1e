"""SeqMem-Eval metrics: hand-computed cases, validation, and an independent re-implementation."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.core.jsonio import iter_json_lines
from clstream.protocols.seqmem.metrics import (
    bwt,
    forgetting,
    forgetting_by_horizon,
    holdout_acc,
    holdout_curve,
    iv,
    load_seqmem_records,
    mer,
    online_acc,
    online_curve,
    ped,
    r_min,
    records_from_rows,
    score_seqmem,
    trend_ho,
)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------- hand-computed cases


def test_online_curve_and_trajectory_metrics_by_hand() -> None:
    a = [1, 0, 0, 1, 1]
    # Abar: 1, 1/2, 1/3, 2/4, 3/5
    assert online_curve(a) == pytest.approx([1.0, 0.5, 1 / 3, 0.5, 0.6])
    assert online_acc(a) == pytest.approx(0.6)
    assert ped(a) == pytest.approx(1.0 - 0.6)
    assert mer(a) == pytest.approx(0.6 - 1 / 3)
    assert r_min(a) == pytest.approx(3 / 5)


def test_r_min_takes_the_first_of_tied_minima() -> None:
    # Abar: 0, 0, 1/3, 1/4 ... minimum 0 first reached at tau = 1
    assert r_min([0, 0, 1, 0]) == pytest.approx(1 / 4)
    # Abar: 1, 1/2, 1/3, 2/4, 2/5, 2/6: 1/3 at tau 3 and 2/6 at tau 6 tie exactly
    assert r_min([1, 0, 0, 1, 0, 0]) == pytest.approx(3 / 6)


def test_all_correct_stream_has_no_degradation() -> None:
    a = [1, 1, 1, 1]
    assert (online_acc(a), ped(a), mer(a), r_min(a)) == (1.0, 0.0, 0.0, 0.25)


def test_holdout_curve_acc_and_trend_by_hand() -> None:
    hold = {0: {"a": 0, "b": 0}, 2: {"a": 1, "b": 0}, 4: {"a": 1, "b": 1}}
    curve = holdout_curve(hold)
    assert curve == {0: 0.0, 2: 0.5, 4: 1.0}
    assert holdout_acc(curve) == 1.0
    # points (0.5, 0.5), (1.0, 1.0): slope 1; checkpoint 0 is not fitted
    assert trend_ho(curve, 4) == pytest.approx(1.0)
    assert trend_ho({0: 0.0, 4: 1.0}, 4) is None


def test_bwt_iv_and_forgetting_by_hand() -> None:
    a = [0, 1, 1, 0]
    retro = {1: {1: 1, 2: 1, 3: 0}, 2: {1: 0, 2: 0}}
    # BWT(1) = mean(1-0, 1-1, 0-1) = 0 ; BWT(2) = mean(0-0, 0-1) = -0.5
    assert bwt(a, retro[1]) == pytest.approx(0.0)
    assert iv(a, retro) == pytest.approx(0.0)
    assert bwt(a, retro[2]) == pytest.approx(-0.5)
    # F(1): tau1 max(0,1)-1 = 0; tau2 max(1,1)-1 = 0; tau3 max(1,0)-0 = 1 -> 1/3
    assert forgetting(a, retro, 1) == pytest.approx(1 / 3)
    # F(2): tau1 max(0,1,0)-0 = 1; tau2 max(1,1,0)-0 = 1 -> 1
    assert forgetting(a, retro, 2) == pytest.approx(1.0)


def test_forgetting_skips_horizons_where_tau_was_not_reevaluated() -> None:
    a = [0, 0, 0, 0, 0]
    retro = {1: {2: 1}, 2: {1: 0, 2: 0}}
    # tau 1 has no horizon-1 record: max over {A(1)=0, retro2=0} - 0 = 0
    # tau 2: max(0, 1, 0) - 0 = 1
    assert forgetting(a, retro, 2) == pytest.approx(0.5)


def test_score_seqmem_full_json_from_file(tmp_path: Path) -> None:
    rows = [{"kind": "online", "tau": t, "correct": c} for t, c in enumerate([0, 1, 1, 0], 1)]
    rows += [
        {"kind": "retro", "tau": 1, "horizon": 1, "correct": 1},
        {"kind": "retro", "tau": 2, "horizon": 1, "correct": 1},
        {"kind": "retro", "tau": 3, "horizon": 1, "correct": 0},
        {"kind": "retro", "tau": 1, "horizon": 2, "correct": 0},
        {"kind": "retro", "tau": 2, "horizon": 2, "correct": 0},
        {"kind": "holdout", "checkpoint": 0, "item": "h1", "correct": 0},
        {"kind": "holdout", "checkpoint": 2, "item": "h1", "correct": 1},
        {"kind": "holdout", "checkpoint": 4, "item": "h1", "correct": 1, "output": "kept"},
    ]
    random.Random(3).shuffle(rows)
    out = score_seqmem(load_seqmem_records(write_jsonl(tmp_path / "r.jsonl", rows)))
    assert list(out) == [
        "online_acc",
        "ped",
        "mer",
        "r_min",
        "holdout_acc",
        "trend_ho",
        "bwt",
        "forgetting",
        "iv",
    ]
    assert out["online_acc"] == pytest.approx(0.5)
    assert out["ped"] == pytest.approx(2 / 3 - 0.5)
    assert out["mer"] == pytest.approx(0.5)
    assert out["r_min"] == pytest.approx(0.25)
    assert out["holdout_acc"] == 1.0
    assert out["trend_ho"] == pytest.approx(0.0)
    assert out["bwt"] == pytest.approx({"1": 0.0, "2": -0.5})
    assert out["forgetting"] == pytest.approx({"1": 1 / 3, "2": 1.0})
    assert out["iv"] == pytest.approx(0.0)
    json.dumps(out)


def test_score_keys_present_only_when_their_records_exist(tmp_path: Path) -> None:
    rows = [{"kind": "online", "tau": t, "correct": 1} for t in range(1, 4)]
    assert list(score_seqmem(rows)) == ["online_acc", "ped", "mer", "r_min"]
    rows.append({"kind": "holdout", "checkpoint": 3, "item": "x", "correct": 1})
    rows.append({"kind": "retro", "tau": 1, "horizon": 2, "correct": 1})
    out = score_seqmem(rows)
    assert "trend_ho" not in out and "iv" not in out
    assert out["bwt"] == {"2": 0.0}


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("rows", "field", "needle"),
    [
        ([{"kind": "online", "tau": 1, "correct": 2}], "correct", "0 or 1"),
        ([{"kind": "online", "tau": "1", "correct": 1}], "tau", "integer"),
        ([{"kind": "online", "tau": 0, "correct": 1}], "tau", ">= 1"),
        ([{"kind": "online", "correct": 1}], "tau", "missing"),
        ([{"kind": "offline", "tau": 1, "correct": 1}], "kind", "must be"),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "online", "tau": 1, "correct": 0},
            ],
            "tau",
            "duplicate",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "online", "tau": 3, "correct": 0},
            ],
            "tau",
            "tau 2 is missing",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "holdout", "checkpoint": 0, "item": "", "correct": 1},
            ],
            "item",
            "non-empty",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "holdout", "checkpoint": 0, "item": "a", "correct": 1},
                {"kind": "holdout", "checkpoint": 0, "item": "a", "correct": 0},
            ],
            "item",
            "duplicate",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "holdout", "checkpoint": 2, "item": "a", "correct": 1},
            ],
            "checkpoint",
            "exceeds",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "online", "tau": 2, "correct": 1},
                {"kind": "holdout", "checkpoint": 0, "item": "a", "correct": 1},
                {"kind": "holdout", "checkpoint": 1, "item": "b", "correct": 1},
            ],
            "item",
            "same items",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "online", "tau": 2, "correct": 1},
                {"kind": "retro", "tau": 2, "horizon": 1, "correct": 1},
            ],
            "horizon",
            "exceeds",
        ),
        (
            [
                {"kind": "online", "tau": 1, "correct": 1},
                {"kind": "online", "tau": 2, "correct": 1},
                {"kind": "retro", "tau": 1, "horizon": 1, "correct": 1},
                {"kind": "retro", "tau": 1, "horizon": 1, "correct": 0},
            ],
            "tau",
            "duplicate",
        ),
        ([{"kind": "holdout", "checkpoint": 0, "item": "a", "correct": 1}], "kind", "no online"),
        ([["online", 1, 1]], None, "JSON object"),
    ],
)
def test_malformed_records_name_file_line_and_field(
    tmp_path: Path, rows: list[Any], field: str | None, needle: str
) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DataError) as err:
        load_seqmem_records(path)
    assert err.value.field == field
    assert needle in str(err.value)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_invalid_json_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"kind": "online", "tau": 1, "correct": 1}\n\n{"kind": online}\n')
    with pytest.raises(DataError) as err:
        load_seqmem_records(path)
    assert err.value.record == "line 3"


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError):
        load_seqmem_records(tmp_path / "absent.jsonl")


def test_boolean_correct_is_accepted() -> None:
    out = score_seqmem(
        [
            {"kind": "online", "tau": 1, "correct": True},
            {"kind": "online", "tau": 2, "correct": False},
        ]
    )
    assert out["online_acc"] == 0.5


# ---------------------------------------------------------------- independent re-implementation


def reference_score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Plain-loop SeqMem-Eval metrics written from the paper's formulas, for cross-checking."""
    online = {}
    hold: dict[int, dict[str, int]] = {}
    retro: dict[int, dict[int, int]] = {}
    for r in rows:
        if r["kind"] == "online":
            online[r["tau"]] = int(r["correct"])
        elif r["kind"] == "holdout":
            hold.setdefault(r["checkpoint"], {})[r["item"]] = int(r["correct"])
        else:
            retro.setdefault(r["horizon"], {})[r["tau"]] = int(r["correct"])
    T = len(online)
    abar = []
    total = 0
    for tau in range(1, T + 1):
        total += online[tau]
        abar.append(total / tau)
    out: dict[str, Any] = {"online_acc": abar[-1], "ped": max(abar) - abar[-1], "mer": abar[-1] - min(abar)}
    lowest = 0
    for i, v in enumerate(abar):
        if v < abar[lowest] - 1e-12:
            lowest = i
    out["r_min"] = (lowest + 1) / T
    if hold:
        H = {}
        for k in hold:
            H[k] = sum(hold[k].values()) / len(hold[k])
        out["holdout_acc"] = H[max(H)]
        pts = [(k / T, H[k]) for k in sorted(H) if k >= 1]
        if len(pts) >= 2:
            mx = sum(p[0] for p in pts) / len(pts)
            my = sum(p[1] for p in pts) / len(pts)
            num = sum((p[0] - mx) * (p[1] - my) for p in pts)
            den = sum((p[0] - mx) ** 2 for p in pts)
            out["trend_ho"] = num / den
    if retro:
        out["bwt"], out["forgetting"] = {}, {}
        for t in sorted(retro):
            taus = sorted(retro[t])
            out["bwt"][str(t)] = sum(retro[t][x] - online[x] for x in taus) / len(taus)
            acc = 0.0
            for x in taus:
                best = online[x]
                for h in retro:
                    if h <= t and x in retro[h]:
                        best = max(best, retro[h][x])
                acc += best - retro[t][x]
            out["forgetting"][str(t)] = acc / len(taus)
        if 1 in retro:
            out["iv"] = out["bwt"]["1"]
    return out


def random_rows(rng: random.Random, sampled: bool) -> list[dict[str, Any]]:
    T = rng.randint(1, 40)
    p = rng.random()
    rows = [{"kind": "online", "tau": t, "correct": int(rng.random() < p)} for t in range(1, T + 1)]
    if rng.random() < 0.7:
        checkpoints = sorted({0, T} | {rng.randint(0, T) for _ in range(rng.randint(0, 6))})
        items = [f"h{i}" for i in range(rng.randint(1, 8))]
        rows += [
            {"kind": "holdout", "checkpoint": k, "item": i, "correct": int(rng.random() < 0.5)}
            for k in checkpoints
            for i in items
        ]
    if rng.random() < 0.8 and T > 1:
        horizon = 1
        while horizon < T:
            for tau in range(1, T - horizon + 1):
                if not sampled or rng.random() < 0.5:
                    rows.append(
                        {
                            "kind": "retro",
                            "tau": tau,
                            "horizon": horizon,
                            "correct": int(rng.random() < 0.6),
                        }
                    )
            horizon *= 2
        if sampled and not any(r["kind"] == "retro" for r in rows):
            rows.append({"kind": "retro", "tau": 1, "horizon": 1, "correct": 1})
    rng.shuffle(rows)
    return rows


@pytest.mark.parametrize("sampled", [False, True])
def test_matches_independent_reimplementation_on_random_records(sampled: bool) -> None:
    rng = random.Random(1234 + sampled)
    for _ in range(300):
        rows = random_rows(rng, sampled)
        got = score_seqmem(rows)
        want = reference_score(rows)
        assert set(got) == set(want)
        for key, value in want.items():
            if isinstance(value, dict):
                assert set(got[key]) == set(value)
                for h in value:
                    assert got[key][h] == pytest.approx(value[h], abs=1e-6)
            else:
                assert got[key] == pytest.approx(value, abs=1e-6), key


def test_records_read_in_bulk_are_those_read_line_by_line(tmp_path: Path) -> None:
    # Flat lines are checked all at once; the same lines one by one give the same records,
    # each checkpoint's items in file order and every dict in the same order.
    rng = random.Random(7)
    for case in range(40):
        rows = random_rows(rng, sampled=bool(case % 2))
        for row in rows[::3]:
            row["correct"] = bool(row["correct"])  # true/false are 1/0
            row["output"] = "kept aside"  # other fields are ignored
        path = write_jsonl(tmp_path / f"r{case}.jsonl", rows)
        bulk = load_seqmem_records(path)
        one_by_one = records_from_rows(iter_json_lines(path), source=str(path))
        assert bulk == one_by_one
        assert [list(v.items()) for v in bulk.holdout.values()] == \
            [list(v.items()) for v in one_by_one.holdout.values()]
        assert [(t, list(v.items())) for t, v in bulk.retro.items()] == \
            [(t, list(v.items())) for t, v in one_by_one.retro.items()]
        assert all(type(c) is int for c in bulk.online)


def test_forgetting_at_every_horizon_is_forgetting_at_each() -> None:
    rng = random.Random(11)
    for _ in range(50):
        rows = random_rows(rng, sampled=True)
        records = records_from_rows(enumerate(rows, start=1))
        if not records.retro:
            continue
        every = forgetting_by_horizon(records.online, records.retro)
        assert every == {t: forgetting(records.online, records.retro, t) for t in records.retro}
