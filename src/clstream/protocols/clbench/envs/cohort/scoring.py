"""The 36 cohorts of the cohort-studies task, their true survival and the score (docs/clbench.md §4.5).

A cohort is a conjunction of conditions on canonical variables (``lo <= value < hi``). Layer 1
holds four single conditions, layer 2 sixteen pairs measured together in at least one study,
layer 3 sixteen triples that no study measures together: they can only be estimated by
combining what several studies show.

The truth of a cohort is S_c(t) = sum over types of P(type | cohort) S_type(t), over the whole
population (cognition conditions on the latent ability). The score of one horizon is the binary
KL divergence in bits between smoothed (S, 1 - S) distributions, smoothing alpha = 0.01; a
cohort's KL is the mean over 12, 24 and 36 months. The reward of an instance is the mean over
cohorts of the reference's KL (the instance's study-wide Kaplan-Meier curve) minus the mean of
the submitted estimates' KL: bits saved per cohort, signed. A missing estimate counts as the
reference.

Kaplan-Meier curves come from lifelines (the ``clbench`` extra), imported when first needed.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clstream.core.errors import SpecError
from clstream.protocols.clbench.envs.cohort.population import HORIZONS, Array, type_survival

ALPHA = 0.01
EXTRA = "clbench"
EXTRA_HINT = ("the cohort_studies task needs the clbench extra (lifelines): "
              "pip install 'clstream[clbench]'")


def require_extra() -> None:
    """Raise a one-line :class:`SpecError` (exit status 2) when lifelines is missing."""
    if importlib.util.find_spec("lifelines") is None:
        raise SpecError(EXTRA_HINT)


@dataclass(frozen=True)
class Condition:
    """``lo <= variable < hi`` (None: unbounded), with the words shown to the agent."""

    variable: str
    lo: float | None
    hi: float | None
    text: str

    def holds(self, value: Any) -> Any:
        """Elementwise truth for a number or an array (a None value never holds)."""
        if value is None:
            return False
        ok = np.ones_like(value, dtype=bool) if isinstance(value, np.ndarray) else True
        if self.lo is not None:
            ok = ok & (value >= self.lo - 1e-9)
        if self.hi is not None:
            ok = ok & (value < self.hi - 1e-9)
        return ok


@dataclass(frozen=True)
class Cohort:
    cohort_id: str
    layer: int
    conditions: tuple[Condition, ...]

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(c.variable for c in self.conditions)

    @property
    def label(self) -> str:
        return " and ".join(c.text for c in self.conditions)


VOC_MID = Condition("voc", 3, 6, "personal VOC exposure 3 to < 6 mg/L")
VOC_LOW = Condition("voc", None, 3, "personal VOC exposure < 3 mg/L")
VOC_HIGH = Condition("voc", 6, None, "personal VOC exposure >= 6 mg/L")
ACRON_LOW = Condition("acron", None, 2, "Acron use < 2 doses per week")
ACRON_HIGH = Condition("acron", 4, None, "Acron use >= 4 doses per week")
FAMILY = Condition("family_history", 1, None, "any first-degree relative with the disease")
HHBP_HIGH = Condition("hhbp", 8, None, "serum HHBP >= 8 ng/mL")
AMBIENT_HIGH = Condition("ambient_voc", 12, None, "ambient VOC >= 12 mg/m3")
AMBIENT_LOW = Condition("ambient_voc", None, 8, "ambient VOC < 8 mg/m3")
PRB1_HIGH = Condition("prb1", 30, None, "PRB1 ratio >= 30 (category high)")
PRB1_LOW = Condition("prb1", None, 25, "PRB1 ratio < 25 (category low)")
EDU_HIGH = Condition("education", 13, None, "13+ years of education (tertiary)")
EDU_LOW = Condition("education", None, 10, "< 10 years of education (primary)")
COG_HIGH = Condition("cognition", 0.6, None,
                     "high cognition (MMSE >= 24, MoCA >= 21 or AD8 <= 3)")
COG_LOW = Condition("cognition", None, 0.5,
                    "low cognition (MMSE <= 22, MoCA <= 19 or AD8 >= 5)")
GG1 = Condition("genotype", 1, 2, "genotype GG-1")
GG3 = Condition("genotype", 3, None, "genotype GG-3")
AGE_OLD = Condition("age", 60, None, "age >= 60")
AGE_YOUNG = Condition("age", None, 50, "age < 50")

_LAYERS: tuple[tuple[tuple[Condition, ...], ...], ...] = (
    ((VOC_MID,), (ACRON_LOW,), (FAMILY,), (HHBP_HIGH,)),
    ((AMBIENT_HIGH, PRB1_HIGH), (AMBIENT_LOW, EDU_HIGH), (AMBIENT_HIGH, GG3), (FAMILY, GG3),
     (FAMILY, PRB1_HIGH), (EDU_HIGH, COG_HIGH), (EDU_LOW, GG1), (ACRON_LOW, PRB1_HIGH),
     (VOC_MID, PRB1_LOW), (VOC_HIGH, GG3), (AGE_OLD, ACRON_LOW), (AGE_OLD, COG_HIGH),
     (AGE_YOUNG, VOC_LOW), (HHBP_HIGH, PRB1_HIGH), (HHBP_HIGH, GG3), (ACRON_HIGH, VOC_LOW)),
    ((VOC_MID, PRB1_HIGH, GG3), (FAMILY, GG3, PRB1_HIGH), (ACRON_LOW, PRB1_HIGH, GG3),
     (AMBIENT_HIGH, PRB1_HIGH, GG3), (EDU_HIGH, COG_HIGH, VOC_MID), (ACRON_LOW, COG_HIGH, GG3),
     (HHBP_HIGH, PRB1_HIGH, GG3), (FAMILY, VOC_MID, AGE_OLD), (AMBIENT_LOW, EDU_HIGH, FAMILY),
     (VOC_LOW, ACRON_HIGH, PRB1_LOW), (EDU_LOW, GG1, PRB1_LOW), (COG_LOW, AMBIENT_HIGH, PRB1_HIGH),
     (HHBP_HIGH, FAMILY, VOC_HIGH), (AGE_OLD, COG_HIGH, VOC_MID), (FAMILY, ACRON_LOW, GG3),
     (HHBP_HIGH, AMBIENT_LOW, PRB1_HIGH)),
)
COHORTS: tuple[Cohort, ...] = tuple(
    Cohort(f"C{n:02d}", layer, conditions)
    for n, (layer, conditions) in enumerate(
        ((layer + 1, c) for layer, group in enumerate(_LAYERS) for c in group), start=1))


def true_survival(pop: Mapping[str, Array]) -> dict[str, tuple[float, float, float]]:
    """S_c(12), S_c(24), S_c(36) of every cohort over the whole population (type mixture)."""
    curves = np.array([type_survival(t) for t in HORIZONS])  # horizon x type
    out = {}
    for cohort in COHORTS:
        mask = np.ones(len(pop["type"]), dtype=bool)
        for cond in cohort.conditions:
            mask &= cond.holds(pop[cond.variable])
        counts = np.bincount(pop["type"][mask], minlength=curves.shape[1])
        share = counts / max(int(counts.sum()), 1)
        s12, s24, s36 = (float(v) for v in curves @ share)
        out[cohort.cohort_id] = (s12, s24, s36)
    return out


# --- the score -------------------------------------------------------------------------------


def smoothed(p: float, alpha: float = ALPHA) -> tuple[float, float]:
    """(S, 1 - S) mixed with the uniform distribution: (1 - alpha) (p, 1 - p) + alpha / 2."""
    return (1 - alpha) * p + alpha / 2, (1 - alpha) * (1 - p) + alpha / 2


def kl_bits(p_true: float, p_pred: float, alpha: float = ALPHA) -> float:
    """KL(smoothed truth || smoothed estimate) in bits."""
    return sum(a * math.log2(a / b)
               for a, b in zip(smoothed(p_true, alpha), smoothed(p_pred, alpha), strict=True))


def cohort_kl(truth: Sequence[float], estimate: Sequence[float]) -> float:
    """Mean KL over the horizons."""
    return sum(kl_bits(t, e) for t, e in zip(truth, estimate, strict=True)) / len(truth)


@dataclass(frozen=True)
class Score:
    reward: float          # mean reference KL - mean estimate KL
    ceiling: float         # mean reference KL: the reward of a perfect report
    reference_kl: float
    estimate_kl: float
    missing: int           # horizons left to the reference


def score_report(truth: Mapping[str, Sequence[float]], reference: Sequence[float],
                 estimates: Mapping[str, Mapping[int, float]]) -> Score:
    """Score a report: ``estimates`` maps cohort id -> {horizon: S}; what is missing counts
    as the ``reference`` (the instance's study-wide curve)."""
    ref_kl, est_kl, missing = [], [], 0
    for cohort_id, true in truth.items():
        given = estimates.get(cohort_id, {})
        estimate = []
        for k, horizon in enumerate(HORIZONS):
            value = given.get(horizon)
            if value is None:
                missing += 1
                value = reference[k]
            estimate.append(value)
        ref_kl.append(cohort_kl(true, reference))
        est_kl.append(cohort_kl(true, estimate))
    ref, est = sum(ref_kl) / len(ref_kl), sum(est_kl) / len(est_kl)
    return Score(ref - est, ref, ref, est, missing)


# --- Kaplan-Meier (lifelines) -----------------------------------------------------------------


def kaplan_meier(times: Sequence[float], events: Sequence[int],
                 horizons: Sequence[float] = HORIZONS) -> tuple[float, ...]:
    """The Kaplan-Meier estimate S(t) at ``horizons`` (lifelines' KaplanMeierFitter)."""
    from lifelines import KaplanMeierFitter  # the clbench extra, loaded on first use

    fitter = KaplanMeierFitter()
    fitter.fit(np.asarray(times, dtype=float), np.asarray(events, dtype=int))
    values = fitter.survival_function_at_times(list(horizons)).to_numpy()
    return tuple(float(v) for v in values)
