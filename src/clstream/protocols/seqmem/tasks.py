"""Task streams for SeqMem-Eval from local dataset files (SeqMem-Eval App. A.1; docs/seqmem.md §2.4).

Loaders for the paper's single-turn benchmarks, read from files the user already has (JSONL,
a JSON array, or Parquet when pyarrow is installed; nothing is downloaded):

- HumanEval: ``task_id``, ``prompt``, ``test``, ``entry_point`` (``canonical_solution`` kept
  as the target when present) -> kind ``code``;
- MATH500: ``problem`` and ``answer``, or a ``solution`` whose last ``\\boxed{}`` is the
  answer -> kind ``math``;
- MMLU-Pro: ``question``, ``options``, ``answer`` (a letter) and/or ``answer_index``,
  optional ``category`` (filterable, e.g. engineering / physics as in the paper) -> kind ``mc``;
- APIBench-HF: the question (``question``, or Gorilla's ``code`` field cut before its
  ``###Output`` part so the reference answer is not shown), ``api_call``, ``api_data`` with a
  ``domain``, plus an API pool file (``api_call``, ``domain`` per line) -> kind ``api``.

Hold-out (docs/seqmem.md §2.4; paper App. A.1): ``holdout`` takes the last H tasks of the stream
(``holdout_mode="last"``, the paper's choice for HumanEval and MMLU-Pro) or a seeded sample
stratified by category with at least one task per category (``"sample"``); an int is a count,
a float in (0, 1) a fraction. ``holdout_path`` reads hold-out tasks from a second file
instead (the paper samples MATH500 and APIBench hold-outs from training data).
Every validation error names the file, the record (line or row) and the field.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack

from clstream.core.errors import DataError, SpecError
from clstream.core.jsonio import decode_utf8, parse_json, read_file_bytes
from clstream.core.specs import sha256_file
from clstream.core.types import Query
from clstream.judges.evaluators import Evaluator, evaluator_for
from clstream.judges.math_eval import last_boxed

HoldoutMode = Literal["last", "sample"]
_QUERY_META = ("category", "family", "entry_point", "subject", "level", "framework")


@dataclass(frozen=True)
class SeqTask:
    """One task: ``prompt`` is shown to the system, ``target`` and ``meta`` are for evaluation."""

    id: str
    prompt: str
    target: str
    kind: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_query(self) -> Query:
        """The query a system sees: no target, no tests, no feedback text."""
        options = tuple(self.meta.get("options") or ())
        safe = {k: self.meta[k] for k in _QUERY_META if k in self.meta}
        return Query(id=self.id, text=self.prompt, options=options, kind=self.kind, meta=safe)


@dataclass(frozen=True)
class SeqStream:
    """An ordered task stream plus a hold-out set never used for memory updates."""

    tasks: tuple[SeqTask, ...]
    holdout: tuple[SeqTask, ...]
    source: str
    sha256: str
    name: str = ""
    api_pool: tuple[dict[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        return self.tasks[0].kind if self.tasks else ""

    def evaluator(self, **options: Any) -> Evaluator:
        """The evaluator for this stream's task kind (the API pool goes to the api evaluator)."""
        pool = list(self.api_pool) if self.kind == "api" else None
        return evaluator_for(self.kind, api_pool=pool, **options)


# ------------------------------------------------------------------------------- reading

Row = tuple[str, dict[str, Any]]


def read_records(path: str | Path) -> list[Row]:
    """(label, record) pairs from JSONL, a JSON array or Parquet; a label names the line/row."""
    p = Path(path)
    if p.suffix == ".parquet":
        if not p.is_file():
            problem = "is a directory" if p.is_dir() else "file not found"
            raise DataError(p, None, None, f"cannot read: {problem}")
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise DataError(
                p,
                None,
                None,
                "reading Parquet needs pyarrow (pip install pyarrow), or convert the file to JSONL",
            ) from None
        try:
            rows = pq.read_table(p).to_pylist()
        except Exception as exc:  # pyarrow raises many types for a bad file
            raise DataError(p, None, None, f"not a readable Parquet file: {exc}") from None
        return [(f"row {i}", dict(r)) for i, r in enumerate(rows)]
    text = decode_utf8(read_file_bytes(p), p)
    if p.suffix == ".json" or text.lstrip().startswith("["):
        if not text.strip():
            raise DataError(p, None, None, "the file is empty")
        data = parse_json(text, p)
        if not isinstance(data, list):
            raise DataError(p, None, None, "expected a JSON array of records")
        out = []
        for i, item in enumerate(data):
            if not isinstance(item, dict):
                raise DataError(p, f"item {i}", None, "a record must be a JSON object")
            out.append((f"item {i}", item))
        return out
    out = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        item = parse_json(raw, p, f"line {number}")
        if not isinstance(item, dict):
            raise DataError(p, f"line {number}", None, "a record must be a JSON object")
        out.append((f"line {number}", item))
    return out


def _text(path: Path, label: str, row: Mapping[str, Any], name: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DataError(path, label, name, "missing or not a non-empty string")
    return value


def _ident(row: Mapping[str, Any], name: str, default: str) -> str:
    value = row.get(name)
    return str(value) if isinstance(value, (str, int)) and str(value) else default


# ------------------------------------------------------------------------------- per dataset


def humaneval_task(path: Path, label: str, row: Mapping[str, Any], index: int) -> SeqTask:
    entry_point = _text(path, label, row, "entry_point")
    if not entry_point.isidentifier():
        raise DataError(path, label, "entry_point", f"{entry_point!r} is not a Python name")
    solution = row.get("canonical_solution", "")
    return SeqTask(
        id=_text(path, label, row, "task_id"),
        prompt=_text(path, label, row, "prompt"),
        target=solution if isinstance(solution, str) else "",
        kind="code",
        meta={
            "test": _text(path, label, row, "test"),
            "entry_point": entry_point,
            "source": str(path),
        },
    )


def math500_task(path: Path, label: str, row: Mapping[str, Any], index: int) -> SeqTask:
    problem = _text(path, label, row, "problem")
    answer = row.get("answer")
    if not (isinstance(answer, str) and answer.strip()):
        solution = row.get("solution")
        answer = last_boxed(solution) if isinstance(solution, str) else None
        if not answer:
            raise DataError(
                path, label, "answer", "missing, and no \\boxed{} answer in the solution"
            )
    meta: dict[str, Any] = {"source": str(path)}
    for key in ("subject", "level", "solution"):
        if key in row and row[key] is not None:
            meta[key] = row[key]
    return SeqTask(
        _ident(row, "unique_id", f"math500/{index}"), problem, answer.strip(), "math", meta
    )


def mmlu_pro_task(path: Path, label: str, row: Mapping[str, Any], index: int) -> SeqTask:
    question = _text(path, label, row, "question")
    options = row.get("options")
    if (
        not isinstance(options, list)
        or not 2 <= len(options) <= 10
        or not all(isinstance(o, str) for o in options)
    ):
        raise DataError(path, label, "options", "must be a list of 2 to 10 strings")
    letters = "ABCDEFGHIJ"[: len(options)]
    letter = row.get("answer")
    index_value = row.get("answer_index")
    if letter is not None and not (
        isinstance(letter, str) and letter.strip().upper() in letters and len(letter.strip()) == 1
    ):
        raise DataError(path, label, "answer", f"must be one letter of {letters}, got {letter!r}")
    if index_value is not None and (
        isinstance(index_value, bool)
        or not isinstance(index_value, int)
        or not 0 <= index_value < len(options)
    ):
        raise DataError(
            path,
            label,
            "answer_index",
            f"must be an integer in 0..{len(options) - 1}, got {index_value!r}",
        )
    if letter is None and index_value is None:
        raise DataError(path, label, "answer", "missing (give answer or answer_index)")
    target = letter.strip().upper() if isinstance(letter, str) else letters[index_value or 0]
    if index_value is not None and letters[index_value] != target:
        raise DataError(
            path, label, "answer_index", f"index {index_value} disagrees with answer {target!r}"
        )
    meta: dict[str, Any] = {"options": list(options), "source": str(path)}
    if isinstance(row.get("category"), str):
        meta["category"] = row["category"]
    return SeqTask(_ident(row, "question_id", f"mmlu-pro/{index}"), question, target, "mc", meta)


def apibench_task(path: Path, label: str, row: Mapping[str, Any], index: int) -> SeqTask:
    if isinstance(row.get("question"), str) and row["question"].strip():
        question = row["question"]
    else:
        question = _text(path, label, row, "code")
        question = re.split(r"###\s*Output", question)[0]
        question = re.sub(r"^\s*###\s*Instruction\s*:\s*", "", question).strip()
        if not question:
            raise DataError(path, label, "code", "no instruction text before ###Output")
    api_call = _text(path, label, row, "api_call")
    api_data = row.get("api_data")
    if not isinstance(api_data, dict) or not isinstance(api_data.get("domain"), str):
        raise DataError(path, label, "api_data", "must be an object with a string 'domain'")
    meta = {"api_data": api_data, "source": str(path)}
    if isinstance(row.get("provider"), str):
        meta["framework"] = row["provider"]
    return SeqTask(
        _ident(row, "question_id", f"apibench-hf/{index}"), question, api_call, "api", meta
    )


def _build(
    path: Path,
    make: Callable[[Path, str, Mapping[str, Any], int], SeqTask],
    keep: Callable[[SeqTask], bool] | None = None,
) -> list[SeqTask]:
    tasks: list[SeqTask] = []
    seen: dict[str, str] = {}
    for index, (label, row) in enumerate(read_records(path), start=1):
        task = make(path, label, row, index)
        if task.id in seen:
            raise DataError(
                path, label, "id", f"duplicate task id {task.id!r} (first at {seen[task.id]})"
            )
        seen[task.id] = label
        if keep is None or keep(task):
            tasks.append(task)
    if not tasks:
        raise DataError(path, None, None, "no tasks (after filtering)")
    return tasks


# ------------------------------------------------------------------------------- hold-out


def _count(n_total: int, holdout: int | float) -> int:
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or holdout < 0:
        raise SpecError(f"holdout must be a non-negative count or a fraction, got {holdout!r}")
    n = round(n_total * holdout) if isinstance(holdout, float) and holdout < 1 else int(holdout)
    if n >= n_total:
        raise SpecError(f"holdout {holdout!r} leaves no stream tasks out of {n_total}")
    return n


def split_holdout(
    tasks: Sequence[SeqTask], holdout: int | float, mode: HoldoutMode = "last", seed: int = 0
) -> tuple[list[SeqTask], list[SeqTask]]:
    """(stream, hold-out), both in original order (rules in the module docstring)."""
    n = _count(len(tasks), holdout)
    if n == 0:
        return list(tasks), []
    if mode == "last":
        return list(tasks[:-n]), list(tasks[-n:])
    if mode != "sample":
        raise SpecError(f"holdout_mode must be 'last' or 'sample', got {mode!r}")
    groups: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        groups.setdefault(str(task.meta.get("category", "")), []).append(i)
    names = sorted(groups)
    exact = {c: n * len(groups[c]) / len(tasks) for c in names}
    quota = {c: int(exact[c]) for c in names}
    if n >= len(names):
        quota = {c: max(1, q) for c, q in quota.items()}
    order = sorted(names, key=lambda c: (-(exact[c] - int(exact[c])), c))
    while sum(quota.values()) < n:
        for c in order:
            if sum(quota.values()) < n and quota[c] < len(groups[c]):
                quota[c] += 1
    while sum(quota.values()) > n:
        largest = max(names, key=lambda c: (quota[c], c))
        quota[largest] -= 1
    rng = random.Random(seed)
    chosen = {i for c in names for i in rng.sample(groups[c], min(quota[c], len(groups[c])))}
    return (
        [t for i, t in enumerate(tasks) if i not in chosen],
        [t for i, t in enumerate(tasks) if i in chosen],
    )


def _digest(*paths: Path) -> str:
    if len(paths) == 1:
        return sha256_file(str(paths[0]))
    joined = "".join(f"{p.name}:{sha256_file(str(p))}\n" for p in paths)
    return hashlib.sha256(joined.encode()).hexdigest()


class SplitOptions(TypedDict, total=False):
    """How a task file becomes a stream and a hold-out set (docs/seqmem.md §2.4): the last ``holdout``
    tasks (a count or a fraction), a seeded sample of them (``holdout_mode="sample"``), or the
    tasks of a separate ``holdout_path`` file."""

    holdout: int | float
    holdout_mode: HoldoutMode
    seed: int
    holdout_path: str | Path | None


def _stream(
    name: str,
    path: str | Path,
    make: Callable[..., SeqTask],
    split: SplitOptions,
    keep: Callable[[SeqTask], bool] | None = None,
    extra: Sequence[Path] = (),
    api_pool: tuple[dict[str, Any], ...] = (),
) -> SeqStream:
    unknown = sorted(set(split) - set(SplitOptions.__annotations__))
    if unknown:
        raise TypeError(f"{name} takes no argument {unknown[0]!r}")
    holdout = split.get("holdout", 0)
    holdout_path = split.get("holdout_path")
    p = Path(path)
    tasks = _build(p, make, keep)
    files = [p, *extra]
    if holdout_path is not None:
        if holdout:
            raise SpecError("give either holdout (a split of the stream) or holdout_path, not both")
        hp = Path(holdout_path)
        stream, held = tasks, _build(hp, make, keep)
        clash = {t.id for t in stream} & {t.id for t in held}
        if clash:
            raise DataError(hp, None, "id", f"task id {sorted(clash)[0]!r} is also in the stream")
        files.append(hp)
    else:
        stream, held = split_holdout(tasks, holdout, split.get("holdout_mode", "last"),
                                     split.get("seed", 0))
    return SeqStream(tuple(stream), tuple(held), str(p), _digest(*files), name, api_pool)


def load_humaneval(path: str | Path, **split: Unpack[SplitOptions]) -> SeqStream:
    return _stream("humaneval", path, humaneval_task, split)


def load_math500(path: str | Path, **split: Unpack[SplitOptions]) -> SeqStream:
    return _stream("math500", path, math500_task, split)


def load_mmlu_pro(path: str | Path, categories: Sequence[str] | None = None,
                  **split: Unpack[SplitOptions]) -> SeqStream:
    """``categories`` keeps only tasks of those categories (case-insensitive)."""
    wanted = {c.lower() for c in categories} if categories else None

    def keep(task: SeqTask) -> bool:
        return wanted is None or str(task.meta.get("category", "")).lower() in wanted

    return _stream("mmlu-pro", path, mmlu_pro_task, split, keep)


def load_api_pool(path: str | Path) -> tuple[dict[str, Any], ...]:
    """The APIBench API pool: one record per API with a string ``api_call`` and ``domain``."""
    p = Path(path)
    pool = []
    for label, row in read_records(p):
        _text(p, label, row, "api_call")
        _text(p, label, row, "domain")
        pool.append(dict(row))
    if not pool:
        raise DataError(p, None, None, "the API pool is empty")
    return tuple(pool)


def load_apibench_hf(path: str | Path, pool_path: str | Path,
                     **split: Unpack[SplitOptions]) -> SeqStream:
    return _stream("apibench-hf", path, apibench_task, split, extra=[Path(pool_path)],
                   api_pool=load_api_pool(pool_path))


def iter_tasks(stream: SeqStream) -> Iterator[tuple[int, SeqTask]]:
    """(tau, task) for tau = 1..T, the order the SeqMem-Eval protocol uses."""
    return enumerate(stream.tasks, start=1)
