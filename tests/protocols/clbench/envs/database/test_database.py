"""Database exploration: generated database, migration, question bank, grading, rewards,
read-only bounded queries, and the stateless arm's view of the migrated database."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from clstream.core.environment import EnvironmentStateError
from clstream.protocols.clbench.envs.database import generator
from clstream.protocols.clbench.envs.database.environment import NOTICE, SIZES, DatabaseEnv

SMALL: dict[str, Any] = {"n_products": 300, "n_reviews": 1200}


@pytest.fixture(scope="module")
def env() -> DatabaseEnv:
    return DatabaseEnv(0, **SMALL)


def ask(env: DatabaseEnv, sql: str) -> str:
    res = env.step({"tool": "sql", "query": sql})
    assert res.valid
    return res.feedback


def test_same_seed_same_database_and_bank() -> None:
    a, b, c = (DatabaseEnv(s, **SMALL) for s in (2, 2, 3))
    assert a.layout == b.layout and a.questions == b.questions
    dump = "SELECT * FROM {}_reviews ORDER BY rid LIMIT 200"
    g = a.layout.group[generator.ELECTRONICS]
    assert (a.database(True).execute(dump.format(g)).fetchall()
            == b.database(True).execute(dump.format(g)).fetchall())
    assert (a.layout, [q.answer for q in a.questions.values()]) != (
        c.layout, [q.answer for q in c.questions.values()])


def test_ten_tables_three_encodings(env: DatabaseEnv) -> None:
    pre = env.database(False)
    tables = {r[0] for r in pre.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert len(tables) == 10
    lay = env.layout
    assert len(set(lay.time_enc.values())) == 3 and len(set(lay.bool_enc.values())) == 3
    assert f"{lay.group[generator.ELECTRONICS]}_attrs" not in tables
    assert f"{lay.group[generator.MUSIC]}_tax" not in tables
    for category in generator.CATEGORIES:
        kinds = {r[0] for r in pre.execute(
            f"SELECT DISTINCT typeof(prc) FROM {lay.group[category]}_products "
            "WHERE prc IS NOT NULL")}
        assert kinds == ({"integer"} if category == generator.ELECTRONICS else {"real"})


def test_bank_of_forty_questions_post_ones_need_the_migration(env: DatabaseEnv) -> None:
    bank = generator.make_questions(0, env.layout, env.database(False), env.database(True))
    assert len(bank) == 40 and len({q.text for q in bank}) == 40
    assert all(q.answer not in ("", "0") for q in bank)
    for q in bank[20:]:
        assert q.post
        with pytest.raises(sqlite3.OperationalError):  # touches a migrated column or table
            env.database(False).execute(q.sql).fetchall()
    assert set(env.questions) == {q.qid for q in bank}


@pytest.mark.parametrize("seed", range(10))
def test_every_post_migration_question_rejects_its_stale_answer_and_sql(seed: int) -> None:
    """Neither the pre-migration answer of a post-migration question nor its pre-migration
    SQL run on the migrated database passes, a number by at least twice the tolerance."""
    env = DatabaseEnv(seed)
    pre, post = env.database(False), env.database(True)
    bank = generator.make_questions(seed, env.layout, pre, post)
    assert sum(q.post for q in bank) == 20
    for q in bank[20:]:
        assert q.pre_sql and q.pre_sql != q.sql, q.qid
        before = pre.execute(q.pre_sql).fetchone()[0]
        assert not generator.grade(str(before), q, slack=2.0), (q.qid, q.template, before, q.answer)
        try:
            stale = post.execute(q.pre_sql).fetchone()[0]
        except sqlite3.Error:
            continue
        assert stale is None or not generator.grade(str(stale), q, slack=2.0), (q.qid, stale)
    for q in bank[:20]:
        assert q.pre_sql == q.sql


def test_sizes_give_the_rows_per_category(env: DatabaseEnv) -> None:
    """The named sizes are rows per category (the paper's: 50K products per category); the
    paper size itself is measured in benchmarks/bench_clbench_database.py."""
    assert SIZES == {"small": (1500, 6000), "paper": (50_000, 200_000)}
    for category in generator.CATEGORIES:
        g = env.layout.group[category]
        pre = env.database(False)
        assert pre.execute(f"SELECT COUNT(*) FROM {g}_products").fetchone()[0] == 300
        assert pre.execute(f"SELECT COUNT(*) FROM {g}_reviews").fetchone()[0] == 1200
    assert env.describe()["params"]["n_products"] == 300
    default = DatabaseEnv(0, "short")
    assert (default.n_products, default.n_reviews) == SIZES["small"]
    assert default.describe()["params"]["options"]["size"] == "small"


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="option size must be one of small, paper"):
        DatabaseEnv(0, options={"size": "huge"}, **SMALL)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        DatabaseEnv(0, options={"colour": "red"}, **SMALL)


def test_grading() -> None:
    q = generator.Question("q", "?", "integer", "", "t", "", False, 0.0, "4783")
    assert generator.grade("4,783 reviews", q) and generator.grade("4783.0", q)
    assert not generator.grade("4784", q) and not generator.grade("many", q)
    f = generator.Question("q", "?", "float", "", "t", "", False, 0.01, "113.48")
    assert generator.grade("about 113.9", f) and not generator.grade("115.0", f)
    t = generator.Question("q", "?", "text", "", "t", "", False, 0.0, "Electronics")
    assert generator.grade("'electronics'.", t) and not generator.grade("Office Products", t)


def test_reward_is_one_minus_queries_over_fifteen(env: DatabaseEnv) -> None:
    env.reset()
    q = env.questions["q01"]
    env.begin("q01")
    for _ in range(3):
        assert ask(env, "SELECT 1").startswith("Query ")
    res = env.step({"answer": q.answer})
    assert res.instance_complete and res.success and res.reward == pytest.approx(1 - 3 / 15)
    env.begin("q02")
    res = env.step({"answer": env.questions["q02"].answer})
    assert res.reward == pytest.approx(1.0)


@pytest.mark.parametrize("feedback", ["paper", "rich"])
def test_wrong_answer_and_over_budget_reveal_gold_only_with_rich_feedback(feedback: str) -> None:
    env = DatabaseEnv(0, options={"feedback": feedback}, **SMALL)
    rich = feedback == "rich"
    env.reset()
    q = env.questions["q01"]
    env.begin("q01")
    res = env.step({"answer": "-1"})
    assert res.reward == 0.0 and not res.success
    assert res.feedback.startswith("Wrong answer")
    assert (q.answer in res.feedback and q.sql in res.feedback) == rich
    assert "SELECT" not in res.feedback or rich
    env.begin("q02")
    for _ in range(15):
        ask(env, "SELECT 1")
    res = env.step({"tool": "sql", "query": "SELECT 1"})
    assert res.instance_complete and res.reward == 0.0 and res.info["ended"] == "over_budget"
    assert (env.questions["q02"].sql in res.feedback) == rich
    assert env.describe()["params"]["options"]["feedback"] == feedback


def test_queries_are_read_only_and_bounded() -> None:
    env = DatabaseEnv(1, sql_timeout_s=0.2, **SMALL)
    env.reset()
    env.begin("q01")
    g = env.layout.group[generator.OFFICE]
    before = env.live.execute(f"SELECT COUNT(*) FROM {g}_products").fetchone()
    for sql in (f"DELETE FROM {g}_products", f"DROP TABLE {g}_products",
                f"INSERT INTO {g}_products (ref_id) VALUES ('x')", "PRAGMA query_only = 0",
                "ATTACH DATABASE ':memory:' AS other", f"CREATE TABLE {g}_x (a)"):
        assert "SQL error" in ask(env, sql)
    assert env.live.execute(f"SELECT COUNT(*) FROM {g}_products").fetchone() == before
    assert "one statement" in ask(env, "SELECT 1; SELECT 2")
    rows = ask(env, f"SELECT rid FROM {g}_reviews")
    assert "(first 50 rows shown" in rows and len(rows.split("\n")) == 1 + 1 + 50 + 1
    slow = ask(env, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                    "SELECT COUNT(*) FROM c")
    assert "longer than 0.2 s" in slow
    assert f"{g}_products" in ask(env, ".tables")
    assert "CREATE TABLE" in ask(env, f".schema {g}_reviews")
    assert "ref_id" in ask(env, f"PRAGMA table_info({g}_products)")


def test_malformed_database_actions() -> None:
    env = DatabaseEnv(0, **SMALL)
    env.reset()
    env.begin("q01")
    for action, words in (({"tool": "sql"}, '"query"'), ({"tool": "python", "query": "1"},
                                                         '"tool": "sql"')):
        res = env.step(action)
        assert not res.valid and words in res.feedback
    assert "Queries used so far: 0/15" in (res.next_query.observation if res.next_query else "")


def test_stateless_arm_sees_the_migrated_database(env: DatabaseEnv) -> None:
    env.reset_to("q23")
    query = env.begin("q23")
    assert env.migrated and query.stage == 1 and NOTICE not in query.observation
    res = env.step({"tool": "sql", "query": env.questions["q23"].sql})
    assert env.questions["q23"].answer in res.feedback
    assert env.step({"answer": env.questions["q23"].answer}).reward == pytest.approx(1 - 1 / 15)
    env.reset_to("q03")
    env.begin("q03")
    assert not env.migrated


def test_the_migration_is_unannounced_by_default(env: DatabaseEnv) -> None:
    env.reset()
    env.begin("q05")
    env.step({"answer": "0"})
    post = env.begin("q30")
    assert env.migrated and "NOTICE" not in post.observation
    assert env.describe()["params"]["options"] == {"feedback": "paper", "notice": "off",
                                                   "size": "small"}


def test_stateful_run_migrates_once_with_the_notice_option() -> None:
    env = DatabaseEnv(0, options={"notice": "on"}, **SMALL)
    env.reset()
    first = env.begin("q05")
    assert NOTICE not in first.observation and not env.migrated
    env.step({"answer": "0"})
    post = env.begin("q30")
    assert env.migrated and post.observation.split("\n")[1] == NOTICE
    env.step({"answer": "0"})
    assert NOTICE not in env.begin("q31").observation
    env.step({"answer": "0"})
    with pytest.raises(EnvironmentStateError, match="migration"):
        env.begin("q06")
    assert env.snapshot()["state"] == {"migrated": True}
