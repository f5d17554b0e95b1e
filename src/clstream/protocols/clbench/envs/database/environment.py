"""Database exploration (database querying; docs/clbench.md §4.2; paper App. A.4).

The agent answers questions about a generated SQLite database (:mod:`.generator`: three product
groups with their own price, time and boolean encodings, abbreviated column names, distractor
columns) whose schema it is not shown. Per question it may run up to 15 exploratory queries,
then answers. Reward 1 - q/15 for a correct answer after q queries, else 0; r_max 1. A wrong
answer, or a 16th query (over budget), ends the question; as in the paper the agent learns
only that the answer was wrong (option ``feedback=rich`` adds the gold answer and the gold SQL,
as the authors' code shows them). The database migrates between the halves (20 + 20 questions
by default), unannounced as in the paper, whose agent has to notice it (option ``notice=on``
puts the authors' code's notice on the first question after the migration of a stateful
run). Option ``size``: ``small`` (1,500 products and 6,000 reviews per category, the default)
or ``paper`` (50,000 products per category, as the paper samples, and 200,000 reviews).

Reading chosen here: the stateless arm (:meth:`DatabaseEnv.reset_to`) answers a
post-migration question against the *migrated* database, the state that question has in the
stateful run (the authors' code keeps the old database there).

Queries are read-only and bounded: the connection runs with ``PRAGMA query_only`` and an
authorizer that allows only reads, functions and a few schema pragmas; one statement per
query; a progress handler stops a query after ``sql_timeout_s``; at most ``row_cap`` rows are
shown. ``.tables`` and ``.schema [table]`` are accepted too. Errors come back as text and still
count as a query. Order: each half is shuffled on every rollout, run 0 included.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import clstream.protocols.clbench.envs.database.generator as generator
from clstream.core.environment import ActionError, EnvironmentStateError, OrderPolicy
from clstream.protocols.clbench.envs.base import EnvironmentBase, Outcome, build_schedule

BUDGET = 15
VARIANTS = ("pre_migration", "post_migration")
SCHEDULES: dict[str, tuple[int, int]] = {"default": (20, 20), "short": (3, 3)}
MAX_QUERY_CHARS, MAX_CELL_CHARS, MAX_RESULT_CHARS = 10_000, 300, 8_000
READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "table_list", "index_list",
                          "index_info", "index_xinfo", "foreign_key_list"})
SIZES: dict[str, tuple[int, int]] = {"small": (1500, 6000), "paper": (50_000, 200_000)}
NOTICE = ("NOTICE: the database was migrated after the earlier questions. Its schema and "
          "contents may have changed; check the current tables and data before relying on "
          "what you learned before.")

INSTRUCTIONS = (
    "You answer questions about an unfamiliar SQLite database of products and their reviews, "
    "split into several product groups. You are not shown the schema: explore it with "
    "read-only SQL. Each question allows up to 15 exploratory queries; every query lowers the "
    "reward of a correct answer (1 - queries/15), a wrong answer earns 0, and a 16th query "
    "ends the question unanswered. Query results show at most 50 rows."
)
ACTION_FORMAT = (
    'Reply with one JSON object: {"tool": "sql", "query": "<one SQL statement, or .tables, '
    'or .schema <table>>"} to run a query, or {"answer": "<your final answer>"} to answer.'
)
ACTION_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "object", "required": ["tool", "query"],
         "properties": {"tool": {"const": "sql"}, "query": {"type": "string", "minLength": 1}}},
        {"type": "object", "required": ["answer"],
         "properties": {"answer": {"type": ["string", "number"]}}},
    ]
}
KIND_TEXT = {"integer": "an integer", "float": "a number", "text": "a short text"}


# The databases a (seed, size) makes, built once per process: every environment of a run (each
# arm, rollout and system) gets its own copies of them (SQLite's backup copies pages, in C).
_BUILT: dict[tuple[int, int, int], tuple[sqlite3.Connection, sqlite3.Connection,
                                         tuple[generator.Question, ...]]] = {}
_BUILT_AT_MOST = 4
_BUILDING = threading.Lock()


def _databases(seed: int, layout: generator.Layout, n_products: int, n_reviews: int
               ) -> tuple[sqlite3.Connection, sqlite3.Connection, tuple[generator.Question, ...]]:
    """Fresh in-memory copies of the databases before and after the migration, and the
    question bank; the same bytes as building them anew (docs/clbench.md §4.3)."""
    key = (seed, n_products, n_reviews)
    with _BUILDING:
        built = _BUILT.get(key)
        if built is None:
            pre = generator.build_database(seed, layout, n_products, n_reviews)
            post = generator.migrate(pre, seed, layout)
            built = (pre, post, tuple(generator.make_questions(seed, layout, pre, post)))
            while len(_BUILT) >= _BUILT_AT_MOST:
                for conn in _BUILT.pop(next(iter(_BUILT)))[:2]:
                    conn.close()
            _BUILT[key] = built
        copies = []
        for source in built[:2]:
            copy = sqlite3.connect(":memory:", check_same_thread=False)
            source.backup(copy)
            copies.append(copy)
    return copies[0], copies[1], built[2]


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None,
               _trigger: str | None) -> int:
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() == "load_extension" else (
            sqlite3.SQLITE_OK)
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def lock_read_only(conn: sqlite3.Connection) -> None:
    """Make ``conn`` refuse every write from now on."""
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)
    conn.set_authorizer(_authorize)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, bytes):
        return f"<blob of {len(value)} bytes>"
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS] + "..."


def _statement(query: str) -> tuple[str, tuple[str, ...]]:
    """The SQL to run for ``query`` (dot commands become catalog queries)."""
    text = query.strip()
    if text == ".tables":
        return "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", ()
    if text.startswith(".schema"):
        name = text[len(".schema"):].strip()
        if name:
            return "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        return "SELECT sql FROM sqlite_master WHERE type = 'table' ORDER BY name", ()
    if text.startswith("."):
        return "", ()
    return text, ()


def run_query(conn: sqlite3.Connection, query: str, timeout_s: float, row_cap: int,
              max_chars: int = MAX_RESULT_CHARS) -> str:
    """The result of one read-only query as text: a header line, rows, a count line (cut
    after ``max_chars`` characters)."""
    sql, args = _statement(query)
    if not sql:
        return "SQL error: unknown dot command (use .tables or .schema <table>)"
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 2_000)
    try:
        cur = conn.execute(sql, args)
        rows = cur.fetchmany(row_cap + 1)
        names = [d[0] for d in cur.description or ()]
        cur.close()
    except (sqlite3.Error, sqlite3.Warning) as err:
        message = str(err)
        if "interrupted" in message:
            return f"SQL error: the query ran longer than {timeout_s:g} s and was stopped"
        if "not authorized" in message:
            message += " (the database is read-only: only SELECT-style queries are allowed)"
        return f"SQL error: {message}"
    finally:
        conn.set_progress_handler(None, 0)
    if not names:
        return "(the statement returned no columns)"
    lines = [" | ".join(names)]
    lines += [" | ".join(_cell(v) for v in row) for row in rows[:row_cap]]
    if len(rows) > row_cap:
        lines.append(f"(first {row_cap} rows shown; the query returned more)")
    else:
        lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = text[:max_chars] + "\n(output cut)"
    return text


class DatabaseEnv(EnvironmentBase):
    """Database exploration: 40 questions (20 before a migration, 20 after), 15 queries each."""

    name: ClassVar[str] = "database_exploration"
    order_policy: ClassVar[OrderPolicy] = OrderPolicy.STAGE_SHUFFLE
    best_reward: ClassVar[float] = 1.0
    min_reward: ClassVar[float] = 0.0
    max_steps: ClassVar[int] = BUDGET
    instructions: ClassVar[str] = INSTRUCTIONS
    action_format: ClassVar[str] = ACTION_FORMAT
    action_schema: ClassVar[Mapping[str, Any]] = ACTION_SCHEMA
    OPTIONS: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "feedback": ("paper", "rich"), "notice": ("off", "on"), "size": tuple(SIZES)}

    def __init__(self, seed: int = 0, schedule: str = "default", max_invalid: int = 3,
                 n_products: int | None = None, n_reviews: int | None = None,
                 sql_timeout_s: float = 10.0, row_cap: int = 50,
                 options: Mapping[str, str] | None = None) -> None:
        """``n_products`` / ``n_reviews`` (per category) override the ``size`` option's."""
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; known: {sorted(SCHEDULES)}")
        pre_n, post_n = SCHEDULES[schedule]
        bank_pre, _ = generator.plan_size()
        ids = [f"q{i + 1:02d}" for i in range(pre_n)]
        ids += [f"q{bank_pre + i + 1:02d}" for i in range(post_n)]
        super().__init__(seed, build_schedule(schedule, (pre_n, post_n), VARIANTS, ids),
                         max_invalid, options)
        sized = SIZES[self.options["size"]]
        self.n_products = sized[0] if n_products is None else int(n_products)
        self.n_reviews = sized[1] if n_reviews is None else int(n_reviews)
        self.sql_timeout_s, self.row_cap = float(sql_timeout_s), int(row_cap)
        self.layout = generator.make_layout(seed)
        self._pre, self._post, bank = _databases(seed, self.layout, self.n_products,
                                                 self.n_reviews)
        self.questions = {q.qid: q for q in bank if q.qid in ids}
        for conn in (self._pre, self._post):
            lock_read_only(conn)
        self.migrated = False
        self._queries = 0

    @property
    def live(self) -> sqlite3.Connection:
        """The database the current state answers from."""
        return self.database(self.migrated)

    def database(self, migrated: bool) -> sqlite3.Connection:
        """The read-only connection to the database before or after the migration."""
        return self._post if migrated else self._pre

    def close(self) -> None:
        self._pre.close()
        self._post.close()

    # --- hooks -----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {"n_products": self.n_products, "n_reviews": self.n_reviews, "budget": BUDGET,
                "sql_timeout_s": self.sql_timeout_s, "row_cap": self.row_cap}

    def _reset_state(self) -> None:
        self.migrated = False

    def _state_for(self, instance_id: str) -> None:
        self.migrated = self.schedule.stage_of(instance_id) >= 1

    def _enter(self, instance_id: str) -> None:
        post = self.schedule.stage_of(instance_id) >= 1
        if self.migrated and not post:
            raise EnvironmentStateError(
                f"{self.name}: {instance_id!r} precedes the migration, which a run cannot "
                "undo (use reset_to for a single instance)")
        self.migrated = post
        self._queries = 0

    def _notice(self, old_variant: str, new_variant: str) -> str:
        on = self.options["notice"] == "on"
        return NOTICE if on and new_variant == "post_migration" else ""

    def _observation(self, first: bool) -> str:
        assert self.current is not None
        q = self.questions[self.current]
        label = f"Question {q.qid}" + ("" if first else " (continued)")
        return (f"{label}: {q.text}\nAnswer with {KIND_TEXT[q.kind]}.\n"
                f"Queries used so far: {self._queries}/{BUDGET}.")

    def _check(self, action: dict[str, Any]) -> None:
        if "answer" in action and "tool" not in action:
            value = action["answer"]
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ActionError('"answer" must be a string or a number')
            return
        if action.get("tool") != "sql" or "answer" in action:
            raise ActionError('expected {"tool": "sql", "query": "..."} or {"answer": "..."}')
        query = action.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ActionError('"query" must be a non-empty SQL string')
        if len(query) > MAX_QUERY_CHARS:
            raise ActionError(f"a query is at most {MAX_QUERY_CHARS} characters")

    def _apply(self, action: dict[str, Any]) -> Outcome:
        assert self.current is not None
        q = self.questions[self.current]
        if "answer" in action:
            given = str(action["answer"])
            if generator.grade(given, q):
                reward = 1.0 - self._queries / BUDGET
                return Outcome(f"Correct: {given.strip()} after {self._queries} queries "
                               f"(reward {reward:.3f}).", True, reward, True,
                               {"queries": self._queries, "ended": "answered"})
            return Outcome(f"Wrong answer: {given.strip()!r}.{self._reveal(q)}", True, 0.0,
                           False, {"queries": self._queries, "ended": "wrong"})
        self._queries += 1
        if self._queries > BUDGET:
            return Outcome(f"Query budget exhausted ({BUDGET} queries): the question ends "
                           f"without credit.{self._reveal(q)}", True, 0.0, False,
                           {"queries": BUDGET, "ended": "over_budget"})
        result = run_query(self.live, str(action["query"]), self.sql_timeout_s, self.row_cap)
        return Outcome(f"Query {self._queries} of {BUDGET}:\n{result}",
                       info={"queries": self._queries})

    def _reveal(self, q: generator.Question) -> str:
        """The gold answer and SQL with ``feedback=rich``; nothing in the paper's feedback."""
        if self.options["feedback"] != "rich":
            return ""
        return f" The expected answer is {q.answer}, produced by: {q.sql}"

    def _state_json(self) -> dict[str, Any]:
        return {"migrated": self.migrated}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        migrated = state.get("migrated", False)
        if not isinstance(migrated, bool):
            raise EnvironmentStateError(f"{self.name}: snapshot field 'migrated' is malformed")
        self.migrated = migrated
