"""ImprintBench estimators and aggregation (App. C.3, D.3; brief §6), checked against
enumeration and hand computation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from clstream.protocols.imprint.metrics import (
    ItemCounts,
    all_correct_at_k,
    average,
    bootstrap_family_ci,
    by_family,
    compression_ratio,
    family_scores,
    pass_at_1,
    pass_at_k,
    reported_average,
    se_of_mean,
    se_of_proportion,
    tokens_in_context,
    unit_values,
)


def binomial(n: int, c: int, p: float) -> float:
    return math.comb(n, c) * p**c * (1 - p) ** (n - c)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("p", [0.0, 0.13, 0.5, 0.91, 1.0])
def test_estimators_are_unbiased(n: int, p: float) -> None:
    # E over c ~ Binomial(n, p) of the estimator equals the quantity it estimates.
    for k in range(1, n + 1):
        e_pass = sum(binomial(n, c, p) * pass_at_k(n, c, k) for c in range(n + 1))
        e_all = sum(binomial(n, c, p) * all_correct_at_k(n, c, k) for c in range(n + 1))
        assert e_pass == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
        assert e_all == pytest.approx(p**k, abs=1e-12)
    e_p1 = sum(binomial(n, c, p) * pass_at_1(n, c) for c in range(n + 1))
    assert e_p1 == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 4, 6])
def test_estimators_equal_subset_enumeration(n: int) -> None:
    # Over every size-k subset of the n samples: share with >= 1 correct / all correct.
    for c in range(n + 1):
        outcomes = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(outcomes, k))
            any_ok = sum(1 for s in subsets if any(s)) / len(subsets)
            all_ok = sum(1 for s in subsets if all(s)) / len(subsets)
            assert pass_at_k(n, c, k) == pytest.approx(any_ok, abs=1e-12)
            assert all_correct_at_k(n, c, k) == pytest.approx(all_ok, abs=1e-12)
            assert pass_at_k(n, c, k) == pytest.approx(
                1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)


def test_known_values_and_edges() -> None:
    assert pass_at_1(8, 3) == 3 / 8
    assert pass_at_k(8, 0, 8) == 0.0
    assert pass_at_k(8, 1, 8) == 1.0  # n - c < k
    assert pass_at_k(8, 2, 7) == 1.0
    assert all_correct_at_k(8, 8, 8) == 1.0
    assert all_correct_at_k(8, 7, 8) == 0.0
    assert all_correct_at_k(8, 4, 2) == pytest.approx(4 * 3 / (8 * 7))
    # the stable product form holds for large n where binomials overflow floats
    assert 0.0 < pass_at_k(2000, 3, 5) < 1.0
    for bad in [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)]:
        with pytest.raises(ValueError):
            all_correct_at_k(*bad)


def test_invariants_per_item_and_in_aggregate() -> None:
    rng = np.random.default_rng(5)
    rows = []
    for i in range(60):
        n = int(rng.integers(1, 10))
        c = int(rng.integers(0, n + 1))
        rows.append(ItemCounts(f"i{i}", "DirAcq", n, c, unit=f"p{i % 4}"))
        for k in range(1, n + 1):
            assert all_correct_at_k(n, c, k) <= pass_at_1(n, c) + 1e-15
            assert pass_at_1(n, c) <= pass_at_k(n, c, k) + 1e-15
    same_n = [ItemCounts(r.item_id, r.family, 8, min(r.c, 8), r.unit) for r in rows]
    for group in (same_n, [ItemCounts(r.item_id, r.family, r.n, r.c) for r in same_n]):
        cell = family_scores(group, range(1, 9))
        for k in range(1, 9):
            assert cell["all_correct_at_k"][str(k)] <= cell["pass_at_1"] <= cell["pass_at_k"][
                str(k)]


def test_persona_macro_average_by_hand() -> None:
    rows = [ItemCounts("a1", "TempUpd", 4, 4, "alice"),
            ItemCounts("a2", "TempUpd", 4, 0, "alice"),
            ItemCounts("a3", "TempUpd", 4, 2, "alice"),
            ItemCounts("b1", "TempUpd", 4, 1, "bob"),
            ItemCounts("c1", "RefRes", 4, 4, "carol")]
    cells = by_family(rows, [1, 4], ["TempUpd", "RefRes"])
    # alice: (1 + 0 + 0.5) / 3 = 0.5; bob: 0.25; TempUpd = (0.5 + 0.25) / 2
    assert cells["TempUpd"]["pass_at_1"] == pytest.approx(0.375)
    assert cells["TempUpd"]["n_items"] == 4
    # AllCorrect@4: alice (1 + 0 + 0) / 3, bob 0 -> 1/6
    assert cells["TempUpd"]["all_correct_at_k"]["4"] == pytest.approx(1 / 6)
    # Pass@4: alice (1 + 0 + 1) / 3, bob 1 -> 5/6
    assert cells["TempUpd"]["pass_at_k"]["4"] == pytest.approx(5 / 6)
    # SE over the two persona means: sd([0.5, 0.25], ddof=1) / sqrt(2) = 0.125
    assert cells["TempUpd"]["se"] == pytest.approx(0.125)
    # carol is the only persona with RefRes items: averaged over her alone
    assert cells["RefRes"]["pass_at_1"] == 1.0 and cells["RefRes"]["se"] is None
    # micro average (no personas) differs: (1 + 0 + 0.5 + 0.25) / 4
    micro = [ItemCounts(r.item_id, r.family, r.n, r.c) for r in rows[:4]]
    assert family_scores(micro, [1])["pass_at_1"] == pytest.approx(0.4375)
    assert list(cells) == ["TempUpd", "RefRes"]


def test_se_by_hand() -> None:
    values = [1.0, 0.5, 0.0, 0.25]
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert se_of_mean(values) == pytest.approx(sd / 2)
    assert se_of_mean([0.3]) is None
    assert se_of_proportion(0.25, 12) == pytest.approx(math.sqrt(0.25 * 0.75 / 12))
    assert se_of_proportion(0.5, 0) is None
    rows = [ItemCounts(f"i{j}", "DirAcq", 4, int(v * 4)) for j, v in enumerate(values)]
    assert family_scores(rows, [1])["se"] == pytest.approx(sd / 2)


def test_unit_values_and_bootstrap() -> None:
    rows = [ItemCounts("a", "F", 2, 2, "u"), ItemCounts("b", "F", 2, 0, "u"),
            ItemCounts("c", "F", 2, 1, "v")]
    assert unit_values(rows, "pass_at_1") == [0.5, 0.5]
    with pytest.raises(ValueError, match="needs k"):
        unit_values(rows, "pass_at_k")
    micro = [ItemCounts(f"i{j}", "F", 4, j % 5) for j in range(40)]
    lo, hi = bootstrap_family_ci(micro, n_boot=400, seed=3)
    assert (lo, hi) == bootstrap_family_ci(micro, n_boot=400, seed=3)
    assert lo < family_scores(micro, [1])["pass_at_1"] < hi
    # personas are the resampled unit: two personas with equal means give a point interval
    assert bootstrap_family_ci(rows, n_boot=200) == (0.5, 0.5)


def test_average_tokens_and_compression() -> None:
    assert average([0.2, 0.4, 0.9]) == pytest.approx(0.5)
    assert average([]) is None
    cells = {"DirAcq": {"pass_at_1": 1.0}, "TempUpd": {"pass_at_1": 0.5},
             "BoundAbs": {"pass_at_1": 0.0}}
    assert reported_average(cells, "pass_at_1", ["TempUpd", "BoundAbs", "RefRes"]) == 0.25
    assert tokens_in_context([100, 300, 0]) == pytest.approx(400 / 3)
    with pytest.raises(ValueError):
        tokens_in_context([])
    assert compression_ratio(638_828, 4096) == pytest.approx(155.96, abs=0.01)
    assert compression_ratio(1000, 0.0) is None  # parametric: nothing in context
