"""ImprintBench metrics: per-item estimators, family aggregation, uncertainty, compression.

Pure functions over counts: an item answered ``n`` times with ``c`` correct samples
(ImprintBench App. C.3; docs/imprint.md §7). Estimators are the unbiased ones of Chen et al.
(2021); families are micro averages over items (news, code) or macro averages over personas
(personalization, App. D.3); "Avg" is the plain mean of the families present; error bars are
+-1 SE (Fig. 5) and 95 % percentile bootstrap intervals come from
:mod:`clstream.metrics.bootstrap`. Estimators are ratios of binomial coefficients and averages
are exact sums, each rounded once (:mod:`clstream.metrics.exact`), so every number is the same
on every machine and for every order of the items.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from clstream.metrics.bootstrap import bootstrap_ci
from clstream.metrics.exact import exact_mean, standard_error


def _check(n: int, c: int, k: int | None = None) -> None:
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if k is not None and not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_1(n: int, c: int) -> float:
    """Pass@1 = c / n, the expected correctness of one sample (App. C.3)."""
    _check(n, c)
    return c / n


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased Pass@k = 1 - C(n-c, k) / C(n, k), the chance that k samples drawn without
    replacement from the n hold at least one correct (App. C.3; Chen et al. 2021).

    Computed as the exact ratio of integers (C(n, k) - C(n-c, k)) / C(n, k), rounded once;
    it is 1 when n - c < k (every draw of k holds a correct sample)."""
    return float(_pass_at_k_exact(n, c, k))


def _pass_at_k_exact(n: int, c: int, k: int) -> Fraction:
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def all_correct_at_k(n: int, c: int, k: int) -> float:
    """Unbiased AllCorrect@k = C(c, k) / C(n, k) = prod_{i=0}^{k-1} (c-i)/(n-i), the chance
    that k samples drawn without replacement are all correct; 0 when c < k (docs/imprint.md §7.3:
    the paper tabulates k = n only, AllCorrect@8 with n = 8; k < n is a clstream extension)."""
    return float(_all_correct_at_k_exact(n, c, k))


def _all_correct_at_k_exact(n: int, c: int, k: int) -> Fraction:
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def se_of_mean(values: Sequence[float]) -> float | None:
    """Standard error of a mean: sd(values, ddof=1) / sqrt(N) (Fig. 5's +-1 SE); None for
    fewer than two values (no spread to estimate)."""
    if len(values) < 2:
        return None
    return standard_error(values)


def se_of_proportion(p: float, count: int) -> float | None:
    """sqrt(p (1 - p) / N), the SE docs/imprint.md §7.6 gives for AllCorrect; None for N = 0."""
    if count < 1:
        return None
    return math.sqrt(max(p * (1.0 - p), 0.0) / count)


@dataclass(frozen=True)
class ItemCounts:
    """One item's judged samples: ``n`` drawn, ``c`` correct; ``unit`` is the persona whose
    mean it enters first (None: the item is its own unit)."""

    item_id: str
    family: str
    n: int
    c: int
    unit: str | None = None
    axis: str | None = None


def item_scores(counts: ItemCounts, ks: Sequence[int]) -> dict[str, Any]:
    """``{"pass_at_1", "pass_at_k": {k}, "all_correct_at_k": {k}}`` of one item."""
    return {"pass_at_1": pass_at_1(counts.n, counts.c),
            "pass_at_k": {str(k): pass_at_k(counts.n, counts.c, k) for k in ks},
            "all_correct_at_k": {str(k): all_correct_at_k(counts.n, counts.c, k) for k in ks}}


def unit_values(rows: Sequence[ItemCounts], value: str, k: int | None = None) -> list[float]:
    """The values a family mean averages: one per item (micro), or, when the rows carry
    units (personas), the mean over each unit's items, in first-appearance order (macro,
    App. D.3: per persona first, then over the personas with >= 1 item)."""
    return [float(v) for v in _unit_fractions(rows, value, k)]


def _unit_fractions(rows: Sequence[ItemCounts], value: str, k: int | None) -> list[Fraction]:
    """:func:`unit_values` as exact fractions, so that a family mean is rounded only once."""
    if value != "pass_at_1" and k is None:
        raise ValueError(f"{value} needs k")

    def of(r: ItemCounts) -> Fraction:
        if value == "pass_at_1" or k is None:
            _check(r.n, r.c)
            return Fraction(r.c, r.n)
        if value == "pass_at_k":
            return _pass_at_k_exact(r.n, r.c, k)
        return _all_correct_at_k_exact(r.n, r.c, k)

    if all(r.unit is None for r in rows):
        return [of(r) for r in rows]
    groups: dict[str, list[Fraction]] = {}
    for r in rows:
        groups.setdefault(r.unit if r.unit is not None else f"\x00{r.item_id}", []).append(of(r))
    return [sum(v, Fraction(0)) / len(v) for v in groups.values()]


def family_scores(rows: Sequence[ItemCounts], ks: Sequence[int]) -> dict[str, Any]:
    """One family's cell: ``{"n_items", "pass_at_1", "pass_at_k": {k}, "all_correct_at_k":
    {k}, "se"}`` -- means over items, or over persona means (:func:`unit_values`); ``se`` is
    the SE of per-item Pass@1 (of persona means for personas)."""
    if not rows:
        raise ValueError("a family needs at least one item")
    p1 = _unit_fractions(rows, "pass_at_1", None)
    return {
        "n_items": len(rows),
        "pass_at_1": exact_mean(p1),
        "pass_at_k": {str(k): exact_mean(_unit_fractions(rows, "pass_at_k", k)) for k in ks},
        "all_correct_at_k": {str(k): exact_mean(_unit_fractions(rows, "all_correct_at_k", k))
                             for k in ks},
        "se": se_of_mean([float(v) for v in p1]),
    }


def by_family(rows: Iterable[ItemCounts], ks: Sequence[int],
              order: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Family cells in ``order`` (families with no item left out)."""
    groups: dict[str, list[ItemCounts]] = {}
    for r in rows:
        groups.setdefault(r.family, []).append(r)
    unknown = sorted(set(groups) - set(order))
    return {f: family_scores(groups[f], ks) for f in [*order, *unknown] if f in groups}


def average(values: Iterable[float]) -> float | None:
    """The setting's "Avg": plain unweighted mean over the families shown (docs/imprint.md
    §7.5); None when no family is shown."""
    data = list(values)
    return exact_mean(data) if data else None


def bootstrap_family_ci(rows: Sequence[ItemCounts], n_boot: int = 1000, alpha: float = 0.05,
                        seed: int = 0) -> tuple[float, float]:
    """95 % percentile bootstrap interval of a family's Pass@1 (docs/imprint.md §7.7): items are
    resampled, or personas when the rows carry them (a cluster bootstrap: the family score is
    the mean of persona means, so resampling personas resamples those means)."""
    return bootstrap_ci(unit_values(rows, "pass_at_1"), n_boot=n_boot, alpha=alpha, seed=seed)


def tokens_in_context(per_item_tokens: Sequence[int | float]) -> float:
    """Mean tokens a method puts in context per question (docs/imprint.md §7.8, Fig. 11); parametric
    methods put 0."""
    if not per_item_tokens:
        raise ValueError("no questions to average tokens in context over")
    return exact_mean(per_item_tokens)


def compression_ratio(corpus_tokens: int | float, mean_tokens_in_context: float
                      ) -> float | None:
    """Effective compression = corpus tokens / mean tokens in context (docs/imprint.md §7.9, clstream's
    reading; the paper gives no formula); None ("-") when nothing is put
    in context (parametric methods)."""
    if mean_tokens_in_context <= 0:
        return None
    return float(corpus_tokens) / mean_tokens_in_context


def reported_average(cells: Mapping[str, Mapping[str, Any]], key: str,
                     families: Sequence[str]) -> float | None:
    """Avg over the ``families`` a setting's tables report that are present in ``cells``."""
    values: list[float] = []
    for f in families:
        if f in cells:
            value = cells[f][key]
            if isinstance(value, int | float):
                values.append(float(value))
    return average(values)
