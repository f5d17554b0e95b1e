"""The builtin policy of the database exploration task (see :mod:`...policies`).

:class:`SchemaExplorer` reads facts off the results of its own probe queries in the turns it
is given -- the table list, which group holds which category, a table's columns, a column's
encoding (cents or dollars, epoch ms / s / ISO time, the literal meaning "true") -- then
answers the current question with one computing query. It knows the question templates and
the usual abbreviations (a test learner), not the layout of a given seed. Facts seen before
the latest sign of drift -- a notice (option ``notice=on``) or a wrong answer, all the
paper's feedback says -- are dropped; a failed computing query drops everything learned
before the current question. With only the current question's turns it must probe every
fact again, which is what separates it from its stateful use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.core.environment import Turn
from clstream.protocols.clbench.envs.base import instance_of

TABLES_SQL = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
_QUESTION = re.compile(r"^Question (q\d+)(?: \(continued\))?: (.+)$", re.MULTILINE)
_CATMAP = re.compile(r"^SELECT '(g\d+)' AS grp")
_PRAGMA = re.compile(r"^PRAGMA table_info\((\w+)\)$")
_SAMPLE = re.compile(r"^SELECT DISTINCT typeof\((\w+)\), (\w+) FROM (\w+) WHERE")

CATEGORY = r"(Office Products|Electronics|Musical Instruments)"
TEMPLATES: list[tuple[str, re.Pattern[str]]] = [(name, re.compile(pattern)) for name, pattern in [
    ("verified_low_rating", rf"verified-purchase reviews in the {CATEGORY} category have a "
                            r"rating of at most (\d) stars"),
    ("verified_five_star", rf"5-star verified-purchase reviews are there in the {CATEGORY}"),
    ("verified_count", rf"verified-purchase reviews are there in the {CATEGORY} category"),
    ("verified_in_year", rf"verified-purchase reviews in the {CATEGORY} category were posted "
                         r"in (\d{4})"),
    ("avg_price", rf"average price in US dollars of the {CATEGORY} products"),
    ("price_above", rf"in the {CATEGORY} category cost more than (\d+(?:\.\d+)?) US dollars"),
    ("reviews_in_month", rf"reviews in the {CATEGORY} category were posted in month (\d+) of "
                         r"(\d{4})"),
    ("reviews_in_year", rf"reviews in the {CATEGORY} category were posted in calendar year "
                        r"(\d{4})"),
    ("rating_at_least", rf"in the {CATEGORY} category have an overall average rating of at "
                        r"least (\d(?:\.\d)?)"),
    ("five_star_helpful", rf"5-star reviews in the {CATEGORY} category received at least "
                          r"(\d+) helpful"),
    ("attr_count", rf"in the {CATEGORY} category have the attribute (\w+) = '([^']+)'"),
    ("tax_count", rf"in the {CATEGORY} category are filed under the subcategory '([^']+)'"),
    ("avg_text_len", rf"average length in characters of the review texts in the {CATEGORY}"),
    ("top_brand", rf"Which brand has the most products in the {CATEGORY} category"),
    ("brand_count", rf"products of the brand (.+?) are there in the {CATEGORY} category"),
    ("priciest", r"(Which) product category has the highest average price"),
]]


@dataclass
class Facts:
    """What the policy believes about the live database."""

    tables: list[str] | None = None
    groups: dict[str, str] = field(default_factory=dict)  # category -> group prefix
    columns: dict[str, list[str]] = field(default_factory=dict)
    samples: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    migration: str = ""  # the instance whose drift notice these facts follow ('' for none)

    def learn(self, sql: str, result: str) -> None:
        rows = _rows(result)
        if rows is None:
            return
        if sql in (TABLES_SQL, ".tables"):
            self.tables = [r[0] for r in rows]
        elif _CATMAP.match(sql):
            self.groups.update({r[1]: r[0] for r in rows if len(r) == 2 and r[1] != "NULL"})
        elif m := _PRAGMA.match(sql):
            self.columns[m.group(1)] = [r[1] for r in rows if len(r) > 1]
        elif m := _SAMPLE.match(sql):
            self.samples[(m.group(3), m.group(2))] = [(r[0], r[1]) for r in rows if len(r) == 2]


def _rows(feedback: str) -> list[list[str]] | None:
    """Data rows of a query result in the feedback, or None for an error."""
    lines = feedback.split("\n")
    if len(lines) < 3 or not lines[0].startswith("Query ") or lines[1].startswith("SQL error"):
        return None
    return [ln.split(" | ") for ln in lines[2:] if not ln.startswith("(")]


def _sql_of(action: str) -> str:
    try:
        parsed = json.loads(action)
    except json.JSONDecodeError:
        return ""
    return str(parsed.get("query", "")).strip() if isinstance(parsed, dict) else ""


class _Need(Exception):
    """A fact is missing; ``sql`` is the probe that finds it."""

    def __init__(self, sql: str) -> None:
        super().__init__(sql)
        self.sql = sql


class _Planner:
    """Builds the computing SQL of a question from facts, raising :class:`_Need` for a gap."""

    def __init__(self, facts: Facts) -> None:
        self.f = facts

    def tables(self) -> list[str]:
        if self.f.tables is None:
            raise _Need(TABLES_SQL)
        return self.f.tables

    def group(self, category: str) -> str:
        if category not in self.f.groups:
            products = [t for t in self.tables() if re.fullmatch(r"g\d+_products", t)]
            parts = " UNION ALL ".join(
                f"SELECT '{t.split('_')[0]}' AS grp, (SELECT mcat FROM {t} LIMIT 1) AS mcat"
                for t in products)
            raise _Need(parts or TABLES_SQL)
        return self.f.groups[category]

    def cols(self, table: str) -> list[str]:
        if table not in self.f.columns:
            raise _Need(f"PRAGMA table_info({table})")
        return self.f.columns[table]

    def sample(self, table: str, col: str) -> list[tuple[str, str]]:
        if (table, col) not in self.f.samples:
            raise _Need(f"SELECT DISTINCT typeof({col}), {col} FROM {table} WHERE {col} IS NOT "
                        "NULL LIMIT 5")
        return self.f.samples[(table, col)]

    # --- expressions ---------------------------------------------------------------------

    def listed(self, table: str) -> str:
        return " AND del = 0" if "del" in self.cols(table) else ""

    def price(self, category: str) -> tuple[str, str, str]:
        """(products table, price column, dollar expression)."""
        table = f"{self.group(category)}_products"
        col = "prc_v2" if "prc_v2" in self.cols(table) else "prc"
        cents = any(t == "integer" for t, _ in self.sample(table, col))
        return table, col, (f"{col} / 100.0" if cents else col)

    def true_of(self, table: str, col: str) -> str:
        values = {v for _, v in self.sample(table, col)}
        for literal in ("verified", "Y", "true", "yes"):
            if literal in values:
                return f"'{literal}'"
        return "1"

    def verified(self, table: str) -> str:
        cols = self.cols(table)
        plain = f"vrf = {self.true_of(table, 'vrf')}"
        if "verified_status" in cols:
            status = self.true_of(table, "verified_status")
            return f"(verified_status = {status} OR (verified_status IS NULL AND {plain}))"
        return plain

    def time_parts(self, table: str) -> tuple[str, str]:
        kinds = self.sample(table, "ts")
        if any(t == "text" for t, _ in kinds):
            return "CAST(substr(ts, 1, 4) AS INTEGER)", "CAST(substr(ts, 6, 2) AS INTEGER)"
        ms = any(t == "integer" and abs(float(v)) > 1e11 for t, v in kinds)
        arg = "ts / 1000" if ms else "ts"
        return (f"CAST(strftime('%Y', {arg}, 'unixepoch') AS INTEGER)",
                f"CAST(strftime('%m', {arg}, 'unixepoch') AS INTEGER)")

    def year_is(self, table: str, year: str, month: str | None = None) -> str:
        if "yr" in self.cols(table):
            return f"yr = {year}" + (f" AND mo = {month}" if month else "")
        y, m = self.time_parts(table)
        return f"{y} = {year}" + (f" AND {m} = {month}" if month else "")

    def attrs(self, category: str) -> tuple[str, str, str]:
        g = self.group(category)
        names = [t for t in self.tables() if t.startswith(f"{g}_attr") and
                 not t.endswith("_legacy")]
        if not names:
            return f"{g}_attrs", "k", "v"
        table = names[0]
        cols = self.cols(table)
        key = next((c for c in cols if c in ("k", "attr_name", "key", "name")), "k")
        value = next((c for c in cols if c in ("v", "attr_value", "value")), "v")
        return table, key, value

    # --- the computing query ---------------------------------------------------------------

    def compute(self, template: str, args: Sequence[str]) -> str:
        cat = args[0]
        if template == "priciest":
            parts = []
            for c in ("Office Products", "Electronics", "Musical Instruments"):
                table, col, expr = self.price(c)
                parts.append(f"SELECT '{c}' AS category, AVG({expr}) AS mean FROM {table} "
                             f"WHERE {col} IS NOT NULL{self.listed(table)}")
            return f"SELECT category FROM ({' UNION ALL '.join(parts)}) ORDER BY mean DESC LIMIT 1"
        if template == "brand_count":
            brand, cat = args
            table = f"{self.group(cat)}_products"
            return f"SELECT COUNT(*) FROM {table} WHERE brd = '{brand}'{self.listed(table)}"
        g = self.group(cat)
        products, reviews = f"{g}_products", f"{g}_reviews"
        if template in ("avg_price", "price_above"):
            table, col, expr = self.price(cat)
            if template == "avg_price":
                return (f"SELECT ROUND(AVG({expr}), 2) FROM {table} WHERE {col} IS NOT NULL"
                        f"{self.listed(table)}")
            return f"SELECT COUNT(*) FROM {table} WHERE {expr} > {args[1]}{self.listed(table)}"
        if template == "verified_count":
            return f"SELECT COUNT(*) FROM {reviews} WHERE {self.verified(reviews)}"
        if template == "verified_five_star":
            return f"SELECT COUNT(*) FROM {reviews} WHERE rtg = 5 AND {self.verified(reviews)}"
        if template == "verified_low_rating":
            return (f"SELECT COUNT(*) FROM {reviews} WHERE rtg <= {args[1]} AND "
                    f"{self.verified(reviews)}")
        if template == "verified_in_year":
            return (f"SELECT COUNT(*) FROM {reviews} WHERE {self.verified(reviews)} AND "
                    f"{self.year_is(reviews, args[1])}")
        if template == "reviews_in_year":
            return f"SELECT COUNT(*) FROM {reviews} WHERE {self.year_is(reviews, args[1])}"
        if template == "reviews_in_month":
            return (f"SELECT COUNT(*) FROM {reviews} WHERE "
                    f"{self.year_is(reviews, args[2], args[1])}")
        if template == "rating_at_least":
            return (f"SELECT COUNT(*) FROM {products} WHERE avg_rtg >= {args[1]}"
                    f"{self.listed(products)}")
        if template == "five_star_helpful":
            self.cols(reviews)
            return f"SELECT COUNT(*) FROM {reviews} WHERE rtg = 5 AND hlp_ct >= {args[1]}"
        if template == "attr_count":
            table, key, value = self.attrs(cat)
            return (f"SELECT COUNT(DISTINCT ref_id) FROM {table} WHERE {key} = '{args[1]}' AND "
                    f"{value} = '{args[2]}'")
        if template == "tax_count":
            self.cols(f"{g}_tax")
            return (f"SELECT COUNT(DISTINCT ref_id) FROM {g}_tax WHERE lvl = 2 AND "
                    f"cat = '{args[1]}'")
        if template == "avg_text_len":
            self.cols(reviews)
            return (f"SELECT ROUND(AVG(LENGTH(txt)), 1) FROM {reviews} WHERE txt IS NOT NULL")
        if template == "top_brand":
            return (f"SELECT brd FROM {products} GROUP BY brd ORDER BY COUNT(*) DESC, brd "
                    "LIMIT 1")
        raise ValueError(template)


def parse_question(observation: str) -> tuple[str, list[str]] | None:
    """(template, arguments) of the question in an observation, or None."""
    m = _QUESTION.search(observation)
    if not m:
        return None
    for name, pattern in TEMPLATES:
        found = pattern.search(m.group(2))
        if found:
            args = list(found.groups())
            if name == "brand_count":
                args = [args[0], args[1]]
            return name, args
    return None


class SchemaExplorer:
    """Schema-fact cache for the database task; see the module docstring.

    As a note taker (:class:`~clstream.core.environment.NoteTaker`) it writes all its facts
    as one note, ``database schema: <JSON>`` (tables, categories with their group, columns and
    sampled values per table). Merging an older note with a newer one lets the newer facts
    win; a note written from a drift notice names the instance that showed it, and merging it
    after a note that lacks that mark drops the older facts, as :meth:`act` forgets at a
    notice.
    """

    name = "schema-explorer"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        instance = instance_of(observation)
        mine = [t for t in history if instance_of(t.observation) == instance]
        usable = list(history)
        marks = _drift_marks(usable)
        if "NOTICE:" in observation:
            usable = []
        elif marks:
            usable = usable[marks[-1][0]:]
        facts = Facts()
        for t in usable:
            facts.learn(_sql_of(t.action), t.feedback)
        return _decide(facts, mine, observation)

    def notes(self, history: Sequence[Turn]) -> list[str]:
        marks = _drift_marks(history)
        facts = Facts()
        if marks:
            facts.migration = marks[-1][1]
        for t in history[marks[-1][0]:] if marks else history:
            facts.learn(_sql_of(t.action), t.feedback)
        note = schema_note(facts)
        return [note] if note else []

    def merge(self, old: str, new: str) -> str:
        return schema_note(merged_facts([old, new])) or new

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        instance = instance_of(observation)
        mine = [t for t in history if instance_of(t.observation) == instance]
        noticed = any("NOTICE:" in text for text in (observation, *(t.observation for t in mine)))
        facts = Facts() if noticed else merged_facts(notes)
        for t in mine:
            facts.learn(_sql_of(t.action), t.feedback)
        return _decide(facts, mine, observation)


def _drift_marks(history: Sequence[Turn]) -> list[tuple[int, str]]:
    """Where facts stop being trusted: (index of the first turn still usable, the instance
    that showed it) for every drift notice and every wrong answer, in order."""
    marks: list[tuple[int, str]] = []
    for n, t in enumerate(history):
        if "NOTICE:" in t.observation:
            marks.append((n, instance_of(t.observation) or "notice"))
        if t.feedback.startswith("Wrong answer"):
            marks.append((n + 1, f"{instance_of(t.observation) or 'answer'} (wrong answer)"))
    return marks


def _decide(facts: Facts, mine: Sequence[Turn], observation: str) -> dict[str, Any]:
    """The next action for the current question given the facts believed; when the computing
    query they lead to fails, again from this question's own turns only."""
    parsed = parse_question(mine[0].observation if mine else observation)
    if parsed is None:
        return {"tool": "sql", "query": TABLES_SQL} if not mine else {"answer": "unknown"}
    ran = {_sql_of(t.action): t.feedback for t in mine}
    for _ in range(2):
        try:
            sql = _Planner(facts).compute(*parsed)
        except _Need as need:
            return {"tool": "sql", "query": need.sql}
        if sql not in ran:
            return {"tool": "sql", "query": sql}
        rows = _rows(ran[sql])
        if rows:
            return {"answer": rows[0][0] if rows[0][0] != "NULL" else "0"}
        facts = Facts()  # the cached facts failed: keep only this question's
        for t in mine:
            facts.learn(_sql_of(t.action), t.feedback)
    return {"answer": "unknown"}


# --- notes -----------------------------------------------------------------------------------

SCHEMA_SUBJECT = "database schema"


def schema_note(facts: Facts) -> str:
    """The facts as one note line (see :class:`SchemaExplorer`), or '' when there are none."""
    body: dict[str, Any] = {}
    if facts.migration:
        body["migration noticed in"] = facts.migration
    if facts.tables is not None:
        body["tables"] = facts.tables
    if facts.groups:
        body["categories"] = dict(sorted(facts.groups.items()))
    if facts.columns:
        body["columns"] = dict(sorted(facts.columns.items()))
    if facts.samples:
        body["samples"] = {f"{t}.{c}": [list(v) for v in vs]
                           for (t, c), vs in sorted(facts.samples.items())}
    return f"{SCHEMA_SUBJECT}: {json.dumps(body)}" if body else ""


def merged_facts(notes: Sequence[str]) -> Facts:
    """The facts of this policy's notes, merged in the order given (later facts win; a note
    marking a notice not seen before drops what came earlier). Other lines are ignored."""
    facts = Facts()
    for note in notes:
        subject, sep, text = note.strip().partition(": ")
        if subject != SCHEMA_SUBJECT or not sep:
            continue
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not isinstance(body, dict):
            continue
        mark = body.get("migration noticed in")
        if isinstance(mark, str) and mark != facts.migration:
            facts = Facts(migration=mark)
        if isinstance(body.get("tables"), list):
            facts.tables = [str(v) for v in body["tables"]]
        if isinstance(body.get("categories"), dict):
            facts.groups.update({str(k): str(v) for k, v in body["categories"].items()})
        if isinstance(body.get("columns"), dict):
            facts.columns.update({str(k): [str(c) for c in v]
                                  for k, v in body["columns"].items() if isinstance(v, list)})
        if isinstance(body.get("samples"), dict):
            for key, rows in body["samples"].items():
                table, dot, col = str(key).partition(".")
                if dot and isinstance(rows, list):
                    facts.samples[(table, col)] = [(str(r[0]), str(r[1])) for r in rows
                                                   if isinstance(r, list) and len(r) == 2]
    return facts
