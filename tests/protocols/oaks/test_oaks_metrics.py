"""Hand-computed OAKS metrics (SPECS §1.4, §5): phases, AL/DS/PM, transitions, subsets, score."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clstream.core.errors import DataError, SpecError
from clstream.protocols.oaks.data import OaksDataset, OaksDocument, OaksQuestion
from clstream.protocols.oaks.metrics import (
    OAKS_B_BINS,
    OAKS_N_BINS,
    TRANSITION_NAMES,
    check_bins,
    n_changes,
    n_phases,
    per_question_table,
    phases,
    question_metrics,
    score_oaks,
    subset_of,
    transition_counts,
    transition_rates,
)


def test_phases() -> None:
    assert phases(["a", "a", "b", "b", "b", "a"]) == [(0, 2), (2, 5), (5, 6)]
    assert phases(["a", "b", "a"]) == [(0, 1), (1, 2), (2, 3)]  # A->B->A is three phases
    assert phases(["x"]) == [(0, 1)]
    assert phases([]) == []


def test_question_metrics_mixed() -> None:
    # golds   a a | b b b | a        phases of length 2, 3, 1; C = 6
    # correct 0 1 | 1 0 1 | 0
    # phase 1: tau = 2 -> AL += 1, no wrong after it
    # phase 2: tau = 1 -> AL += 0, one wrong after it -> DS += 1
    # phase 3: never correct -> PM += 1
    m = question_metrics(np.array([0, 1, 1, 0, 1, 0]), ["a", "a", "b", "b", "b", "a"])
    assert m == pytest.approx({"accuracy": 3 / 6, "acquisition_latency": 1 / 6,
                               "distraction_susceptibility": 1 / 6, "phase_miss": 1 / 6})


def test_question_metrics_late_and_missed() -> None:
    # golds u u a a, correct 0 0 0 1: phase u missed (PM 2), phase a tau = 2 (AL 1); C = 4
    m = question_metrics(np.array([False, False, False, True]), ["u", "u", "a", "a"])
    assert m == pytest.approx({"accuracy": 0.25, "acquisition_latency": 0.25,
                               "distraction_susceptibility": 0.0, "phase_miss": 0.5})


def test_question_metrics_lapses_counted_after_first_hit_only() -> None:
    # one phase of 5, correct 0 1 0 0 1: tau = 2 -> AL 1; wrong after tau: 2 -> DS 2
    m = question_metrics(np.array([0, 1, 0, 0, 1]), ["k"] * 5)
    assert m == pytest.approx({"accuracy": 0.4, "acquisition_latency": 0.2,
                               "distraction_susceptibility": 0.4, "phase_miss": 0.0})


def test_question_metrics_extremes() -> None:
    assert question_metrics(np.ones(3), ["x"] * 3)["accuracy"] == 1.0
    assert question_metrics(np.zeros(3), ["a", "b", "a"])["phase_miss"] == 1.0
    with pytest.raises(ValueError):
        question_metrics(np.ones(2), ["x"] * 3)
    with pytest.raises(ValueError):
        question_metrics(np.ones(0), [])


@given(st.lists(st.tuples(st.booleans(), st.sampled_from("abc")), min_size=1, max_size=40))
def test_intra_phase_metrics_sum_to_one(cells: list[tuple[bool, str]]) -> None:
    correct = np.array([c for c, _ in cells])
    golds = [g for _, g in cells]
    m = question_metrics(correct, golds)
    assert sum(m.values()) == pytest.approx(1.0)
    assert all(0.0 <= v <= 1.0 for v in m.values())


def test_n_changes_and_subsets() -> None:
    assert n_changes(["unknown", "a", "a", "b"]) == 2  # the first Unknown -> X counts
    assert n_changes(["a"]) == 0
    # SPECS §1.4: subsets count phases; an initial Unknown phase is a phase
    assert n_phases(["unknown", "a", "a", "b"]) == 3
    assert n_phases(["unknown", "unknown", "a"]) == 2
    assert n_phases(["a", "b", "a"]) == 3
    assert n_phases(["a"]) == 1
    assert n_phases([]) == 0
    # keys are numbers of phases (OAKS-B: <= 3, 4-5, >= 6; OAKS-N: <= 3, 4, >= 5)
    expected_b = {1: "sparse", 2: "sparse", 3: "sparse", 4: "moderate",
                  5: "moderate", 6: "frequent", 20: "frequent"}
    expected_n = {1: "sparse", 2: "sparse", 3: "sparse", 4: "moderate", 5: "frequent",
                  19: "frequent"}
    assert {n: subset_of(n, OAKS_B_BINS) for n in expected_b} == expected_b
    assert {n: subset_of(n, OAKS_N_BINS) for n in expected_n} == expected_n
    custom = (("few", 0), ("many", 2))
    assert [subset_of(n, check_bins(custom)) for n in (0, 1, 2, 9)] == [
        "few", "few", "many", "many"]


@pytest.mark.parametrize("bins", [(), (("a", 1),), (("a", 0), ("b", 3), ("c", 3)),
                                  (("a", 0), ("a", 2))])
def test_bad_bins(bins: tuple[tuple[str, int], ...]) -> None:
    with pytest.raises(SpecError):
        check_bins(bins)


def test_transition_counts_by_hand() -> None:
    # question 1: golds u a a b, answers u u a a, correct 1 0 1 0
    #   t2: GT change, model stay, wrong -> stubbornness
    #   t3: GT stay, model change, right -> lag
    #   t4: GT change, model stay, wrong -> stubbornness
    # question 2: golds x x y, answers x z y, correct 1 0 1
    #   t2: GT stay, model change, wrong -> volatility
    #   t3: GT change, model change, right -> adaptability
    counts = transition_counts(
        [["u", "a", "a", "b"], ["x", "x", "y"]],
        [["u", "u", "a", "a"], ["x", "z", "y"]],
        [np.array([1, 0, 1, 0]), np.array([1, 0, 1])],
    )
    assert counts == {"adaptability": 1, "maladaptation": 0, "prescience": 0,
                      "stubbornness": 2, "lag": 1, "volatility": 1, "stability": 0,
                      "obstinacy": 0}
    rates = transition_rates(counts)
    assert rates == pytest.approx({"adaptability": 1 / 3, "maladaptation": 0, "prescience": 0,
                                   "stubbornness": 2 / 3, "lag": 0.5, "volatility": 0.5,
                                   "stability": 0, "obstinacy": 0})


def test_transition_rates_empty_group_is_zero() -> None:
    # the gold never changes, so the GT-change group is empty and reports 0.0 rates
    counts = transition_counts([["a", "a", "a"]], [["a", "a", "b"]], [np.array([1, 1, 0])])
    rates = transition_rates(counts)
    assert [rates[n] for n in TRANSITION_NAMES[:4]] == [0.0, 0.0, 0.0, 0.0]
    # t2 stay/stay/right -> stability, t3 stay/change/wrong -> volatility
    assert rates["stability"] == 0.5 and rates["volatility"] == 0.5


@given(st.lists(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("abc"),
                                   st.booleans()), min_size=2, max_size=12),
                min_size=1, max_size=5))
def test_transition_group_rates_sum_to_one(qs: list[list[tuple[str, str, bool]]]) -> None:
    counts = transition_counts([[g for g, _, _ in q] for q in qs],
                               [[a for _, a, _ in q] for q in qs],
                               [np.array([c for _, _, c in q]) for q in qs])
    assert sum(counts.values()) == sum(len(q) - 1 for q in qs)
    rates = transition_rates(counts)
    for group in (TRANSITION_NAMES[:4], TRANSITION_NAMES[4:]):
        total = sum(counts[n] for n in group)
        assert sum(rates[n] for n in group) == pytest.approx(1.0 if total else 0.0)


# ---- score_oaks on a small dataset computed by hand ---------------------------------------

OPTIONS = ("hall", "yard", "cannot answer at this point")


def small_dataset() -> OaksDataset:
    d1 = OaksDocument("d1", ("c1", "c2", "c3"), (
        OaksQuestion("d1_q0", "Where is Ann?", (("Unknown",), ("kitchen",), ("garden",)),
                     "tracking"),
        OaksQuestion("d1_q1", "How often did Ann move?", (("0",), ("1",), ("2",)), "counting"),
    ))
    d2 = OaksDocument("d2", ("c1", "c2", "c3"), (
        OaksQuestion("d2_q0", "Where is Bo?", ((OPTIONS[2],), (OPTIONS[0],), (OPTIONS[0],)),
                     None, OPTIONS),
    ))
    d3 = OaksDocument("d3", ("c1",), (
        OaksQuestion("d3_q0", "Where is the box?", (("yard",),), "tracking"),
    ))
    return OaksDataset("data.json", "0" * 64, (d1, d2, d3))


def small_predictions() -> dict[tuple[str, int], str]:
    return {
        # golds u/kitchen/garden; correct 1 1 0 -> acc 2/3, PM 1/3 (garden phase missed)
        ("d1_q0", 1): "## Answer: Unknown",
        ("d1_q0", 2): "## Answer: the kitchen",
        ("d1_q0", 3): "## Answer: kitchen",
        # golds 0/1/2; "Unknown" is right before the first move; correct 1 0 1 -> PM 1/3
        ("d1_q1", 1): "## Answer: Unknown",
        ("d1_q1", 2): "## Answer: Unknown",
        ("d1_q1", 3): "**Answer**: twice",
        # letters c/a/a; correct 1 0 1 -> phase a has tau = 2 -> AL 1/3
        ("d2_q0", 1): "## Answer: C",
        ("d2_q0", 2): "## Answer: C",
        ("d2_q0", 3): "## Answer: A",
        # no marker: the whole text is the answer; correct
        ("d3_q0", 1): "yard",
    }


def test_score_oaks_by_hand() -> None:
    result, missing = score_oaks(small_dataset(), small_predictions())
    assert missing == 0
    # accuracy (2/3 + 2/3 + 2/3 + 1) / 4 = 3/4; AL (1/3) / 4; PM (1/3 + 1/3) / 4; DS 0
    assert result["n_questions"] == 4
    assert result["accuracy"] == pytest.approx(0.75)
    assert result["acquisition_latency"] == pytest.approx(1 / 12)
    assert result["distraction_susceptibility"] == 0.0
    assert result["phase_miss"] == pytest.approx(1 / 6)
    # d1_q0: t2 change/change/right adaptability, t3 change/stay/wrong stubbornness
    # d1_q1: t2 change/stay/wrong stubbornness, t3 change/change/right adaptability
    # d2_q0: t2 change/stay/wrong stubbornness, t3 stay/change/right lag
    assert result["transitions"] == pytest.approx({
        "adaptability": 0.4, "maladaptation": 0.0, "prescience": 0.0, "stubbornness": 0.6,
        "lag": 1.0, "volatility": 0.0, "stability": 0.0, "obstinacy": 0.0})
    assert result["by_type"] == {
        "counting": {"accuracy": pytest.approx(2 / 3), "n_questions": 1},
        "tracking": {"accuracy": pytest.approx(5 / 6), "n_questions": 2},
    }
    assert result["by_subset"] == {"sparse": {"accuracy": pytest.approx(0.75), "n_questions": 4}}
    # t1: all four right; t2: d1_q0 only of three; t3: d1_q1 and d2_q0 of three
    assert result["accuracy_by_interval"] == pytest.approx([1.0, 1 / 3, 2 / 3])
    assert set(result) == {"n_questions", "accuracy", "acquisition_latency",
                           "distraction_susceptibility", "phase_miss", "transitions",
                           "by_type", "by_subset", "accuracy_by_interval"}
    json.dumps(result)  # plain JSON types only


def test_score_oaks_custom_bins() -> None:
    # d1 questions have 3 phases -> "moderate" under the custom open-ended bins, d3_q0 has 1;
    # the MC question keeps the OAKS-N bins (2 phases -> sparse)
    result, _ = score_oaks(small_dataset(), small_predictions(),
                           bins_open=(("sparse", 0), ("moderate", 2)))
    assert result["by_subset"] == {
        "sparse": {"accuracy": pytest.approx(5 / 6), "n_questions": 2},
        "moderate": {"accuracy": pytest.approx(2 / 3), "n_questions": 2},
    }


def test_score_oaks_missing_prediction_names_first_pair() -> None:
    preds = small_predictions()
    del preds["d2_q0", 1]
    del preds["d1_q1", 3]
    with pytest.raises(DataError, match=r"preds\.jsonl.*question d1_q1 t 3.*'output'.*missing"):
        score_oaks(small_dataset(), preds, predictions_path="preds.jsonl")


def test_score_oaks_allow_missing_counts_wrong() -> None:
    preds = small_predictions()
    del preds["d3_q0", 1]
    del preds["d1_q0", 2]
    result, missing = score_oaks(small_dataset(), preds, allow_missing=True)
    assert missing == 2
    # d1_q0 correct 1 0 0 -> 1/3; d3_q0 0 -> accuracy (1/3 + 2/3 + 2/3 + 0) / 4
    assert result["accuracy"] == pytest.approx(5 / 12)
    # d1_q0 answers unknown, "", kitchen: t2 change/change/wrong maladaptation,
    # t3 change/change/wrong maladaptation
    assert result["transitions"]["maladaptation"] == pytest.approx(2 / 5)


def test_score_oaks_rejects_predictions_outside_the_dataset() -> None:
    preds = small_predictions() | {("zz_q0", 1): "x"}
    with pytest.raises(DataError, match="zz_q0.*question_id"):
        score_oaks(small_dataset(), preds)
    preds = small_predictions() | {("d3_q0", 2): "x"}
    with pytest.raises(DataError, match="d3_q0 t 2.*'t'"):
        score_oaks(small_dataset(), preds)


def test_score_oaks_empty_dataset() -> None:
    with pytest.raises(DataError, match="no questions"):
        score_oaks(OaksDataset("empty.json", "0" * 64, ()), {})


def test_per_question_table() -> None:
    rows = per_question_table(small_dataset(), small_predictions())
    assert [r["question_id"] for r in rows] == ["d1_q0", "d1_q1", "d2_q0", "d3_q0"]
    assert rows[2] == {
        "question_id": "d2_q0", "document": "d2", "type": None, "subset": "sparse",
        "n_phases": 2, "accuracy": pytest.approx(2 / 3),
        "acquisition_latency": pytest.approx(1 / 3), "distraction_susceptibility": 0.0,
        "phase_miss": 0.0, "correct": [1, 0, 1],
    }
    assert rows[0]["n_phases"] == 3 and rows[0]["correct"] == [1, 1, 0]


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        (OaksDocument("b", (), (OaksQuestion("b_q0", "?", (), None),)), "no chunks"),
        (OaksDocument("b", ("c",), (OaksQuestion("b_q0", "?", (("x",), ("y",))),)),
         "2 golds for 1 chunks"),
        (OaksDocument("b", ("c",), (OaksQuestion("b_q0", "?", ((),)),)), "no accepted answer"),
        (OaksDocument("b", ("c",), (OaksQuestion("b_q0", "?", (("z",),), None, ("x", "y")),)),
         "not one of"),
    ],
)
def test_score_oaks_rejects_unscorable_data(doc: OaksDocument, problem: str) -> None:
    dataset = OaksDataset("bad.json", "0" * 64, (doc,))
    with pytest.raises(DataError, match=rf"bad\.json, record document b question b_q0.*{problem}"):
        score_oaks(dataset, {}, allow_missing=True)


def test_score_oaks_rejects_duplicate_question_ids() -> None:
    q = OaksQuestion("b_q0", "?", (("x",),))
    docs = (OaksDocument("b", ("c",), (q,)), OaksDocument("c", ("c",), (q,)))
    with pytest.raises(DataError, match="duplicate question id"):
        score_oaks(OaksDataset("dup.json", "0" * 64, docs), {("b_q0", 1): "x"})


def _timeline_question(qid: str, golds: list[str], options: tuple[str, ...] = ()) -> OaksQuestion:
    return OaksQuestion(qid, "q?", tuple((g,) for g in golds), "tracking", options)


def test_subsets_bin_on_phases_at_the_boundaries() -> None:
    # Open-ended (OAKS-B): 3 phases sparse, 4 and 5 moderate, 6 frequent. Each timeline opens
    # with an Unknown phase, which counts. Binning on transitions would put each one bin lower.
    open_golds = {
        "b3": ["Unknown", "a", "a", "b", "b", "b"],          # 3 phases, 2 changes
        "b4": ["Unknown", "a", "b", "b", "c", "c"],          # 4 phases
        "b5": ["Unknown", "a", "b", "c", "d", "d"],          # 5 phases
        "b6": ["Unknown", "a", "b", "c", "d", "e"],          # 6 phases, 5 changes
    }
    mc_options = ("x", "y", "z", "cannot answer at this point")
    cannot = mc_options[-1]
    mc_golds = {
        "n3": [cannot, "x", "x", "y", "y", "y"],             # 3 phases
        "n4": [cannot, "x", "y", "y", "z", "z"],             # 4 phases
        "n5": [cannot, "x", "y", "z", "x", "x"],             # 5 phases
    }
    questions = [_timeline_question(q, g) for q, g in open_golds.items()]
    questions += [_timeline_question(q, g, mc_options) for q, g in mc_golds.items()]
    dataset = OaksDataset("d.json", "0" * 64, (
        OaksDocument("d", tuple(f"c{i}" for i in range(6)), tuple(questions)),))
    preds = {(q.question_id, t): "## Answer: A" for q in questions for t in range(1, 7)}
    rows = {r["question_id"]: r for r in per_question_table(dataset, preds)}
    assert {q: (r["n_phases"], r["subset"]) for q, r in rows.items()} == {
        "b3": (3, "sparse"), "b4": (4, "moderate"), "b5": (5, "moderate"),
        "b6": (6, "frequent"),
        "n3": (3, "sparse"), "n4": (4, "moderate"), "n5": (5, "frequent"),
    }
    result, _ = score_oaks(dataset, preds)
    assert {k: v["n_questions"] for k, v in result["by_subset"].items()} == {
        "sparse": 2, "moderate": 3, "frequent": 2}
    # configurable: a custom open-ended table in phases
    result, _ = score_oaks(dataset, preds, bins_open=(("few", 0), ("many", 5)))
    assert {k: v["n_questions"] for k, v in result["by_subset"].items()} == {
        "few": 2, "many": 2, "sparse": 1, "moderate": 1, "frequent": 1}


def test_counting_phases_use_the_numeral_equivalence() -> None:
    # canonical golds of a counting question fold numerals: "two" then "2" is one phase;
    # for a tracking question they are two phases (text compares as text)
    counting = OaksQuestion("c_q0", "q?", (("0",), ("two",), ("2",)), "counting")
    tracking = OaksQuestion("c_q1", "q?", (("0",), ("two",), ("2",)), "tracking")
    dataset = OaksDataset("d.json", "0" * 64, (
        OaksDocument("c", ("x", "y", "z"), (counting, tracking)),))
    preds = {(q, t): "## Answer: 2" for q in ("c_q0", "c_q1") for t in (1, 2, 3)}
    rows = per_question_table(dataset, preds)
    assert [r["n_phases"] for r in rows] == [2, 3]
    assert rows[0]["correct"] == [0, 1, 1]
    assert rows[1]["correct"] == [0, 0, 1]
