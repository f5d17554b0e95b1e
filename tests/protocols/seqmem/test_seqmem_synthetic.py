"""The procedural SeqMem stream: reproducible, leak-free, and memory helps by construction."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError, SpecError
from clstream.judges.evaluators import SyntheticEvaluator, normalize_exact
from clstream.protocols.seqmem.streams import load_seqmem_stream
from clstream.protocols.seqmem.synthetic import (
    FAMILIES,
    generate_seqmem_synthetic,
    load_seqmem_synthetic,
    synthetic_stream,
    write_seqmem_synthetic,
)
from clstream.protocols.seqmem.tasks import SeqTask


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    a = write_seqmem_synthetic(generate_seqmem_synthetic(5, 120, 30), tmp_path / "a.json")
    b = write_seqmem_synthetic(generate_seqmem_synthetic(5, 120, 30), tmp_path / "b.json")
    c = write_seqmem_synthetic(generate_seqmem_synthetic(6, 120, 30), tmp_path / "c.json")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    json.loads(a.read_text())


@pytest.mark.parametrize(("n", "h"), [(8, 0), (40, 12), (200, 40), (333, 101)])
def test_sizes_families_and_ids(n: int, h: int) -> None:
    data = generate_seqmem_synthetic(1, n, h)
    assert len(data["tasks"]) == n and len(data["holdout"]) == h
    ids = [t["id"] for t in data["tasks"] + data["holdout"]]
    assert len(ids) == len(set(ids))
    stream = synthetic_stream(data)
    assert stream.kind == "synthetic" and len(stream.tasks) == n
    if n >= 40:
        assert set(Counter(t["family"] for t in data["tasks"])) == set(FAMILIES)
    if h >= 12:
        assert set(Counter(t["family"] for t in data["holdout"])) == set(FAMILIES)


def test_load_round_trip_and_dispatch(tmp_path: Path) -> None:
    data = generate_seqmem_synthetic(2, 50, 10)
    path = write_seqmem_synthetic(data, tmp_path / "s.json")
    loaded = load_seqmem_synthetic(path)
    assert loaded.tasks == synthetic_stream(data).tasks
    assert loaded.holdout == synthetic_stream(data).holdout
    assert load_seqmem_stream("synthetic", path).sha256 == loaded.sha256
    task = loaded.tasks[0]
    assert isinstance(loaded.evaluator(), SyntheticEvaluator)
    assert loaded.evaluator().evaluate(task, f"## Answer: {task.target}").score == 1.0


def test_questions_do_not_reveal_answers_but_feedback_does() -> None:
    for seed in range(5):
        data = generate_seqmem_synthetic(seed, 150, 40)
        for row in data["tasks"] + data["holdout"]:
            assert normalize_exact(row["target"]) not in normalize_exact(row["prompt"]).split()
            assert row["reveal"].endswith(f"Correct answer: {row['target']}.")
            assert row["target"] not in row["prompt"]


def _answer_from_memory(question: str, memory: list[tuple[str, str]]) -> str:
    """A plain lexical-overlap reader: copy the answer of the most similar past question."""
    words = set(re.findall(r"\w+", question.lower()))
    best, best_overlap = "Unknown", 0
    for past_question, reveal in memory:
        overlap = len(words & set(re.findall(r"\w+", past_question.lower())))
        if overlap >= best_overlap and overlap >= 4:
            best, best_overlap = reveal.rsplit("Correct answer: ", 1)[1].rstrip("."), overlap
    return best


def test_memory_of_feedback_helps_by_construction() -> None:
    stream = synthetic_stream(generate_seqmem_synthetic(11, 300, 60))
    judge = SyntheticEvaluator()
    memory: list[tuple[str, str]] = []
    with_memory, without = [], []
    for task in stream.tasks:
        without.append(judge.evaluate(task, "## Answer: Unknown").score)
        verdict = judge.evaluate(task, f"## Answer: {_answer_from_memory(task.prompt, memory)}")
        with_memory.append(verdict.score)
        memory.append((task.prompt, verdict.feedback))
    assert sum(without) == 0
    assert sum(with_memory) / len(with_memory) > 0.4
    # later halves benefit more: more of the stream has been seen
    half = len(with_memory) // 2
    assert sum(with_memory[half:]) > sum(with_memory[:half])
    held = [
        judge.evaluate(t, f"## Answer: {_answer_from_memory(t.prompt, memory)}").score
        for t in stream.holdout
        if t.meta["family"] in ("registry", "lexicon")
    ]
    assert held and sum(held) / len(held) > 0.8


def _rule_reader(reveals: list[str]) -> dict[str, dict[Any, Any]]:
    rules: dict[str, dict[Any, Any]] = {"cipher": {}, "unit": {}, "fact": {}}
    for text in reveals:
        if m := re.search(r"The (\w+) cipher moves every letter (\d+) places", text):
            rules["cipher"][m.group(1)] = int(m.group(2))
        if m := re.search(r"One (\w+) equals (\d+) (\w+)s,", text):
            rules["unit"][(m.group(1), m.group(3))] = int(m.group(2))
        if m := re.search(r"The ([a-z ]+) of (\w+) is (\w+)\.", text):
            rules["fact"][(m.group(1), m.group(2))] = m.group(3)
        if m := re.search(r"'(\w+)' means (\w+)\.", text):
            rules["fact"][m.group(1)] = m.group(2)
    return rules


def _apply(rules: dict[str, dict[Any, Any]], task: SeqTask) -> str:
    q = task.prompt
    if m := re.search(r"the (\w+) cipher, encode the word '(\w+)'", q):
        k = rules["cipher"][m.group(1)]
        return "".join(chr((ord(c) - 97 + k) % 26 + 97) for c in m.group(2))
    if m := re.search(r"How many (\w+)s make (\d+) (\w+)s", q):
        return str(int(m.group(2)) * rules["unit"][(m.group(3), m.group(1))])
    if m := re.search(r"the ([a-z ]+?) (?:of|that belongs to) (\w+)[?.]", q):
        return str(rules["fact"][(m.group(1), m.group(2))])
    if m := re.search(r"word '(\w+)'", q):
        return str(rules["fact"][m.group(1)])
    raise AssertionError(f"unparsed question {q!r}")


def test_feedback_reveals_enough_to_solve_every_holdout_task() -> None:
    stream = synthetic_stream(generate_seqmem_synthetic(4, 240, 60))
    judge = SyntheticEvaluator()
    reveals = [judge.evaluate(t, "## Answer: ?").feedback for t in stream.tasks]
    rules = _rule_reader(reveals)
    held_families = Counter(t.meta["family"] for t in stream.holdout)
    assert held_families["cipher"] and held_families["conversion"]
    stream_inputs = {t.prompt for t in stream.tasks}
    new_inputs = [t for t in stream.holdout if t.prompt not in stream_inputs]
    assert {t.meta["family"] for t in new_inputs} >= {"cipher", "conversion", "registry", "lexicon"}
    for task in stream.holdout:
        assert judge.evaluate(task, f"## Answer: {_apply(rules, task)}").score == 1.0, task


def test_bad_arguments_and_bad_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError):
        generate_seqmem_synthetic(0, 3, 0)
    with pytest.raises(SpecError):
        generate_seqmem_synthetic(0, 20, -1)
    data = generate_seqmem_synthetic(0, 20, 4)
    broken = json.loads(json.dumps(data))
    broken["tasks"][2]["target"] = ""
    with pytest.raises(DataError) as err:
        synthetic_stream(broken, "x.json")
    assert (err.value.record, err.value.field) == ("tasks[2]", "target")
    dup = json.loads(json.dumps(data))
    dup["holdout"][0]["id"] = dup["tasks"][0]["id"]
    with pytest.raises(DataError) as err:
        synthetic_stream(dup)
    assert err.value.field == "id"
    with pytest.raises(DataError) as err:
        synthetic_stream(dict(data, format="other"))
    assert err.value.field == "format"
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError):
        load_seqmem_synthetic(tmp_path / "bad.json")
