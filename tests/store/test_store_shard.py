"""Shards (:mod:`clstream.store.shard`): a shard seeded with a run's rows hands back only what
its cell added, and committing that into the run's database, once or again (a retried cell),
leaves it as if the cell had run there: no record twice, no success replaced."""

from __future__ import annotations

from pathlib import Path

from clstream.core.records import Record
from clstream.store.db import ResultsStore
from clstream.store.shard import read_run_rows, seed_shard, shard_changes

RUN = "r1"


def registered(path: Path) -> ResultsStore:
    store = ResultsStore(path, writer=True)
    store.put_dataset("d" * 64, "data.json", {"documents": 2})
    store.ensure_run(RUN, "toy", "memory-free", "builtin", "d" * 64, {"seed": 0}, {})
    return store


def probe(key: str, stream: str, error: str | None = None) -> Record:
    return Record(kind="probe", key=key, stream=stream, t=1, payload={"output": key},
                  error=error)


def cell_b(store: ResultsStore) -> None:
    """What cell ``b`` stores: a retried error, two new answers and two snapshots (the second
    kept as a delta against the first)."""
    store.put_records(RUN, [probe("b1", "b"), probe("b2", "b")])
    store.save_state(RUN, "b", 1, {"turns": ["x" * 200]})
    store.save_state(RUN, "b", 2, {"turns": ["x" * 200, "y"]})
    store.put_records(RUN, [probe("b0", "b")])


def test_shard_changes_are_the_cells_rows_and_commit_like_a_local_session(tmp_path: Path) -> None:
    with registered(tmp_path / "main") as main, registered(tmp_path / "local") as local:
        for store in (main, local):
            store.put_records(RUN, [probe("a1", "a"), probe("b0", "b", error="timeout")])
            store.save_state(RUN, "a", 1, {"turns": ["a"]})
        seed = read_run_rows(main, RUN)
        with ResultsStore(tmp_path / "shard", writer=True) as shard:
            seed_shard(shard, seed)
            assert shard.done_keys(RUN, "probe") == {"a1"}  # the cell resumes from the seed
            cell_b(shard)
            changes = shard_changes(shard, seed)
        # in the order they are stored (a retried error keeps its row, as it does here)
        assert [r[1] for r in changes.records] == ["b0", "b1", "b2"]
        assert [(s[0], s[1], s[3]) for s in changes.states] == [("b", 1, None), ("b", 2, 1)]
        cell_b(local)
        for _ in range(2):  # the second time: a retried cell's rows committed again
            main.put_rows(RUN, changes.records, changes.states)
            assert main.count(RUN, "probe") == 4
            assert main.count(RUN, "probe", errors=True) == 0
            for table in ("records", "states"):
                columns = "kind, key, stream, t, payload, error" if table == "records" else "*"
                query = f"SELECT {columns} FROM {table} ORDER BY 1, 2, 3"
                assert (main.conn.execute(query).fetchall()
                        == local.conn.execute(query).fetchall())
        assert main.load_state(RUN, "b", 2) == (2, {"turns": ["x" * 200, "y"]})


def test_a_committed_success_is_never_replaced_by_a_shard_row(tmp_path: Path) -> None:
    with registered(tmp_path / "main") as main:
        seed = read_run_rows(main, RUN)
        with ResultsStore(tmp_path / "shard", writer=True) as shard:
            seed_shard(shard, seed)
            shard.put_records(RUN, [probe("a1", "a", error="lost")])
            late = shard_changes(shard, seed)
        main.put_records(RUN, [probe("a1", "a")])
        main.put_rows(RUN, late.records, late.states)
        stored = list(main.read_records(RUN, "probe"))
        assert [(r.key, r.error) for r in stored] == [("a1", None)]


def test_a_shard_that_ran_nothing_has_no_changes(tmp_path: Path) -> None:
    with registered(tmp_path / "main") as main:
        main.put_records(RUN, [probe("a1", "a")])
        main.save_state(RUN, "a", 1, {"turns": ["a"]})
        seed = read_run_rows(main, RUN)
        with ResultsStore(tmp_path / "shard", writer=True) as shard:
            seed_shard(shard, seed)
            assert not shard_changes(shard, seed)
            assert shard.get_run(RUN).spec == {"seed": 0}
            assert shard.get_dataset("d" * 64) == ("data.json", {"documents": 2})
