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

The metrics are plain Python over lists of counts (a running sum, one division per point):
``score seqmem`` is a short process, and a numeric library's import would cost it more than
the arithmetic (benchmarks/README.md, "Scoring").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import accumulate, compress, groupby, repeat
from operator import add, eq, itemgetter, sub, truediv
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError
from clstream.core.jsonio import flat_json_lines
from clstream.metrics.exact import exact_mean, least_squares_slope

__all__ = [
    "SeqMemRecords",
    "bwt",
    "forgetting",
    "forgetting_by_horizon",
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


def _as_list(correct: Iterable[float]) -> list[float]:
    values = list(correct)
    if not values:
        raise ValueError("online correctness must be a non-empty sequence (A(1)..A(T))")
    return values


def online_curve(correct: Iterable[float]) -> list[float]:
    """Abar(tau) = (1/tau) * sum_{i<=tau} A(i) for tau = 1..T (SeqMem-Eval eq. 2).

    Correctness is 0 or 1, so every running sum is a whole number held exactly and each point
    is one correctly rounded division.
    """
    values = _as_list(correct)
    return list(map(truediv, accumulate(values), range(1, len(values) + 1)))


def online_acc(correct: Iterable[float]) -> float:
    """OnlineAcc = Abar(T): the cumulative online accuracy at the end of the stream."""
    return float(online_curve(correct)[-1])


def ped(correct: Iterable[float]) -> float:
    """PED = max_tau Abar(tau) - Abar(T) (peak-to-end degradation, SeqMem-Eval eq. 4)."""
    curve = online_curve(correct)
    return float(max(curve) - curve[-1])


def mer(correct: Iterable[float]) -> float:
    """MER = Abar(T) - min_tau Abar(tau) (minimum-to-end recovery, SeqMem-Eval eq. 5)."""
    curve = online_curve(correct)
    return float(curve[-1] - min(curve))


def r_min(correct: Iterable[float]) -> float:
    """r_min = (first argmin_tau Abar(tau)) / T with tau 1-based (SeqMem-Eval eq. 6).

    docs/seqmem.md §5.5 fixes the tie rule the paper leaves open: the earliest minimum wins. The
    comparison is exact (cross-multiplied integer counts), so equal fractions such as 1/3 and
    2/6 tie regardless of floating-point rounding.
    """
    counts = list(accumulate(_as_list(correct)))
    best_tau, best_count = 1, counts[0]
    for tau, count in enumerate(counts[1:], 2):
        if count * best_tau < best_count * tau:  # count/tau < best_count/best_tau
            best_tau, best_count = tau, count
    return best_tau / len(counts)


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


def _retro_minus(values: Sequence[float], retro_t: Mapping[int, float]) -> list[float]:
    """retro_t[tau] - values[tau - 1] for every tau of ``retro_t``, in C."""
    return list(map(sub, retro_t.values(), map(values.__getitem__,
                                               map(sub, retro_t.keys(), repeat(1)))))


def bwt(correct: Iterable[float], retro_t: Mapping[int, float]) -> float:
    """BWT(t) = mean over re-evaluated tau of [Acc(x_tau; M_{tau+t}) - A(tau)] (eq. 9).

    ``retro_t`` maps tau to the correctness at one horizon t. The paper averages over
    tau = 1..T-t; docs/seqmem.md §5.8 reads a sampled re-evaluation as averaging over the tau actually
    re-evaluated, which equals the paper's formula when every tau <= T-t is present.
    """
    values = _as_list(correct)
    if not retro_t:
        raise ValueError("no re-evaluated tasks at this horizon")
    return exact_mean(_retro_minus(values, retro_t))


def iv(correct: Iterable[float], retro: Mapping[int, Mapping[int, float]]) -> float:
    """IV = BWT(1): does one memory update make the task just seen answerable (eq. 10)."""
    if 1 not in retro:
        raise ValueError("immediate validity needs re-evaluations at horizon 1")
    return bwt(correct, retro[1])


def forgetting(
    correct: Iterable[float], retro: Mapping[int, Mapping[int, float]], t: int
) -> float:
    """F(t) with the checkpoint approximation of SeqMem-Eval eq. 11-12.

    F(t) = mean over tau re-evaluated at horizon t of
    [max_{t_i in horizons, t_i <= t} Acc(x_tau; M_{tau+t_i}) - Acc(x_tau; M_{tau+t})],
    where t_i = 0 is the online answer A(tau) (docs/seqmem.md §5.10). A smaller horizon enters the max
    for a tau only if that tau was re-evaluated there.
    """
    if t not in retro or not retro[t]:
        raise ValueError(f"no re-evaluated tasks at horizon {t}")
    return forgetting_by_horizon(correct, {h: retro[h] for h in retro if h <= t})[t]


def forgetting_by_horizon(correct: Iterable[float], retro: Mapping[int, Mapping[int, float]]
                          ) -> dict[int, float]:
    """:func:`forgetting` at every horizon of ``retro`` that has re-evaluated tasks, in one
    pass over the horizons from the smallest: each tau's best correctness so far (its online
    answer, then each horizon's where it was re-evaluated) is kept and raised as the horizons
    go up, instead of being searched again at every horizon."""
    best = _as_list(correct)
    out: dict[int, float] = {}
    for t in sorted(retro):
        retro_t = retro[t]
        if not retro_t:
            continue
        where = list(map(sub, retro_t.keys(), repeat(1)))
        raised = list(map(max, map(best.__getitem__, where), retro_t.values()))
        deque(map(best.__setitem__, where, raised), maxlen=0)  # in C, keeps nothing
        out[t] = exact_mean(list(map(sub, raised, retro_t.values())))
    return out


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


def _column(rows: list[dict[str, Any]], name: str) -> list[Any]:
    """Field ``name`` of every row (None where a row lacks it)."""
    return list(map(dict.get, rows, repeat(name)))


def _whole(values: list[Any], low: int) -> bool:
    """Every value an integer (not a boolean) >= ``low``."""
    return set(map(type, values)) <= {int} and min(values, default=low) >= low


def _scores(values: list[Any]) -> list[int] | None:
    """Correctness as 0/1 integers where every value is 0, 1, true or false; else None."""
    types = set(map(type, values))
    if not (types <= {int, bool} and set(values) <= {0, 1}):
        return None
    return list(map(int, values)) if bool in types else values


def _records_in_bulk(rows: list[dict[str, Any]], source: str) -> SeqMemRecords | None:
    """The records of a file of flat objects when every line passes the checks of
    :func:`records_from_rows`, each check made over all lines of a kind at once (in C,
    mostly); None when any fails, so that the line-by-line reading names the line."""
    kinds = _column(rows, "kind")
    online_rows, holdout_rows, retro_rows = (list(compress(rows, map(eq, kinds, repeat(kind))))
                                             for kind in ("online", "holdout", "retro"))
    if len(online_rows) + len(holdout_rows) + len(retro_rows) != len(rows):
        return None  # another kind
    n = len(online_rows)
    taus, scores = _column(online_rows, "tau"), _scores(_column(online_rows, "correct"))
    # Distinct taus >= 1 whose largest is their count: exactly 1..T.
    if not n or scores is None or not _whole(taus, 1) or max(taus) != n or len(set(taus)) != n:
        return None
    online = [0] * n
    deque(map(online.__setitem__, map(sub, taus, repeat(1)), scores), maxlen=0)

    checkpoints, items = _column(holdout_rows, "checkpoint"), _column(holdout_rows, "item")
    held = _scores(_column(holdout_rows, "correct"))
    if held is None or not _whole(checkpoints, 0) or max(checkpoints, default=0) > n \
            or not set(map(type, items)) <= {str} or not all(items):
        return None
    holdout: dict[int, dict[str, int]] = {}
    for k, item, correct in zip(checkpoints, items, held, strict=True):
        holdout.setdefault(k, {})[item] = correct
    if sum(map(len, holdout.values())) != len(holdout_rows):
        return None  # a duplicate (checkpoint, item)
    if len({frozenset(per_k) for per_k in holdout.values()}) > 1:
        return None  # checkpoints that hold different items

    taus, horizons = _column(retro_rows, "tau"), _column(retro_rows, "horizon")
    re_scores = _scores(_column(retro_rows, "correct"))
    if re_scores is None or not _whole(taus, 1) or not _whole(horizons, 1) \
            or max(map(add, taus, horizons), default=0) > n:
        return None
    retro: dict[int, dict[int, int]] = {}
    for t, group in groupby(sorted(zip(horizons, taus, re_scores, strict=True)), itemgetter(0)):
        retro[t] = dict(map(itemgetter(1, 2), group))
    if sum(map(len, retro.values())) != len(retro_rows):
        return None  # a duplicate (tau, horizon)
    return SeqMemRecords(online=online, holdout=dict(sorted(holdout.items())), retro=retro,
                         source=source)


def load_seqmem_records(path: str | Path) -> SeqMemRecords:
    """Read and validate a SeqMem records file (JSONL, docs/seqmem.md §3.1): the usual file
    (every line a flat object) checked in bulk, any other line by line, with the same
    values and the same errors (:func:`records_from_rows`)."""
    source = str(Path(path))
    read = flat_json_lines(source)
    if isinstance(read, list):
        records = _records_in_bulk(read, source)
        if records is not None:
            return records
    return records_from_rows(enumerate(read, start=1) if isinstance(read, list) else read,
                             source=source)


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
        by_horizon = forgetting_by_horizon(a, records.retro)
        out["forgetting"] = {str(t): by_horizon[t] for t in horizons}
        if 1 in records.retro:
            out["iv"] = iv(a, records.retro)
    return out
