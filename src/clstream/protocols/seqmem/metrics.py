"""SeqMem-Eval metrics over stored records (SeqMem-Eval §3.2-3.5; docs/seqmem.md §5, §3).

Every metric is a pure function of what a run stored, so ``clstream score seqmem`` gives the
same numbers for a finished run, a resumed one, or a file a user wrote by hand.

Notation (docs/seqmem.md §5): ``A[tau-1]`` is the online correctness of task x_tau answered under
M_tau (tau = 1..T); ``H[k]`` the hold-out accuracy under the state reached after k tasks;
``retro[t][tau]`` the correctness of x_tau re-answered under M_{tau+t}.

Records file (docs/seqmem.md §3.1), JSON lines in any order, each exactly one of::

    {"kind": "online",  "tau": 1..T, "correct": 0|1}
    {"kind": "holdout", "checkpoint": 0..T, "item": "<id>", "correct": 0|1}
    {"kind": "retro",   "tau": 1..T, "horizon": t >= 1, "correct": 0|1}

Other fields on a line are allowed and ignored (runs may store outputs next to the scores).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from clstream.core.errors import DataError
from clstream.core.jsonio import iter_json_lines_fast
from clstream.metrics.exact import exact_mean, least_squares_slope

__all__ = [
    "SeqMemRecords",
    "bwt",
    "forgetting",
    "holdout_acc",
    "holdout_curve",
    "iv",
    "load_seqmem_records",
    "mer",
    "online_acc",
    "online_curve",
    "ped",
    "r_min",
    "records_from_rows",
    "score_seqmem",
    "trend_ho",
]


def _as_array(correct: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(correct, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("online correctness must be a non-empty 1-D sequence (A(1)..A(T))")
    return arr


def online_curve(correct: Sequence[int] | np.ndarray) -> np.ndarray:
    """Abar(tau) = (1/tau) * sum_{i<=tau} A(i) for tau = 1..T (SeqMem-Eval eq. 2).

    Correctness is 0 or 1, so every running sum is a whole number held exactly and each point
    is one correctly rounded division, whatever order numpy adds in.
    """
    arr = _as_array(correct)
    return np.cumsum(arr) / np.arange(1, arr.size + 1)


def online_acc(correct: Sequence[int] | np.ndarray) -> float:
    """OnlineAcc = Abar(T): the cumulative online accuracy at the end of the stream."""
    return float(online_curve(correct)[-1])


def ped(correct: Sequence[int] | np.ndarray) -> float:
    """PED = max_tau Abar(tau) - Abar(T) (peak-to-end degradation, SeqMem-Eval eq. 4)."""
    curve = online_curve(correct)
    return float(curve.max() - curve[-1])


def mer(correct: Sequence[int] | np.ndarray) -> float:
    """MER = Abar(T) - min_tau Abar(tau) (minimum-to-end recovery, SeqMem-Eval eq. 5)."""
    curve = online_curve(correct)
    return float(curve[-1] - curve.min())


def r_min(correct: Sequence[int] | np.ndarray) -> float:
    """r_min = (first argmin_tau Abar(tau)) / T with tau 1-based (SeqMem-Eval eq. 6).

    docs/seqmem.md §5.5 fixes the tie rule the paper leaves open: the earliest minimum wins. The
    comparison is exact (cross-multiplied integer counts), so equal fractions such as 1/3 and
    2/6 tie regardless of floating-point rounding.
    """
    arr = _as_array(correct)
    counts = np.cumsum(arr)
    best_tau, best_count = 1, counts[0]
    for tau in range(2, arr.size + 1):
        count = counts[tau - 1]
        if count * best_tau < best_count * tau:  # count/tau < best_count/best_tau
            best_tau, best_count = tau, count
    return best_tau / arr.size


def holdout_curve(holdout: Mapping[int, Mapping[str, int]]) -> dict[int, float]:
    """H(k) = (1/M) * sum_i Acc(x_i^test; state after k tasks), per checkpoint k (eq. 7)."""
    curve: dict[int, float] = {}
    for k in sorted(holdout):
        items = holdout[k]
        if not items:
            raise ValueError(f"checkpoint {k} has no hold-out items")
        curve[k] = float(sum(items.values())) / len(items)
    return curve


def holdout_acc(curve: Mapping[int, float]) -> float:
    """HoldOutAcc = H at the last checkpoint (the final memory state when K includes T)."""
    if not curve:
        raise ValueError("no hold-out checkpoints")
    return float(curve[max(curve)])


def trend_ho(curve: Mapping[int, float | Fraction], n_tasks: int) -> float | None:
    """Trend_HO = least-squares slope of H(k) against k/T over checkpoints k >= 1 (eq. 8).

    docs/seqmem.md §5.7: checkpoint 0 (the memory-free state) is reported but not fitted; with fewer
    than two fitted checkpoints there is no slope and the result is None. The slope is the
    correctly rounded value of the exact fit of H(k) against the exact fractions k/T
    (:func:`~clstream.metrics.exact.least_squares_slope`), the same on every machine; pass H(k)
    as fractions (:func:`score_seqmem` does) to fit the exact accuracies.
    """
    ks = [k for k in sorted(curve) if k >= 1]
    if len(ks) < 2:
        return None
    return least_squares_slope([Fraction(k, n_tasks) for k in ks], [curve[k] for k in ks])


def bwt(correct: Sequence[int] | np.ndarray, retro_t: Mapping[int, int]) -> float:
    """BWT(t) = mean over re-evaluated tau of [Acc(x_tau; M_{tau+t}) - A(tau)] (eq. 9).

    ``retro_t`` maps tau to the correctness at one horizon t. The paper averages over
    tau = 1..T-t; docs/seqmem.md §5.8 reads a sampled re-evaluation as averaging over the tau actually
    re-evaluated, which equals the paper's formula when every tau <= T-t is present.
    """
    arr = _as_array(correct)
    if not retro_t:
        raise ValueError("no re-evaluated tasks at this horizon")
    diffs = [retro_t[tau] - arr[tau - 1] for tau in sorted(retro_t)]
    return exact_mean(diffs)


def iv(correct: Sequence[int] | np.ndarray, retro: Mapping[int, Mapping[int, int]]) -> float:
    """IV = BWT(1): does one memory update make the task just seen answerable (eq. 10)."""
    if 1 not in retro:
        raise ValueError("immediate validity needs re-evaluations at horizon 1")
    return bwt(correct, retro[1])


def forgetting(
    correct: Sequence[int] | np.ndarray, retro: Mapping[int, Mapping[int, int]], t: int
) -> float:
    """F(t) with the checkpoint approximation of SeqMem-Eval eq. 11-12.

    F(t) = mean over tau re-evaluated at horizon t of
    [max_{t_i in horizons, t_i <= t} Acc(x_tau; M_{tau+t_i}) - Acc(x_tau; M_{tau+t})],
    where t_i = 0 is the online answer A(tau) (docs/seqmem.md §5.10). A smaller horizon enters the max
    for a tau only if that tau was re-evaluated there.
    """
    arr = _as_array(correct)
    if t not in retro or not retro[t]:
        raise ValueError(f"no re-evaluated tasks at horizon {t}")
    smaller = [h for h in sorted(retro) if h <= t]
    drops = []
    for tau in sorted(retro[t]):
        best = arr[tau - 1]
        for h in smaller:
            value = retro[h].get(tau)
            if value is not None and value > best:
                best = value
        drops.append(best - retro[t][tau])
    return exact_mean(drops)


@dataclass
class SeqMemRecords:
    """Validated SeqMem records: online[tau-1], holdout[k][item], retro[t][tau] (all 0/1)."""

    online: list[int]
    holdout: dict[int, dict[str, int]] = field(default_factory=dict)
    retro: dict[int, dict[int, int]] = field(default_factory=dict)
    source: str = "<records>"

    @property
    def n_tasks(self) -> int:
        return len(self.online)


def _int_field(path: str, line: int, row: Mapping[str, Any], name: str, low: int) -> int:
    if name not in row:
        raise DataError(path, f"line {line}", name, "missing")
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(path, f"line {line}", name, f"must be an integer, got {value!r}")
    if value < low:
        raise DataError(path, f"line {line}", name, f"must be >= {low}, got {value}")
    return value


def _correct_field(path: str, line: int, row: Mapping[str, Any]) -> int:
    if "correct" not in row:
        raise DataError(path, f"line {line}", "correct", "missing")
    value = row["correct"]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    raise DataError(path, f"line {line}", "correct", f"must be 0 or 1, got {value!r}")


def records_from_rows(
    rows: Iterable[tuple[int, Mapping[str, Any]]], source: str = "<records>"
) -> SeqMemRecords:
    """Validate ``(line number, record)`` pairs into :class:`SeqMemRecords`.

    Raises :class:`DataError` naming the source, the line and the field for a malformed
    record, a duplicate (kind, tau, horizon) or (checkpoint, item), online records that do
    not cover tau = 1..T exactly, checkpoints or horizons beyond T, and hold-out checkpoints
    that do not all hold the same items.
    """
    online: dict[int, tuple[int, int]] = {}
    holdout: dict[int, dict[str, tuple[int, int]]] = {}
    retro: dict[int, dict[int, tuple[int, int]]] = {}
    for line, row in rows:
        if not isinstance(row, Mapping):
            raise DataError(source, f"line {line}", None, "a record must be a JSON object")
        kind = row.get("kind")
        if kind == "online":
            tau = _int_field(source, line, row, "tau", 1)
            correct = _correct_field(source, line, row)
            if tau in online:
                raise DataError(
                    source,
                    f"line {line}",
                    "tau",
                    f"duplicate online record for tau {tau} (first at line {online[tau][1]})",
                )
            online[tau] = (correct, line)
        elif kind == "holdout":
            k = _int_field(source, line, row, "checkpoint", 0)
            item = row.get("item")
            if not isinstance(item, str) or not item:
                raise DataError(
                    source, f"line {line}", "item", f"must be a non-empty string, got {item!r}"
                )
            correct = _correct_field(source, line, row)
            per_k = holdout.setdefault(k, {})
            if item in per_k:
                raise DataError(
                    source,
                    f"line {line}",
                    "item",
                    f"duplicate holdout record for checkpoint {k} item {item!r} "
                    f"(first at line {per_k[item][1]})",
                )
            per_k[item] = (correct, line)
        elif kind == "retro":
            tau = _int_field(source, line, row, "tau", 1)
            horizon = _int_field(source, line, row, "horizon", 1)
            correct = _correct_field(source, line, row)
            per_t = retro.setdefault(horizon, {})
            if tau in per_t:
                raise DataError(
                    source,
                    f"line {line}",
                    "tau",
                    f"duplicate retro record for tau {tau} horizon {horizon} "
                    f"(first at line {per_t[tau][1]})",
                )
            per_t[tau] = (correct, line)
        else:
            raise DataError(
                source,
                f"line {line}",
                "kind",
                f"must be 'online', 'holdout' or 'retro', got {kind!r}",
            )
    return _check_coverage(source, online, holdout, retro)


def _check_coverage(
    source: str,
    online: dict[int, tuple[int, int]],
    holdout: dict[int, dict[str, tuple[int, int]]],
    retro: dict[int, dict[int, tuple[int, int]]],
) -> SeqMemRecords:
    if not online:
        raise DataError(source, None, "kind", "no online records (T must be at least 1)")
    n = len(online)
    for tau, (_, line) in sorted(online.items(), key=lambda kv: kv[1][1]):
        if tau > n:
            missing = min(set(range(1, n + 1)) - set(online))
            raise DataError(
                source,
                f"line {line}",
                "tau",
                f"online records must cover tau = 1..T with T = {n} (the number of "
                f"online records); tau {tau} is out of range and tau {missing} is missing",
            )
    for k, items in holdout.items():
        if k > n:
            line = min(line for _, line in items.values())
            raise DataError(source, f"line {line}", "checkpoint", f"checkpoint {k} exceeds T = {n}")
    for t, per_t in retro.items():
        for tau, (_, line) in per_t.items():
            if tau + t > n:
                raise DataError(
                    source,
                    f"line {line}",
                    "horizon",
                    f"tau {tau} + horizon {t} exceeds T = {n} (state M_{{tau+t}} "
                    f"must be one reached by the stream)",
                )
    if holdout:
        reference_k = min(holdout)
        reference = set(holdout[reference_k])
        for k in sorted(holdout):
            held = set(holdout[k])
            if held != reference:
                gap = sorted(reference - held) or sorted(held - reference)
                where = k if reference - held else reference_k
                raise DataError(
                    source,
                    None,
                    "item",
                    f"hold-out checkpoints must hold the same items: item {gap[0]!r} "
                    f"missing at checkpoint {where}",
                )
    return SeqMemRecords(
        online=[online[tau][0] for tau in range(1, n + 1)],
        holdout={k: {item: c for item, (c, _) in v.items()} for k, v in sorted(holdout.items())},
        retro={t: {tau: c for tau, (c, _) in sorted(v.items())} for t, v in sorted(retro.items())},
        source=source,
    )


def load_seqmem_records(path: str | Path) -> SeqMemRecords:
    """Read and validate a SeqMem records file (JSONL, docs/seqmem.md §3.1)."""
    p = Path(path)
    return records_from_rows(iter_json_lines_fast(str(p)), source=str(p))


def score_seqmem(records: SeqMemRecords | Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON ``clstream score seqmem RECORDS --json`` prints (docs/seqmem.md §3.2).

    Always: online_acc, ped, mer, r_min. With hold-out records: holdout_acc, and trend_ho when
    at least two checkpoints k >= 1 exist. With retro records: bwt and forgetting keyed by the
    horizon as a string, and iv when horizon 1 exists.
    """
    if not isinstance(records, SeqMemRecords):
        records = records_from_rows(enumerate(records, start=1))
    a = records.online
    out: dict[str, Any] = {
        "online_acc": online_acc(a),
        "ped": ped(a),
        "mer": mer(a),
        "r_min": r_min(a),
    }
    if records.holdout:
        curve = holdout_curve(records.holdout)
        out["holdout_acc"] = holdout_acc(curve)
        exact_curve = {k: Fraction(sum(items.values()), len(items))
                       for k, items in records.holdout.items()}
        trend = trend_ho(exact_curve, records.n_tasks)
        if trend is not None:
            out["trend_ho"] = trend
    if records.retro:
        horizons = sorted(records.retro)
        out["bwt"] = {str(t): bwt(a, records.retro[t]) for t in horizons}
        out["forgetting"] = {str(t): forgetting(a, records.retro, t) for t in horizons}
        if 1 in records.retro:
            out["iv"] = iv(a, records.retro)
    return out
