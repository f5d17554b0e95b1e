"""SeqMem-Eval dataset loaders: fields, validation errors, hold-out splits, query safety."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError, SpecError
from clstream.core.specs import sha256_file
from clstream.judges.evaluators import ApiCallEvaluator, ChoiceEvaluator, CodeEvaluator
from clstream.protocols.seqmem.streams import load_seqmem_stream
from clstream.protocols.seqmem.tasks import (
    SeqTask,
    iter_tasks,
    load_apibench_hf,
    load_humaneval,
    load_math500,
    load_mmlu_pro,
    read_records,
    split_holdout,
)


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def humaneval_rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "task_id": f"HumanEval/{i}",
            "prompt": f'def f{i}(x):\n    """Return x + {i}."""\n',
            "canonical_solution": f"    return x + {i}\n",
            "entry_point": f"f{i}",
            "test": f"def check(c):\n    assert c(1) == {1 + i}\n",
        }
        for i in range(n)
    ]


def test_humaneval_loads_splits_last_and_evaluates(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "he.jsonl", humaneval_rows(10))
    stream = load_humaneval(path, holdout=0.2)
    assert [t.id for t in stream.tasks] == [f"HumanEval/{i}" for i in range(8)]
    assert [t.id for t in stream.holdout] == ["HumanEval/8", "HumanEval/9"]
    assert stream.kind == "code" and stream.name == "humaneval"
    assert stream.sha256 == sha256_file(str(path))
    task = stream.tasks[3]
    evaluator = stream.evaluator(timeout_s=5.0)
    assert isinstance(evaluator, CodeEvaluator)
    assert evaluator.evaluate(task, task.target).score == 1.0
    assert [tau for tau, _ in iter_tasks(stream)] == list(range(1, 9))


def test_query_hides_targets_tests_and_feedback(tmp_path: Path) -> None:
    stream = load_humaneval(jsonl(tmp_path / "he.jsonl", humaneval_rows(2)))
    query = stream.tasks[0].to_query()
    assert query.text == stream.tasks[0].prompt and query.kind == "code"
    assert set(query.meta) == {"entry_point"}
    synthetic = SeqTask(
        "s", "Q?", "X", "synthetic", {"family": "registry", "reveal": "X!", "key": "k"}
    )
    assert synthetic.to_query().meta == {"family": "registry"}


def test_humaneval_json_array_and_errors(tmp_path: Path) -> None:
    rows = humaneval_rows(3)
    path = tmp_path / "he.json"
    path.write_text(json.dumps(rows))
    assert len(load_humaneval(path).tasks) == 3
    bad = dict(rows[1], entry_point="not a name")
    with pytest.raises(DataError) as err:
        load_humaneval(jsonl(tmp_path / "bad.jsonl", [rows[0], bad]))
    assert (err.value.record, err.value.field) == ("line 2", "entry_point")
    missing = {k: v for k, v in rows[0].items() if k != "test"}
    with pytest.raises(DataError) as err:
        load_humaneval(jsonl(tmp_path / "bad2.jsonl", [missing]))
    assert err.value.field == "test" and "bad2.jsonl" in str(err.value)
    with pytest.raises(DataError) as err:
        load_humaneval(jsonl(tmp_path / "dup.jsonl", [rows[0], rows[0]]))
    assert err.value.field == "id" and "duplicate" in str(err.value)


def test_invalid_json_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(humaneval_rows(1)[0]) + "\n{oops\n")
    with pytest.raises(DataError) as err:
        read_records(path)
    assert err.value.record == "line 2"
    with pytest.raises(DataError):
        read_records(tmp_path / "absent.jsonl")


def test_parquet_needs_pyarrow(tmp_path: Path) -> None:
    path = tmp_path / "data.parquet"
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        path.write_bytes(b"PAR1")
        with pytest.raises(DataError) as err:
            read_records(path)
        assert "pyarrow" in str(err.value)
        return
    pq.write_table(pa.Table.from_pylist(humaneval_rows(3)), path)
    assert [t.id for t in load_humaneval(path).tasks] == [f"HumanEval/{i}" for i in range(3)]


def test_math500_answer_or_boxed_solution(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"problem": "1+1?", "answer": "2", "unique_id": "a/1", "level": 1},
        {"problem": "half?", "solution": "We get \\boxed{\\frac{1}{2}}."},
        {"problem": "none?", "solution": "no box"},
    ]
    stream = load_math500(jsonl(tmp_path / "m.jsonl", rows[:2]))
    assert [(t.id, t.target, t.kind) for t in stream.tasks] == [
        ("a/1", "2", "math"),
        ("math500/2", "\\frac{1}{2}", "math"),
    ]
    with pytest.raises(DataError) as err:
        load_math500(jsonl(tmp_path / "m2.jsonl", rows))
    assert (err.value.record, err.value.field) == ("line 3", "answer")


def test_mmlu_pro_letters_indices_categories(tmp_path: Path) -> None:
    rows = [
        {
            "question_id": 1,
            "question": "q1",
            "options": ["a", "b", "c"],
            "answer": "B",
            "answer_index": 1,
            "category": "engineering",
        },
        {
            "question_id": 2,
            "question": "q2",
            "options": ["a", "b"],
            "answer_index": 0,
            "category": "physics",
        },
        {
            "question_id": 3,
            "question": "q3",
            "options": ["a", "b", "c", "d"],
            "answer": "d",
            "category": "Engineering",
        },
    ]
    path = jsonl(tmp_path / "mm.jsonl", rows)
    stream = load_mmlu_pro(path)
    assert [t.target for t in stream.tasks] == ["B", "A", "D"]
    assert stream.tasks[0].to_query().options == ("a", "b", "c")
    assert isinstance(stream.evaluator(), ChoiceEvaluator)
    eng = load_mmlu_pro(path, categories=["engineering"])
    assert [t.id for t in eng.tasks] == ["1", "3"]
    for bad, field in (
        (dict(rows[0], answer="E"), "answer"),
        (dict(rows[0], answer_index=2), "answer_index"),
        (dict(rows[0], options="abc"), "options"),
        ({k: v for k, v in rows[1].items() if k != "answer_index"}, "answer"),
    ):
        with pytest.raises(DataError) as err:
            load_mmlu_pro(jsonl(tmp_path / "bad.jsonl", [bad]))
        assert err.value.field == field


def test_apibench_hf_question_from_code_field_and_pool(tmp_path: Path) -> None:
    pool = jsonl(
        tmp_path / "pool.jsonl",
        [
            {
                "domain": "NLP",
                "api_call": "pipeline('fill-mask', model='bert-base-uncased')",
                "api_name": "bert",
            },
            {
                "domain": "CV",
                "api_call": "AutoModel.from_pretrained('facebook/dino-vits8')",
                "api_name": "dino",
            },
        ],
    )
    rows = [
        {
            "code": "###Instruction: Fill in the blank in a sentence.\n###Output: "
            "<<<api_call>>>: pipeline('fill-mask', model='bert-base-uncased')",
            "api_call": "pipeline('fill-mask', model='bert-base-uncased')",
            "provider": "Hugging Face Transformers",
            "api_data": {"domain": "NLP"},
        },
        {
            "question": "Get image features.",
            "api_call": "AutoModel.from_pretrained('facebook/dino-vits8')",
            "api_data": {"domain": "CV"},
        },
    ]
    stream = load_apibench_hf(jsonl(tmp_path / "hf.jsonl", rows), pool)
    first = stream.tasks[0]
    assert first.prompt == "Fill in the blank in a sentence." and "pipeline" not in first.prompt
    assert first.to_query().meta == {"framework": "Hugging Face Transformers"}
    evaluator = stream.evaluator()
    assert isinstance(evaluator, ApiCallEvaluator)
    assert (
        evaluator.evaluate(
            first, "<<<api_call>>>: pipeline('fill-mask', model='bert-base-uncased')"
        ).score
        == 1.0
    )
    assert stream.sha256 != sha256_file(str(tmp_path / "hf.jsonl"))  # the pool is part of the hash
    with pytest.raises(DataError) as err:
        load_apibench_hf(jsonl(tmp_path / "bad.jsonl", [dict(rows[1], api_data={"x": 1})]), pool)
    assert err.value.field == "api_data"
    with pytest.raises(DataError) as err:
        load_apibench_hf(
            tmp_path / "hf.jsonl", jsonl(tmp_path / "badpool.jsonl", [{"api_call": "f(1)"}])
        )
    assert err.value.field == "domain"


def test_sampled_holdout_is_stratified_seeded_and_ordered() -> None:
    tasks = [
        SeqTask(f"t{i}", "q", "A", "mc", {"category": "eng" if i < 16 else "phys"})
        for i in range(20)
    ]
    stream, held = split_holdout(tasks, 5, "sample", seed=7)
    assert len(held) == 5 and len(stream) == 15
    cats = [t.meta["category"] for t in held]
    assert cats.count("eng") == 4 and cats.count("phys") == 1
    assert held == sorted(held, key=lambda t: int(t.id[1:]))
    assert split_holdout(tasks, 5, "sample", seed=7) == (stream, held)
    assert split_holdout(tasks, 5, "sample", seed=8)[1] != held
    tiny = split_holdout(tasks, 2, "sample", seed=1)[1]
    assert {t.meta["category"] for t in tiny} == {"eng", "phys"}


def test_holdout_options_are_checked(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "he.jsonl", humaneval_rows(4))
    with pytest.raises(SpecError):
        load_humaneval(path, holdout=4)
    with pytest.raises(SpecError):
        load_humaneval(path, holdout=-1)
    with pytest.raises(SpecError):
        load_humaneval(path, holdout=1, holdout_mode="middle")  # type: ignore[arg-type]
    other = jsonl(
        tmp_path / "ho.jsonl", [dict(r, task_id="X" + r["task_id"]) for r in humaneval_rows(2)]
    )
    stream = load_humaneval(path, holdout_path=other)
    assert len(stream.tasks) == 4 and [t.id for t in stream.holdout] == [
        "XHumanEval/0",
        "XHumanEval/1",
    ]
    with pytest.raises(DataError):
        load_humaneval(path, holdout_path=path)
    with pytest.raises(SpecError):
        load_humaneval(path, holdout=1, holdout_path=other)


def test_dispatch_by_benchmark_name(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "he.jsonl", humaneval_rows(3))
    assert load_seqmem_stream("humaneval", path, holdout=1).holdout[0].id == "HumanEval/2"
    with pytest.raises(SpecError):
        load_seqmem_stream("gsm8k", path)
    with pytest.raises(SpecError):
        load_seqmem_stream("humaneval", path, pool_path="x")
