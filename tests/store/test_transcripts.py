"""Transcripts in the results store: stored by content, reassembled exactly, linked to their
records, kept by migration, merge and shards."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from clstream.core.records import Record
from clstream.core.transcripts import capturing, note_calls
from clstream.core.types import GenerationRequest, GenerationResult, Message, Sample, Usage
from clstream.store.db import DB_NAME, SCHEMA_VERSION, ResultsStore
from clstream.store.merge import merge_results
from clstream.store.shard import RunRows, read_run_rows, seed_shard, shard_changes
from clstream.store.transcripts import link_calls, split_content, stored_bytes

RULES = "You answer questions about the passages.\n\nBe brief."


def passages(n: int) -> str:
    return "Passages:\n\n" + "".join(f"[chunk index {i}]\nText of chunk {i}. " * 3 + "\n\n"
                                     for i in range(n))


def request(key: str, context: str, stage: str = "generate") -> GenerationRequest:
    return GenerationRequest(key=key, stage=stage, messages=(
        Message(role="system", content=RULES), Message(role="user", content=context)))


def result(key: str, text: str, stage: str = "generate") -> GenerationResult:
    return GenerationResult(key=key, stage=stage, samples=[Sample(text=text), Sample(text="b")],
                            usage=Usage(prompt_tokens=10, completion_tokens=2, latency_s=0.5))


def open_run(directory: Path, run_id: str = "r1") -> ResultsStore:
    store = ResultsStore(directory, writer=True)
    store.ensure_run(run_id, "oaks", "icl", "builtin", "d" * 64, {"s": 1}, {})
    return store


def answer(store: ResultsStore, key: str, context: str, run_id: str = "r1") -> None:
    """One probe answered inside a cell's capture, and its record committed."""
    note_calls([request(key, context)], [result(key, f"answer {key}")])
    store.put_records(run_id, [Record(kind="probe", key=key, payload={"output": "x"})])


def test_split_joins_back_exactly() -> None:
    for text in ["", "a", "a\n\nb", "a\n\n", "\n\n\n\nx\n\n\n", "no blank line\nhere", "\ud800x"]:
        assert "".join(split_content(text)) == text


def test_calls_are_reassembled_exactly_and_linked(tmp_path: Path) -> None:
    odd = passages(3) + "Question: what?\n\n\n\ntrailing \ud800 surrogate-free? é\n\n"
    with open_run(tmp_path) as store, capturing():
        answer(store, "q1@3", odd)
        calls = store.calls("r1")
    assert len(calls) == 1
    call = calls[0]
    assert call["messages"] == [{"role": "system", "content": RULES},
                                {"role": "user", "content": odd.replace("\ud800", "\\ud800")}]
    assert (call["record_kind"], call["record_key"], call["key"]) == ("probe", "q1@3", "q1@3")
    assert [s["text"] for s in call["samples"]] == ["answer q1@3", "b"]
    assert call["prompt_tokens"] == 10 and call["latency_s"] == 0.5
    assert call["params"]["temperature"] == 0.7


def test_a_growing_context_stores_each_passage_once(tmp_path: Path) -> None:
    with open_run(tmp_path) as store, capturing():
        for t in range(1, 41):
            for q in range(3):
                answer(store, f"q{q}@{t}", passages(t) + f"Question {q}?")
        parts = store.conn.execute("SELECT COUNT(*) FROM transcript_parts").fetchone()[0]
        nodes = store.conn.execute("SELECT COUNT(*) FROM transcript_nodes").fetchone()[0]
        calls = store.calls("r1")
        assert store.calls_count("r1") == 120
    # rules (2 pieces) + header + 40 passages + 3 questions; nodes: one per new piece position
    assert parts == 2 + 1 + 40 + 3
    assert nodes == 2 + 1 + 40 + 120
    assert calls[-1]["messages"][1]["content"] == passages(40) + "Question 2?"


def test_storage_grows_linearly_in_the_stream(tmp_path: Path) -> None:
    sizes = []
    for n in (10, 40):
        with open_run(tmp_path / str(n)) as store, capturing():
            for t in range(1, n + 1):
                answer(store, f"q@{t}", passages(t) + "Question?")
            sizes.append(stored_bytes(store.conn) / n)
    assert sizes[1] <= 1.25 * sizes[0]


def test_calls_wait_for_their_own_records(tmp_path: Path) -> None:
    with open_run(tmp_path) as store, capturing() as capture:
        assert capture is not None
        note_calls([request("a@1", "x"), request("b@1/search1", "y"),
                    request("judge/exact/b@1/ff", "z", "judge")],
                   [result("a@1", "1"), result("b@1/search1", "2"),
                    result("judge/exact/b@1/ff", "3", "judge")])
        store.put_records("r1", [Record(kind="probe", key="a@1", payload={})])
        assert [c["record_key"] for c in store.calls("r1")] == ["a@1"]
        assert len(capture.pending) == 2
        store.put_records("r1", [Record(kind="probe", key="b@1", payload={}),
                                 Record(kind="judgment", key="b@1", payload={}, stage="judge")])
        linked = {(c["key"], c["record_kind"]) for c in store.calls("r1")}
        assert linked == {("a@1", "probe"), ("b@1/search1", "probe"),
                          ("judge/exact/b@1/ff", "judgment")}
        assert not capture.pending


def test_memory_update_calls_serve_their_call_records() -> None:
    calls = [request("summary/1", "chunk one", "summary"), request("summary/2", "two", "summary")]
    results = [result("summary/1", "s1", "summary"), result("summary/2", "s2", "summary")]
    with capturing() as capture:
        assert capture is not None
        note_calls(calls, results)
        records = [Record(kind="call", key=f"doc/observe@1#{i}", stage="summary",
                          payload={"texts": [r.samples[0].text, "b"]})
                   for i, r in enumerate(reversed(results))]
        linked = link_calls(capture, records)
    assert [(c.request.key, r.key) for c, r in linked] == [
        ("summary/1", "doc/observe@1#1"), ("summary/2", "doc/observe@1#0")]


def test_without_a_capture_nothing_is_stored(tmp_path: Path) -> None:
    with open_run(tmp_path) as store:
        answer(store, "q@1", "context")
        assert store.calls_count("r1") == 0


def test_a_rolled_back_batch_stores_no_call_and_later_ones_are_whole(tmp_path: Path) -> None:
    with open_run(tmp_path) as store, capturing():
        note_calls([request("q@1", "shared\n\nfirst")], [result("q@1", "a")])
        try:
            with store._transaction():
                store._insert("r1", [Record(kind="probe", key="q@1", payload={})])
                raise RuntimeError("killed")
        except RuntimeError:
            pass
        assert store.calls_count("r1") == 0
        answer(store, "q@2", "shared\n\nsecond")
        assert store.calls("r1")[0]["messages"][1]["content"] == "shared\n\nsecond"


def test_a_schema_3_database_migrates_and_reads_as_holding_no_calls(tmp_path: Path) -> None:
    with open_run(tmp_path) as store:
        store.put_records("r1", [Record(kind="probe", key="q@1", payload={"a": 1})])
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        for table in ("calls", "transcript_nodes", "transcript_parts"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    with ResultsStore(tmp_path) as reader:
        assert reader.schema_version == 3
        assert reader.calls("r1") == [] and reader.calls_count("r1") == 0
    with ResultsStore(tmp_path, writer=True) as store, capturing():
        answer(store, "q@2", "context")
        assert store.calls_count("r1") == 1
        assert store.count("r1", "probe") == 2
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),) and SCHEMA_VERSION == 4


def test_merge_keeps_calls(tmp_path: Path) -> None:
    for name, keys in (("a", ["q@1", "q@2"]), ("b", ["q@2", "q@3"])):
        with open_run(tmp_path / name) as store, capturing():
            for key in keys:
                answer(store, key, passages(2) + key)
    merge_results(tmp_path / "m", [tmp_path / "a", tmp_path / "b"])
    with ResultsStore(tmp_path / "m") as merged, ResultsStore(tmp_path / "a") as a:
        calls = merged.calls("r1")
        assert [c["record_key"] for c in calls] == ["q@1", "q@2", "q@3"]
        assert calls[:2] == a.calls("r1")
        assert calls[2]["messages"][1]["content"] == passages(2) + "q@3"


def test_a_shard_brings_its_calls_back_as_a_local_run_stores_them(tmp_path: Path) -> None:
    with open_run(tmp_path / "local") as local, capturing():
        answer(local, "q@1", passages(2) + "one")
        answer(local, "q@2", passages(3) + "two")
        expected = local.calls("r1")
    with open_run(tmp_path / "main") as main:
        with capturing():
            answer(main, "q@1", passages(2) + "one")
        seed: RunRows = read_run_rows(main, "r1")
        with ResultsStore(tmp_path / "shard", writer=True) as shard:
            seed_shard(shard, seed)
            assert shard.calls_count("r1") == 0  # a shard is seeded without calls
            with capturing():
                answer(shard, "q@2", passages(3) + "two")
            changes = shard_changes(shard, seed)
        main.put_rows("r1", changes.records, changes.states, changes.transcripts)
        main.put_rows("r1", changes.records, changes.states, changes.transcripts)  # twice
        got = main.calls("r1")
    drop = ("ended_at",)
    assert [{k: v for k, v in c.items() if k not in drop} for c in got] == \
        [{k: v for k, v in c.items() if k not in drop} for c in expected]


def test_deleting_and_renaming_a_run_takes_its_calls(tmp_path: Path) -> None:
    with open_run(tmp_path) as store, capturing():
        answer(store, "q@1", "context")
        store.rename_run("r1", "r2")
        assert store.calls_count("r1") == 0 and store.calls_count("r2") == 1
        store.delete_run("r2")
        assert store.calls_count("r2") == 0


def test_a_record_made_from_a_result_takes_its_call_whatever_the_keys() -> None:
    first, second = result("episode/step1", "move"), result("episode/step2", "stay")
    copied = second.model_copy(update={"samples": [Sample(text="stay, rewritten")]})
    with capturing() as capture:
        assert capture is not None
        note_calls([request("episode/step1", "a"), request("episode/step2", "b")],
                   [first, second])
        records = [Record(kind="step", key="task/0/episode/1", payload={}, calls=(first,)),
                   Record(kind="step", key="task/0/episode/2", payload={}, calls=(copied,))]
        linked = link_calls(capture, records)
    assert [(c.request.key, r.key) for c, r in linked] == [
        ("episode/step1", "task/0/episode/1"), ("episode/step2", "task/0/episode/2")]
    assert records[0] == Record(kind="step", key="task/0/episode/1", payload={})


def test_a_retried_call_replaces_the_failed_one_it_repeats(tmp_path: Path) -> None:
    failed = GenerationResult(key="q@1", error="HTTP 500")
    with open_run(tmp_path) as store, capturing():
        note_calls([request("q@1", "context")], [failed])
        store.put_records("r1", [Record(kind="probe", key="q@1", payload={}, error="HTTP 500",
                                        calls=(failed,))])
        answer(store, "q@1", "context")  # the resume's attempt: the same request
        calls = store.calls("r1")
    assert len(calls) == 1
    assert calls[0]["error"] is None and calls[0]["samples"][0]["text"] == "answer q@1"
