"""OAKS metrics: accuracy, intra-phase errors, transition behaviours, subsets (docs/oaks.md §5, §3).

Source: OAKS (Kim et al.), Appendix B.2 (equations 1-4) and the transition table of §6.1.
The metric functions are pure (arrays in, numbers out) so that ``clstream score oaks`` gives
the same numbers on any saved run or on a user's own predictions file; ``score_oaks`` only
judges every (question, interval) once and aggregates. ``load_predictions`` reads the
predictions JSONL of docs/oaks.md §3.2 strictly, naming file, line and field on any defect.

Everything is per question first, then averaged over questions (paper eq. 1), except the
transition table, which pools all intervals t = 2..C of all questions (docs/oaks.md §5.6). Averages
are taken over each question's exact fractions and rounded once
(:func:`~clstream.metrics.exact.exact_mean`): the correctly rounded value of the metric, the
same for every order of the questions and on every machine.

Subsets count a question's answer changes as the paper's tables do: its number of *phases*
(1 + the gold changes; an initial Unknown phase is a phase), the count behind App. B's ranges
"2-3, 4-5, 6-20" (OAKS-B) and "2-3, 4, 5-19" (OAKS-N).

A question's correctness is ``bytes``, one 0 or 1 per interval: counting hits, finding a
phase's first hit and counting its lapses are then ``count`` and ``find`` over a slice, in C,
and ``score oaks`` needs no numeric library (its start-up is a large part of its cost:
benchmarks/README.md, "Scoring").
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from operator import add, itemgetter, ne
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError, SpecError
from clstream.core.jsonio import JsonLinesFile, flat_json_lines
from clstream.metrics.exact import exact_mean
from clstream.protocols.oaks.answers import canonical_answer, golds_by_interval
from clstream.protocols.oaks.data import OaksDataset, OaksQuestion, equal_runs

INTRA_PHASE_KEYS = ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss")
# (GT change, model change, correct) -> behaviour, in the order of docs/oaks.md §5.6.
TRANSITIONS: dict[tuple[bool, bool, bool], str] = {
    (True, True, True): "adaptability",
    (True, True, False): "maladaptation",
    (True, False, True): "prescience",
    (True, False, False): "stubbornness",
    (False, True, True): "lag",
    (False, True, False): "volatility",
    (False, False, True): "stability",
    (False, False, False): "obstinacy",
}
TRANSITION_NAMES = tuple(TRANSITIONS.values())

# A bin table maps a subset name to the smallest number of phases it holds; a question falls
# in the last bin whose threshold it reaches. OAKS-B: sparse <= 3 phases, moderate 4-5,
# frequent >= 6; OAKS-N: sparse <= 3, moderate 4, frequent >= 5 (docs/oaks.md §5.7).
Bins = tuple[tuple[str, int], ...]
OAKS_B_BINS: Bins = (("sparse", 0), ("moderate", 4), ("frequent", 6))  # open-ended
OAKS_N_BINS: Bins = (("sparse", 0), ("moderate", 4), ("frequent", 5))  # multiple choice


def phases(canonical_golds: Sequence[str]) -> list[tuple[int, int]]:
    """Maximal runs of equal consecutive gold, as 0-based half-open ``(start, end)`` slices.

    A -> B -> A is three phases. ``canonical_golds[t-1]`` is the gold at interval t.
    """
    return equal_runs(canonical_golds)


_ZERO_OR_ONE = bytes([0] + [1] * 255)


def correctness(correct: Iterable[Any]) -> bytes:
    """Per-interval correctness as bytes of 0 and 1 (any true value is 1): the form the
    metrics below count in; ``bytes`` given are read as such (each non-zero byte is 1)."""
    if isinstance(correct, bytes):
        return correct.translate(_ZERO_OR_ONE)
    return bytes(map(bool, correct))


def question_metrics(correct: Iterable[Any], golds: Sequence[str]) -> dict[str, float]:
    """Accuracy, AL, DS and PM of one question (OAKS Appendix B.2, eqs. 1-4; docs/oaks.md §5.2-§5.5),
    each the correctly rounded value of :func:`question_fractions`."""
    return {k: float(v) for k, v in question_fractions(correct, golds).items()}


def question_fractions(correct: Iterable[Any], golds: Sequence[str]) -> dict[str, Fraction]:
    """Accuracy, AL, DS and PM of one question as exact fractions of its C intervals.

    With c_t the correctness at interval t, C intervals, phases k of length D_k and tau_k the
    1-based position of the first correct answer in phase k (0 if none):

        Accuracy = (1/C) sum_t c_t
        AL = (1/C) sum_k (tau_k - 1) [tau_k > 0]
        DS = (1/C) sum_k #{wrong intervals after tau_k in phase k} [tau_k > 0]
        PM = (1/C) sum_k D_k [tau_k = 0]

    The four sum to 1: every interval is correct, before the first hit, after it, or missed.
    """
    hits = correctness(correct)
    n = len(hits)
    if n == 0 or n != len(golds):
        raise ValueError(f"need one correctness per gold, got {n} and {len(golds)}")
    latency = lapses = missed = 0
    for start, end in phases(golds):
        first = hits.find(1, start, end)
        if first < 0:
            missed += end - start
        else:
            latency += first - start
            lapses += hits.count(0, first + 1, end)
    return {
        "accuracy": Fraction(hits.count(1), n),
        "acquisition_latency": Fraction(latency, n),
        "distraction_susceptibility": Fraction(lapses, n),
        "phase_miss": Fraction(missed, n),
    }


def n_changes(golds: Sequence[str]) -> int:
    """Number of t in 2..C with gold_t != gold_{t-1} (the first Unknown -> X counts)."""
    return sum(map(ne, golds[1:], golds[:-1]))


def n_phases(golds: Sequence[str]) -> int:
    """Number of phases: 1 + :func:`n_changes` (0 for no golds). An initial Unknown phase is a
    phase, so Unknown -> A -> B has 3. Subsets bin on this count (docs/oaks.md §5.7)."""
    return n_changes(golds) + 1 if len(golds) else 0


def check_bins(bins: Bins) -> Bins:
    """Validate a bin table: thresholds start at 0 and strictly increase, names are unique."""
    names = [name for name, _ in bins]
    lows = [low for _, low in bins]
    if not bins or lows[0] != 0 or any(b <= a for a, b in zip(lows, lows[1:], strict=False)):
        raise SpecError(f"subset bins {bins!r}: thresholds must start at 0 and increase")
    if len(set(names)) != len(names):
        raise SpecError(f"subset bins {bins!r}: names must be unique")
    return bins


def subset_of(phase_count: int, bins: Bins) -> str:
    """The subset (Sparse / Moderate / Frequent by default) of a question with ``phase_count``
    phases (:func:`n_phases`)."""
    name = bins[0][0]
    for candidate, low in bins:
        if phase_count >= low:
            name = candidate
    return name


def transition_counts(
    golds: Sequence[Sequence[str]],
    answers: Sequence[Sequence[str]],
    correct: Sequence[Iterable[Any]],
) -> dict[str, int]:
    """Counts of the eight behaviours over t = 2..C, pooled over questions (docs/oaks.md §5.6 table).

    Row j gives question j's canonical golds, canonical model answers and correctness per
    interval; GT change = gold_t != gold_{t-1}, model change = answer_t != answer_{t-1}.
    """
    # Each interval t >= 2 is coded 4 * GT change + 2 * model change + correct, one byte
    # each, by adding three 0/1 byte strings as numbers (no byte carries: each is 0 or 1);
    # then each behaviour is one count of its code, in C.
    by_code = [0] * 8
    for gold, answer, hits in zip(golds, answers, correct, strict=True):
        g, a, c = tuple(gold), tuple(answer), correctness(hits)
        if not len(g) == len(a) == len(c):
            raise ValueError("golds, answers and correctness differ in length")
        if len(c) < 2:
            continue  # no interval t >= 2
        gt_change = int.from_bytes(bytes(map(ne, g[1:], g[:-1])))
        model_change = int.from_bytes(bytes(map(ne, a[1:], a[:-1])))
        codes = (gt_change << 2 | model_change << 1 | int.from_bytes(c[1:])).to_bytes(len(c) - 1)
        for code in range(8):
            by_code[code] += codes.count(code)
    return {name: by_code[4 * gt + 2 * model + right]
            for (gt, model, right), name in TRANSITIONS.items()}


def transition_rates(counts: Mapping[str, int]) -> dict[str, float]:
    """Each count over its GT group's total (GT change: first four, GT stay: last four).

    An empty group (e.g. no gold ever changes) reports 0.0 for its four rates.
    """
    rates: dict[str, float] = {}
    for group in (TRANSITION_NAMES[:4], TRANSITION_NAMES[4:]):
        total = sum(counts[name] for name in group)
        rates.update({name: counts[name] / total if total else 0.0 for name in group})
    return rates


@dataclass(frozen=True)
class JudgedQuestion:
    """One question of a dataset with its per-interval canonical golds, answers, correctness
    (:func:`correctness`: one 0 or 1 per interval)."""

    bid: str
    question: OaksQuestion
    golds: tuple[str, ...]
    answers: tuple[str, ...]
    correct: bytes


class CellLayout:
    """Where each (question, t) of a dataset sits in one flat list, in dataset order: the
    cell of (question_id, t) is ``base[question_id] + t``. Predictions laid out this way are
    judged a question at a time from one slice, without a key built or looked up per
    prediction (the common reading, :func:`load_prediction_cells`, builds none either)."""

    def __init__(self, dataset: OaksDataset):
        self.dataset = dataset
        self.base: dict[str, int] = {}
        self.size: dict[str, int] = {}
        total = 0
        for doc in dataset.documents:
            for q in doc.questions:
                # A question id twice is refused before judging (_check_dataset).
                self.base[q.question_id] = total - 1
                self.size[q.question_id] = doc.num_chunks
                total += doc.num_chunks
        self.total = total


@dataclass(frozen=True)
class PredictionCells:
    """The predictions of one dataset laid out by its :class:`CellLayout`: ``outputs[i]`` is
    the output of cell i, None where there is no prediction."""

    layout: CellLayout
    outputs: list[str | None]


def _check_question(path: str, record: str, q: OaksQuestion, n_chunks: int) -> None:
    """What scoring relies on: one non-empty gold per chunk, MC golds among <= 26 options."""
    if not n_chunks:
        raise DataError(path, record, "chunks", "the document has no chunks")
    if len(q.golds) != n_chunks:
        raise DataError(path, record, "chunk_to_answer", f"{len(q.golds)} golds for "
                        f"{n_chunks} chunks")
    mc, letters = q.is_mc, q.options[:26]
    if all(q.golds) and (not mc or set(map(itemgetter(0), q.golds)) <= set(letters)):
        return  # the usual question, checked in C; searched below only for the error
    for t, golds in enumerate(q.golds, 1):
        if not golds:
            raise DataError(path, record, "chunk_to_answer", f"no accepted answer at t {t}")
        if mc and golds[0] not in letters:
            raise DataError(path, record, "chunk_to_answer",
                            f"gold {golds[0]!r} at t {t} is not one of the first 26 options")


def _check_dataset(dataset: OaksDataset) -> None:
    seen: set[str] = set()
    for doc in dataset.documents:
        for q in doc.questions:
            record = f"document {doc.bid} question {q.question_id}"
            if q.question_id in seen:
                raise DataError(dataset.path, record, "question_id", "duplicate question id")
            _check_question(dataset.path, record, q, doc.num_chunks)
            seen.add(q.question_id)


def _cells_of(layout: CellLayout, predictions: Mapping[tuple[str, int], str],
              predictions_path: str) -> list[str | None]:
    """A mapping of predictions laid out by ``layout``; a key outside the dataset raises."""
    outputs: list[str | None] = [None] * layout.total
    for (qid, t), output in predictions.items():
        n = layout.size.get(qid)
        if n is None:
            raise DataError(predictions_path, f"question {qid} t {t}", "question_id",
                            "question not in the dataset")
        if not 1 <= t <= n:
            raise DataError(predictions_path, f"question {qid} t {t}", "t",
                            f"interval outside 1..{n}")
        outputs[layout.base[qid] + t] = output
    return outputs


def judge_dataset(
    dataset: OaksDataset,
    predictions: Mapping[tuple[str, int], str] | PredictionCells,
    allow_missing: bool = False,
    *,
    predictions_path: str = "predictions",
) -> tuple[list[JudgedQuestion], int]:
    """Judge every (question, t) in dataset order; returns the judged questions and the number
    of missing predictions (a missing one is wrong and its answer is "" for transitions).
    ``predictions``: keyed by (question_id, t), or read into cells for this very dataset."""
    _check_dataset(dataset)
    if isinstance(predictions, PredictionCells):
        if predictions.layout.dataset is not dataset:
            raise ValueError("the prediction cells were laid out for another dataset")
        layout, outputs_by_cell = predictions.layout, predictions.outputs
    else:
        layout = CellLayout(dataset)
        outputs_by_cell = _cells_of(layout, predictions, predictions_path)
    judged: list[JudgedQuestion] = []
    missing = 0
    # Each distinct output is read once per (multiple choice, type): models repeat answers.
    memos: dict[tuple[bool, str | None], dict[str | None, str]] = {}
    for doc in dataset.documents:
        for q in doc.questions:
            mc, qtype, qid = q.is_mc, q.question_type, q.question_id
            start = layout.base[qid] + 1
            outputs = outputs_by_cell[start:start + doc.num_chunks]
            memo = memos.setdefault((mc, qtype), {})
            for output in set(outputs).difference(memo):
                if output is not None:
                    memo[output] = canonical_answer(output, mc, qtype)
            golds, accepted = golds_by_interval(q)
            if None in outputs:
                if not allow_missing:
                    t = outputs.index(None) + 1
                    raise DataError(predictions_path, f"question {qid} t {t}",
                                    "output", "missing prediction (--allow-missing counts "
                                    "missing ones as wrong)")
                missing += outputs.count(None)
                # A missing prediction answers "" and is wrong.
                answers = ["" if o is None else memo[o] for o in outputs]
                hits = bytes(o is not None and a in ok
                             for o, a, ok in zip(outputs, answers, accepted, strict=True))
            else:
                answers = list(map(memo.__getitem__, outputs))
                hits = bytes(map(frozenset.__contains__, accepted, answers))
            judged.append(JudgedQuestion(doc.bid, q, golds, tuple(answers), hits))
    return judged, missing


def _table(judged: Sequence[JudgedQuestion], bins_open: Bins, bins_mc: Bins,
           exact: Sequence[Mapping[str, Fraction]] | None = None) -> list[dict[str, Any]]:
    """The :func:`per_question_table` rows; ``exact``: each question's
    :func:`question_fractions`, where the caller has them already."""
    check_bins(bins_open)
    check_bins(bins_mc)
    if exact is None:
        exact = [question_fractions(j.correct, j.golds) for j in judged]
    rows: list[dict[str, Any]] = []
    for j, fractions in zip(judged, exact, strict=True):
        count = n_phases(j.golds)
        bins = bins_mc if j.question.is_mc else bins_open
        rows.append({
            "question_id": j.question.question_id,
            "document": j.bid,
            "type": j.question.question_type,
            "subset": subset_of(count, bins),
            "n_phases": count,
            **{k: float(v) for k, v in fractions.items()},
            "correct": list(j.correct),  # 0/1 as ints
        })
    return rows


def per_question_table(
    dataset: OaksDataset,
    predictions: Mapping[tuple[str, int], str] | PredictionCells,
    allow_missing: bool = False,
    *,
    predictions_path: str = "predictions",
    bins_open: Bins = OAKS_B_BINS,
    bins_mc: Bins = OAKS_N_BINS,
) -> list[dict[str, Any]]:
    """One row per question: question_id, document, type, subset, n_phases, the four
    intra-phase metrics and the correctness vector (for reports and bootstrap CIs)."""
    judged, _ = judge_dataset(dataset, predictions, allow_missing,
                              predictions_path=predictions_path)
    return _table(judged, bins_open, bins_mc)


def _accuracy_by_interval(correct: Sequence[bytes]) -> list[float]:
    """Per interval t, the share of correct answers among the questions whose document has
    at least t chunks: whole counts, divided once (int / int is correctly rounded), so the
    value is the one :func:`exact_mean` gives for those 0/1 values."""
    longest = max(map(len, correct))
    hits = [0] * longest
    asked = [0] * longest
    for c in correct:
        hits[:len(c)] = map(add, hits, c)
    for length, questions in Counter(map(len, correct)).items():
        asked[:length] = map(add, asked, repeat(questions, length))
    return [h / n for h, n in zip(hits, asked, strict=True)]


def _mean_accuracy(exact: Sequence[Mapping[str, Fraction]]) -> dict[str, Any]:
    return {"accuracy": exact_mean([q["accuracy"] for q in exact]), "n_questions": len(exact)}


def score_oaks(
    dataset: OaksDataset,
    predictions: Mapping[tuple[str, int], str] | PredictionCells,
    allow_missing: bool = False,
    *,
    predictions_path: str = "predictions",
    bins_open: Bins = OAKS_B_BINS,
    bins_mc: Bins = OAKS_N_BINS,
) -> tuple[dict[str, Any], int]:
    """The ``clstream score oaks`` JSON of docs/oaks.md §3.3 and the number of missing predictions.

    Multiple-choice questions use ``bins_mc`` (OAKS-N), open-ended ones ``bins_open``
    (OAKS-B). ``accuracy_by_interval[t-1]`` averages c_t over questions whose document has at
    least t chunks. ``by_type`` and ``by_subset`` list only groups with questions.
    """
    result, missing, _rows = score_oaks_with_rows(
        dataset, predictions, allow_missing, predictions_path=predictions_path,
        bins_open=bins_open, bins_mc=bins_mc,
    )
    return result, missing


def score_oaks_with_rows(
    dataset: OaksDataset,
    predictions: Mapping[tuple[str, int], str] | PredictionCells,
    allow_missing: bool = False,
    *,
    predictions_path: str = "predictions",
    bins_open: Bins = OAKS_B_BINS,
    bins_mc: Bins = OAKS_N_BINS,
) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
    """:func:`score_oaks` plus the :func:`per_question_table` rows, judging only once
    (summaries need both: the metrics and the per-question values for bootstrap CIs)."""
    judged, missing = judge_dataset(dataset, predictions, allow_missing,
                                    predictions_path=predictions_path)
    if not judged:
        raise DataError(dataset.path, None, "qas", "the dataset has no questions")
    # Averages over questions are of the exact per-question fractions, rounded once.
    exact = [question_fractions(j.correct, j.golds) for j in judged]
    rows = _table(judged, bins_open, bins_mc, exact)
    counts = transition_counts([j.golds for j in judged], [j.answers for j in judged],
                               [j.correct for j in judged])
    types = sorted({r["type"] for r in rows if r["type"] is not None})
    subsets = [name for name, _ in (*bins_open, *bins_mc)]
    subsets = [s for i, s in enumerate(subsets) if s not in subsets[:i]]
    by_interval = _accuracy_by_interval([j.correct for j in judged])
    result: dict[str, Any] = {"n_questions": len(rows)}
    result.update({k: exact_mean([q[k] for q in exact]) for k in INTRA_PHASE_KEYS})
    result["transitions"] = transition_rates(counts)
    result["by_type"] = {
        t: _mean_accuracy([q for q, r in zip(exact, rows, strict=True) if r["type"] == t])
        for t in types}
    result["by_subset"] = {
        s: _mean_accuracy([q for q, r in zip(exact, rows, strict=True) if r["subset"] == s])
        for s in subsets if any(r["subset"] == s for r in rows)
    }
    result["accuracy_by_interval"] = by_interval
    return result, missing, rows


PREDICTION_KEYS = ("question_id", "t", "output")


def _prediction(path: str, record: str, obj: object) -> tuple[str, int, str]:
    if not isinstance(obj, dict):
        raise DataError(path, record, None, "expected a JSON object")
    for key in PREDICTION_KEYS:
        if key not in obj:
            raise DataError(path, record, key, "missing key")
    extra = sorted(set(obj) - set(PREDICTION_KEYS))
    if extra:
        raise DataError(path, record, extra[0], "unexpected key (allowed: question_id, t, output)")
    qid, t, output = obj["question_id"], obj["t"], obj["output"]
    if not isinstance(qid, str) or not qid:
        raise DataError(path, record, "question_id", "expected a non-empty string")
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise DataError(path, record, "t", f"expected an integer >= 1, got {t!r}")
    if not isinstance(output, str):
        raise DataError(path, record, "output", f"expected a string, got {type(output).__name__}")
    return qid, t, output


_FIELDS = tuple(map(itemgetter, PREDICTION_KEYS))


def _columns_in_bulk(values: list[dict[str, Any]], chunks: Mapping[str, int] | None
                     ) -> tuple[list[str], list[int], list[str]] | None:
    """The question ids, intervals and outputs of a file of flat objects when every line
    passes the checks of :func:`load_predictions` but the one for duplicates, each check made
    over all lines at once (in C, mostly); None when any line fails one, so that the
    line-by-line reading names it."""
    if not set(map(len, values)) <= {len(PREDICTION_KEYS)}:
        return None
    try:  # a missing key: a line with another key instead
        qids, ts, outputs = (list(map(field, values)) for field in _FIELDS)
    except KeyError:
        return None
    if not (set(map(type, qids)) <= {str} and all(qids) and set(map(type, ts)) <= {int}
            and min(ts, default=1) >= 1 and set(map(type, outputs)) <= {str}):
        return None
    if chunks is not None:  # an unknown question has no chunks: any t is beyond them
        if any(map(int.__gt__, ts, map(chunks.get, qids, repeat(0)))):
            return None
    return qids, ts, outputs


def _checked_in_bulk(values: list[dict[str, Any]], chunks: Mapping[str, int] | None
                     ) -> dict[tuple[str, int], str] | None:
    """The predictions of a file of flat objects when every line passes the checks of
    :func:`load_predictions` (:func:`_columns_in_bulk`, then duplicates), else None."""
    columns = _columns_in_bulk(values, chunks)
    if columns is None:
        return None
    qids, ts, outputs = columns
    predictions = dict(zip(zip(qids, ts, strict=True), outputs, strict=True))
    return predictions if len(predictions) == len(values) else None  # else a duplicate


def _put_in_cells(values: list[dict[str, Any]], layout: CellLayout,
                  outputs_by_cell: list[str | None]) -> bool:
    """Put each output of a batch of flat objects in its cell when every line passes
    :func:`_columns_in_bulk`, no key made per line; False (nothing put) when one fails.
    Two lines for one cell leave one filled cell fewer than lines: the caller counts."""
    columns = _columns_in_bulk(values, layout.size)
    if columns is None:
        return False
    qids, ts, outputs = columns
    cells = map(add, map(layout.base.__getitem__, qids), ts)
    deque(map(outputs_by_cell.__setitem__, cells, outputs), maxlen=0)  # in C, keeps nothing
    return True


def _read_line_by_line(name: str, read: list[dict[str, Any]] | Iterator[tuple[int, Any]],
                       chunks: Mapping[str, int] | None) -> dict[tuple[str, int], str]:
    """The predictions of ``read`` (:func:`flat_json_lines`'s list or pairs of line number
    and value), each line checked on its own: the first bad line raises, naming its line and
    field."""
    lines = enumerate(read, start=1) if isinstance(read, list) else read
    predictions: dict[tuple[str, int], str] = {}
    first_line: dict[tuple[str, int], int] = {}
    for number, obj in lines:
        # The common line first, checked inline; anything else gets the full checks (and
        # their error) from _prediction.
        if type(obj) is dict and len(obj) == 3:
            qid, t, output = obj.get("question_id"), obj.get("t"), obj.get("output")
            if not (type(qid) is str and qid and type(t) is int and t >= 1
                    and type(output) is str):
                qid, t, output = _prediction(name, f"line {number}", obj)
        else:
            qid, t, output = _prediction(name, f"line {number}", obj)
        if chunks is not None:
            limit = chunks.get(qid)
            if limit is None:
                raise DataError(name, f"line {number}", "question_id",
                                f"unknown question {qid!r}")
            if t > limit:
                raise DataError(name, f"line {number}", "t",
                                f"interval {t} beyond the document's {limit} chunks")
        key = (qid, t)
        if first_line.setdefault(key, number) != number:  # one lookup for the usual line
            raise DataError(name, f"line {number}", "t", f"duplicate prediction for question "
                            f"{qid} t {t} (first on line {first_line[key]})")
        predictions[key] = output
    return predictions


def load_predictions(
    path: str | Path, dataset: OaksDataset | None = None
) -> dict[tuple[str, int], str]:
    """Read OAKS predictions (docs/oaks.md §3.2): one JSON object per line with exactly the keys
    question_id (str), t (int >= 1) and output (str). Blank lines are skipped.

    Malformed JSON, a missing, extra or mistyped key, a duplicate (question_id, t) and, when
    ``dataset`` is given, an unknown question id or an interval beyond its document raise
    :class:`DataError` naming the file, the line and the field.
    """
    name = str(path)
    chunks = CellLayout(dataset).size if dataset is not None else None
    read = flat_json_lines(name)
    if isinstance(read, list):
        checked = _checked_in_bulk(read, chunks)
        if checked is not None:
            return checked
    return _read_line_by_line(name, read, chunks)


PREDICTION_BATCH = 16_384
"""Lines parsed at a time by :func:`load_prediction_cells` (:class:`JsonLinesFile`)."""


def load_prediction_cells(path: str | Path, dataset: OaksDataset) -> PredictionCells:
    """:func:`load_predictions` of ``dataset``'s predictions, laid out in its cells for
    :func:`judge_dataset`: the same checks and the same errors. The usual file (every line a
    flat object) is parsed a batch at a time and each batch's outputs put in their cells,
    with neither a key nor a dictionary entry made per line; any other file, or a batch with
    a line that fails a check, is read again line by line, which names the line."""
    name = str(path)
    layout = CellLayout(dataset)
    source = JsonLinesFile(name)
    outputs_by_cell: list[str | None] = [None] * layout.total
    for values in source.flat_batches(PREDICTION_BATCH):
        if values is None or not _put_in_cells(values, layout, outputs_by_cell):
            break
    else:
        if outputs_by_cell.count(None) == layout.total - len(source.lines):  # no duplicate
            return PredictionCells(layout, outputs_by_cell)
    by_line = _read_line_by_line(name, source.one_by_one(), layout.size)
    return PredictionCells(layout, _cells_of(layout, by_line, name))
