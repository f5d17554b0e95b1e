"""The population and the five studies of the cohort-studies task (docs/clbench.md §4.5).

A fictional disease with four latent types (R, M, N, C). Survival depends only on the type
(Weibull, :data:`WEIBULL`); the type depends on the region (:data:`TYPE_MIX`); every
observable covariate is drawn given the type (ambient VOC given the region). So the covariates
say something about survival only through the type they hint at: the latent structure a
learner can pool across studies.

Five studies enrol from the population with their own selection bias (regions covered,
enrolment weight per type) and measure their own subset of the covariates under their own
column names, units and instruments (:class:`Coding`). An instance is one draw of a study
restricted to one of its two regions. Everything is drawn with numpy's seeded ``Generator``;
each part has its own sub-seed, the first 8 bytes of sha256("<seed>:<name>").
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]

REGIONS = ("Urban", "Industrial", "Suburban", "Rural")
TYPES = ("R", "M", "N", "C")
TYPE_MIX = np.array([[0.40, 0.25, 0.15, 0.20],   # Urban
                     [0.15, 0.15, 0.45, 0.25],   # Industrial
                     [0.15, 0.40, 0.10, 0.35],   # Suburban
                     [0.15, 0.20, 0.10, 0.55]])  # Rural
WEIBULL = {"R": (40.0, 2.0), "M": (18.0, 2.0), "N": (8.0, 2.5), "C": (24.0, 1.8)}
"""Median survival (months) and shape per type; scale = median / ln(2)^(1/shape)."""
HORIZONS = (12, 24, 36)
ADMIN_CENSOR, RANDOM_CENSOR_P = 72.0, 0.10
POPULATION_SIZE = 50_000

# Per type (R, M, N, C): mean, sd; then the clipping range and rounding of the value.
COVARIATES: dict[str, tuple[tuple[float, ...], tuple[float, ...], float, float, int]] = {
    "age": ((35, 55, 50, 65), (10, 10, 10, 9), 18, 95, 0),
    "education": ((11, 16, 12, 17), (2.5, 2.5, 2.5, 2.5), 0, 24, 0),
    "prb1": ((23, 31, 25, 29), (3, 3, 3, 3), 5, 60, 1),
    "sbp": ((118, 145, 122, 138), (12, 14, 12, 14), 80, 220, 0),
    "glucose": ((90, 130, 95, 115), (12, 18, 12, 15), 50, 300, 0),
    "voc": ((1.0, 4.5, 6.0, 3.0), (1.0, 1.3, 1.4, 1.1), 0, 20, 2),
    "hhbp": ((3, 5, 10, 7), (1.5, 1.8, 2.2, 2.0), 0, 30, 2),
    "acron": ((6, 1, 2, 3), (1.6, 0.8, 1.0, 1.2), 0, 20, 1),
    "cognition": ((0.45, 0.70, 0.35, 0.85), (0.12, 0.12, 0.12, 0.10), 0, 1, 3),
}
AMBIENT_VOC = ((10.0, 2.0), (18.0, 3.0), (7.0, 1.5), (5.0, 1.0))  # by region
P_MALE = (0.5, 0.5, 0.7, 0.5)
GENOTYPE_P = ((0.80, 0.15, 0.05), (0.60, 0.25, 0.15), (0.10, 0.20, 0.70), (0.15, 0.35, 0.50))
FAMILY_HISTORY_P = (0.15, 0.40, 0.20, 0.45)
COMORBIDITY_MEAN = (0.5, 3.2, 1.0, 2.5)


def sub_seed(seed: int, name: str) -> int:
    """The seed of part ``name`` of the world drawn from ``seed``."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "big")


def weibull_scale(median: float, shape: float) -> float:
    return float(median / math.log(2.0) ** (1.0 / shape))


def type_survival(t: float) -> Array:
    """S_type(t) for the four types, in :data:`TYPES` order."""
    return np.array([math.exp(-((t / weibull_scale(m, k)) ** k)) for m, k in WEIBULL.values()])


def make_population(seed: int, size: int = POPULATION_SIZE) -> dict[str, Array]:
    """The canonical population: one array per variable (``type`` and ``region`` as indices,
    ``sex`` 1 = male, ``genotype`` 1-3, ``family_history`` a count of affected relatives,
    ``time`` in months, ``event`` 1 = death observed)."""
    rng = np.random.default_rng(sub_seed(seed, "population"))
    region = rng.integers(0, len(REGIONS), size)
    cum = np.cumsum(TYPE_MIX, axis=1)[region]
    kind = (rng.random(size)[:, None] > cum).sum(axis=1).clip(0, len(TYPES) - 1)
    pop: dict[str, Array] = {"region": region, "type": kind}
    for var, (means, sds, lo, hi, digits) in COVARIATES.items():
        value = rng.normal(np.array(means)[kind], np.array(sds)[kind]).clip(lo, hi)
        pop[var] = value.round(digits)
    amb = np.array(AMBIENT_VOC)[region]
    pop["ambient_voc"] = rng.normal(amb[:, 0], amb[:, 1]).clip(1.0, None).round(2)
    pop["sex"] = (rng.random(size) < np.array(P_MALE)[kind]).astype(int)
    gcum = np.cumsum(GENOTYPE_P, axis=1)[kind]
    pop["genotype"] = 1 + (rng.random(size)[:, None] > gcum).sum(axis=1).clip(0, 2)
    affected = rng.random(size) < np.array(FAMILY_HISTORY_P)[kind]
    pop["family_history"] = affected * (1 + rng.poisson(0.4, size))
    pop["comorbidity"] = rng.poisson(np.array(COMORBIDITY_MEAN)[kind])
    shape = np.array([k for _, k in WEIBULL.values()])[kind]
    scale = np.array([weibull_scale(m, k) for m, k in WEIBULL.values()])[kind]
    death = scale * rng.weibull(shape)
    censor = np.where(rng.random(size) < RANDOM_CENSOR_P, rng.uniform(0, ADMIN_CENSOR, size),
                      ADMIN_CENSOR)
    pop["time"] = np.minimum(death, censor).round(2).clip(0.01, None)
    pop["event"] = (death <= censor).astype(int)
    return pop


# --- codings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coding:
    """How a study stores one canonical variable in one column.

    ``scale``: value = canonical * factor, rounded to ``digits``; ``bins``: the label of the
    interval [edges[i-1], edges[i]) the value falls in (decoded to a representative value
    inside it); ``labels``: a value from a small set (genotype 1-3, sex 0/1, event 0/1, family
    history present 0/1) mapped to a label; ``score``: a cognition instrument, round(offset +
    factor * ability) clipped to [0, top].
    """

    kind: str
    factor: float = 1.0
    digits: int = 2
    edges: tuple[float, ...] = ()
    labels: tuple[Any, ...] = ()
    reps: tuple[float, ...] = ()
    offset: float = 0.0
    top: float = 0.0

    def encode(self, values: Array) -> list[Any]:
        if self.kind == "scale":
            scaled = (values * self.factor).round(self.digits)
            return [int(v) for v in scaled] if self.digits == 0 else [float(v) for v in scaled]
        if self.kind == "bins":
            return [self.labels[i] for i in np.searchsorted(self.edges, values, side="right")]
        if self.kind == "labels":
            return [self.labels[int(v)] for v in values]
        return [int(v) for v in (self.offset + self.factor * values).round().clip(0, self.top)]

    def decode(self, value: Any) -> float | None:
        """The canonical value of a stored one (a bin's representative), None if unreadable."""
        if value is None:
            return None
        try:
            if self.kind == "scale":
                return float(value) / self.factor
            if self.kind in ("bins", "labels"):
                text = [str(x) for x in self.labels].index(str(value))
                return float(self.reps[text]) if self.kind == "bins" else float(text)
            return (float(value) - self.offset) / self.factor
        except ValueError:
            return None


@dataclass(frozen=True)
class Column:
    name: str
    variable: str  # canonical variable
    coding: Coding
    description: str


def _scale(factor: float = 1.0, digits: int = 2) -> Coding:
    return Coding("scale", factor=factor, digits=digits)


def _bins(edges: tuple[float, ...], labels: tuple[str, ...], reps: tuple[float, ...]) -> Coding:
    return Coding("bins", edges=edges, labels=labels, reps=reps)


def _labels(*labels: Any) -> Coding:
    return Coding("labels", labels=labels)


MONTHS, DAYS = _scale(1.0, 2), _scale(30.4375, 0)
AGE_BANDS = _bins((30, 40, 50, 60, 70, 80), ("18-29", "30-39", "40-49", "50-59", "60-69",
                                             "70-79", "80+"), (24, 35, 45, 55, 65, 75, 85))
EDUCATION_LEVELS = _bins((10, 13), ("primary", "secondary", "tertiary"), (8, 11.5, 15))
PRB1_CATEGORIES = _bins((25, 30), ("low", "normal", "high"), (22, 27.5, 33))
MMSE = Coding("score", factor=15, offset=15, top=30)
MOCA = Coding("score", factor=15, offset=12, top=30)
AD8 = Coding("score", factor=-8, offset=8, top=8)


@dataclass(frozen=True)
class Study:
    """A cohort study: whom it enrols (regions, weight per type, target size), what it
    measures and how (its columns), and how it describes itself."""

    name: str
    regions: tuple[str, str]
    weights: tuple[float, float, float, float]
    size: int
    description: str
    enrolment: str
    columns: tuple[Column, ...]

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(c.variable for c in self.columns) - {"time", "event"}

    def column_of(self, variable: str) -> Column | None:
        return next((c for c in self.columns if c.variable == variable), None)


def _c(name: str, variable: str, coding: Coding, description: str) -> Column:
    return Column(name, variable, coding, description)


STUDIES: dict[str, Study] = {s.name: s for s in (
    Study("HERALD", ("Suburban", "Rural"), (0.3, 1.2, 0.3, 1.5), 400,
          "A registry of patients followed at district clinics, with genetic testing.",
          "Enrols patients referred by general practitioners; referrals favour patients "
          "with an established diagnosis.",
          (_c("patient_id", "id", _scale(1, 0), "row identifier"),
           _c("followup_months", "time", MONTHS, "months from enrolment to death or censoring"),
           _c("died", "event", _labels(0, 1), "1 = death observed, 0 = censored"),
           _c("age_years", "age", _scale(1, 0), "age at enrolment, years"),
           _c("sex", "sex", _labels("F", "M"), "F or M"),
           _c("years_of_education", "education", _scale(1, 0), "completed years of schooling"),
           _c("genotype", "genotype", _labels(None, "GG-1", "GG-2", "GG-3"),
              "Vardan locus genotype: GG-1, GG-2 or GG-3"),
           _c("family_history_count", "family_history", _scale(1, 0),
              "number of first-degree relatives with the disease"),
           _c("mmse_score", "cognition", MMSE, "Mini-Mental State Examination, 0-30 "
              "(higher is better)"),
           _c("hhbp_serum_level", "hhbp", _scale(1, 2), "serum HHBP, ng/mL"),
           _c("comorbidity_count", "comorbidity", _scale(1, 0), "number of comorbidities"),
           _c("systolic_bp", "sbp", _scale(1, 0), "systolic blood pressure, mmHg"))),
    Study("MERIDIAN", ("Suburban", "Rural"), (0.2, 2.0, 0.4, 1.5), 380,
          "A pharmacology cohort recording use of the over-the-counter drug Acron.",
          "Recruits through pharmacies; regular customers with chronic conditions are "
          "over-represented.",
          (_c("subject_id", "id", _scale(1, 0), "row identifier"),
           _c("time_months", "time", MONTHS, "months of follow-up"),
           _c("status", "event", _labels("censored", "dead"), "'dead' or 'censored'"),
           _c("age", "age", _scale(1, 0), "age at enrolment, years"),
           _c("is_male", "sex", _labels(0, 1), "1 = male, 0 = female"),
           _c("acron_monthly_doses", "acron", _scale(4, 1),
              "Acron doses per four weeks (four times the weekly average)"),
           _c("prb1_category", "prb1", PRB1_CATEGORIES,
              "PRB1 metabolic ratio category: low (< 25), normal (25 to < 30), high (>= 30)"),
           _c("family_history", "family_history", _labels("no", "yes"),
              "'yes' if any first-degree relative had the disease"),
           _c("hhbp_serum_level", "hhbp", _scale(1, 2), "serum HHBP, ng/mL"),
           _c("moca_score", "cognition", MOCA, "Montreal Cognitive Assessment, 0-30 "
              "(higher is better)"),
           _c("fasting_glucose", "glucose", _scale(1, 0), "fasting glucose, mg/dL"))),
    Study("MOSAIC", ("Urban", "Suburban"), (0.3, 2.0, 0.2, 1.5), 320,
          "An environmental-health study measuring personal and ambient VOC exposure with "
          "the PRB1 metabolic ratio.",
          "Volunteers answering a public call; health-conscious professionals "
          "are over-represented.",
          (_c("id", "id", _scale(1, 0), "row identifier"),
           _c("surv_months", "time", MONTHS, "months of follow-up"),
           _c("event", "event", _labels(0, 1), "1 = died, 0 = alive at last contact"),
           _c("age_at_enrolment", "age", _scale(1, 0), "years"),
           _c("gender", "sex", _labels("female", "male"), "female or male"),
           _c("voc_mg_l", "voc", _scale(1, 2), "personal VOC exposure, mg/L"),
           _c("ambient_voc_mg_m3", "ambient_voc", _scale(1, 2),
              "ambient VOC at home address, mg/m3"),
           _c("prb1_ratio", "prb1", _scale(1, 1), "PRB1 metabolic ratio"),
           _c("education_level", "education", EDUCATION_LEVELS,
              "primary (< 10 years), secondary (10-12 years), tertiary (13+ years)"),
           _c("glucose_mmol_l", "glucose", _scale(1 / 18, 2), "fasting glucose, mmol/L"),
           _c("sbp_mmhg", "sbp", _scale(1, 0), "systolic blood pressure, mmHg"))),
    Study("FORGE", ("Industrial", "Urban"), (0.5, 0.2, 1.8, 0.4), 380,
          "An occupational cohort of workers in chemical plants, with exposure monitoring.",
          "Enrols employees at plant health checks; exposed shift workers dominate.",
          (_c("worker_id", "id", _scale(1, 0), "row identifier"),
           _c("followup_days", "time", DAYS, "days of follow-up"),
           _c("deceased", "event", _labels("false", "true"), "'true' if the worker died"),
           _c("age_band", "age", AGE_BANDS, "age band at enrolment: 18-29, 30-39, ..., 80+"),
           _c("sex_code", "sex", _labels(2, 1), "1 = male, 2 = female"),
           _c("voc_ug_l", "voc", _scale(1000, 0), "personal VOC exposure, micrograms/L"),
           _c("ambient_voc_ug_m3", "ambient_voc", _scale(1000, 0),
              "ambient VOC at the plant, micrograms/m3"),
           _c("gg_variant", "genotype", _labels(None, 1, 2, 3), "Vardan locus variant 1, 2 or 3 "
              "(= GG-1, GG-2, GG-3)"),
           _c("acron_use_avg", "acron", _scale(1, 1), "Acron doses per week"),
           _c("n_comorbidities", "comorbidity", _scale(1, 0), "number of comorbidities"))),
    Study("CADENCE", ("Urban", "Industrial"), (1.2, 0.3, 0.1, 0.3), 380,
          "A cognitive-ageing cohort screening with the AD8 questionnaire.",
          "Recruits at community centres; younger, active residents are over-represented.",
          (_c("pid", "id", _scale(1, 0), "row identifier"),
           _c("months_observed", "time", MONTHS, "months of follow-up"),
           _c("death", "event", _labels(0, 1), "1 = died during follow-up"),
           _c("age", "age", _scale(1, 0), "years"),
           _c("sex", "sex", _labels("F", "M"), "F or M"),
           _c("education_years", "education", _scale(1, 0), "years of schooling"),
           _c("ad8_score", "cognition", AD8, "AD8 dementia screen, 0-8 (higher is worse)"),
           _c("ambient_voc_mg_m3", "ambient_voc", _scale(1, 2),
              "ambient VOC at home address, mg/m3"),
           _c("genotype", "genotype", _labels(None, "GG-1", "GG-2", "GG-3"),
              "Vardan locus genotype"),
           _c("hhbp_nmol_l", "hhbp", _scale(2.5, 3), "serum HHBP, nmol/L (2.5 x ng/mL)"),
           _c("systolic_bp", "sbp", _scale(1, 0), "systolic blood pressure, mmHg"))),
)}
STUDY_ORDER = ("HERALD", "MERIDIAN", "MOSAIC", "FORGE", "CADENCE")


def encoded(study: Study, pop: dict[str, Array], rows: Array) -> list[dict[str, Any]]:
    """The rows ``rows`` of the population as ``study`` stores them (column -> value)."""
    out: list[dict[str, Any]] = [{} for _ in rows]
    for column in study.columns:
        if column.variable == "id":
            values: list[Any] = list(range(1, len(rows) + 1))
        elif column.variable == "family_history" and column.coding.kind == "labels":
            values = column.coding.encode((pop["family_history"][rows] > 0).astype(int))
        else:
            values = column.coding.encode(pop[column.variable][rows])
        for record, value in zip(out, values, strict=True):
            record[column.name] = value
    return out


def enrol(seed: int, study: Study, pop: dict[str, Array], draw: int) -> Array:
    """Population indices of draw ``draw`` of ``study``: members of its regions, accepted with
    probability weight(type) / max weight, in random order, the first ``study.size``."""
    rng = np.random.default_rng(sub_seed(seed, f"study:{study.name}:{draw}"))
    allowed = np.isin(pop["region"], [REGIONS.index(r) for r in study.regions])
    weight = np.array(study.weights)[pop["type"]] / max(study.weights)
    accepted = np.flatnonzero(allowed & (rng.random(len(weight)) < weight))
    picked = rng.permutation(accepted)[:study.size]
    return np.sort(picked)


@dataclass(frozen=True)
class InstanceSpec:
    """One instance: a study's draw restricted to one of its regions."""

    instance_id: str
    study: str
    region: str
    draw: int


def instance_specs(draws: int = 2) -> list[InstanceSpec]:
    """Every instance of the default schedule, in its order: per study, region-major."""
    return [InstanceSpec(f"{name.lower()}-{region.lower()}-{d}", name, region, d)
            for name in STUDY_ORDER for region in STUDIES[name].regions
            for d in range(1, draws + 1)]
