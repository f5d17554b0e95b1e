"""The generated product-review database of the database exploration task, its migration and
its templated question bank (docs/clbench.md §4.2; paper App. A.4).

Three product groups ``g1``..``g3`` hold Office Products, Electronics and Musical Instruments in
a seeded order. Ten tables: every group has ``<g>_products`` and ``<g>_reviews``; every group but
Electronics has ``<g>_attrs`` (key/value attributes), every group but Musical Instruments has
``<g>_tax`` (taxonomy). Column names are abbreviated and shared (``ref_id ttl mcat brd prc avg_rtg
rtg_ct rnk``; ``rid ref_id usr rtg hlp_ct vrf ts txt``) while encodings differ by group:

* price: integer cents for Electronics, dollars (real) for the other two;
* review time: epoch milliseconds, epoch seconds or ISO-8601 text (one each, seeded);
* verified flag: ``1/0``, ``'Y'/'N'`` or ``'true'/'false'`` (one each, seeded);
* distractors: ``avg_rtg_30d`` (a stale 30-day rating, 30% populated) on Office products and
  ``rnk`` (a sales rank) everywhere.

The migration (between the halves) applies the paper's transforms to a copy, each changing
values as well as the schema, so that what was true before is false after: Electronics
products gain ``prc_v2`` (the prices after a rise of 5-25% per product, in dollars; ``prc`` is
kept but stale); Office reviews gain ``verified_status`` ('verified'/'unverified') on 70% of
rows, whose old ``vrf`` is cleared (moved, so both columns are needed), and an audit revokes
10% of the moved verified flags; Musical Instruments reviews gain ``yr`` and ``mo``, lose 30%
of ``ts``, and archived reviews are imported with ``yr``/``mo`` only; its attributes table
becomes ``<g>_attrs_legacy`` with 40% of rows dropped beside a new canonical ``<g>_attributes
(ref_id, attr_name, attr_value)`` that also records attributes the old one lacked; and every
products table gains a soft-delete flag ``del`` (1 = no longer listed), set mostly on products
priced above their category's median. The value changes are the project's (the paper lists
only the schema transforms): without them a question's pre-migration answer could still pass.

The bank has 40 questions (20 per half) from templates with seeded parameters; each carries
its gold SQL, run on the database that is live for it to get the gold answer, and its SQL as
written against the pre-migration database. Every post-migration question depends on a
migrated fact: neither its pre-migration answer nor its pre-migration SQL passes after the
migration (:func:`drift_bites`; docs/clbench.md §4.2).
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

OFFICE, ELECTRONICS, MUSIC = "Office Products", "Electronics", "Musical Instruments"
CATEGORIES = (OFFICE, ELECTRONICS, MUSIC)
YEARS = range(2016, 2024)
_T0 = int(datetime(2016, 1, 1, tzinfo=UTC).timestamp())
_T1 = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp())

VOCAB: dict[str, dict[str, list[str]]] = {
    OFFICE: {"noun": ["Stapler", "Desk Organizer", "Notebook", "Gel Pen Set", "Paper Shredder",
                      "Label Maker", "File Box", "Whiteboard", "Desk Lamp", "Binder Clips"],
             "brand": ["Quillmark", "Deskly", "Papyra", "Inkwell", "Officio", "Stackwise"],
             "sub": ["Writing Supplies", "Desk Accessories", "Paper", "Filing", "Presentation"],
             "color": ["black", "blue", "white", "red", "green"],
             "material": ["plastic", "metal", "wood", "paper"]},
    ELECTRONICS: {"noun": ["USB-C Hub", "Wireless Mouse", "Bluetooth Speaker", "HDMI Cable",
                           "Webcam", "Power Bank", "Mechanical Keyboard", "Headphones",
                           "Smart Plug", "Portable SSD"],
                  "brand": ["Voltora", "Nexicon", "Ampere Labs", "Lumatek", "Cirrus", "Zentro"],
                  "sub": ["Computer Accessories", "Audio", "Cables", "Storage", "Smart Home"],
                  "color": ["black", "white", "gray", "silver"],
                  "material": ["plastic", "aluminum", "rubber"]},
    MUSIC: {"noun": ["Guitar Strings", "Drum Sticks", "Capo", "Clip Tuner", "Keyboard Stand",
                     "Microphone", "Ukulele", "Violin Rosin", "Pick Set", "Audio Interface"],
            "brand": ["Fretwell", "Tonecraft", "Resonix", "Harmonia", "Cadenza", "Strumline"],
            "sub": ["Guitars", "Drums", "Keyboards", "Studio", "Accessories"],
            "color": ["black", "natural", "sunburst", "red", "white"],
            "material": ["maple", "rosewood", "steel", "nylon", "brass"]},
}
ADJECTIVES = ["Compact", "Deluxe", "Classic", "Pro", "Essential", "Premium", "Ultra", "Everyday"]
WORDS = ("good solid works fine great value quality sturdy cheap broke returned love easy use "
         "sound setup price recommend small light heavy loud quiet battery cable fits").split()
BRAND_WEIGHTS = [0.32, 0.2, 0.16, 0.13, 0.11, 0.08]
TRUE_LITERAL = {"int": "1", "yn": "'Y'", "tf": "'true'"}
# The migration's value changes (module docstring): Electronics prices rise by a factor drawn
# per product; an audit revokes this share of the moved verified flags; one archived review
# is imported per this many Musical Instruments reviews; products above their category's
# median price are delisted at the first rate, the others at the second.
PRICE_RISE = (1.05, 1.25)
AUDIT_REVOKED = 0.1
ARCHIVE_SHARE = 8
DELISTED_PREMIUM, DELISTED_OTHER = 0.3, 0.04


@dataclass(frozen=True)
class Layout:
    """The latent structure of one seed: which group holds what and how it is encoded."""

    group: dict[str, str]  # category -> group prefix
    time_enc: dict[str, str]  # category -> "ms" | "s" | "iso"
    bool_enc: dict[str, str]  # category -> "int" | "yn" | "tf"
    base_price: dict[str, float]  # category -> typical price in dollars

    def has_attrs(self, category: str) -> bool:
        return category != ELECTRONICS

    def has_tax(self, category: str) -> bool:
        return category != MUSIC


def make_layout(seed: int) -> Layout:
    rng = random.Random(f"db-layout:{seed}")
    groups = rng.sample(["g1", "g2", "g3"], 3)
    times = rng.sample(["ms", "s", "iso"], 3)
    bools = rng.sample(["int", "yn", "tf"], 3)
    prices = rng.sample([18.0, 42.0, 95.0], 3)
    return Layout(dict(zip(CATEGORIES, groups, strict=True)),
                  dict(zip(CATEGORIES, times, strict=True)),
                  dict(zip(CATEGORIES, bools, strict=True)),
                  dict(zip(CATEGORIES, prices, strict=True)))


def _encode_time(epoch: int, enc: str) -> Any:
    if enc == "ms":
        return epoch * 1000
    if enc == "s":
        return epoch
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _encode_bool(flag: bool, enc: str) -> Any:
    if enc == "int":
        return int(flag)
    if enc == "yn":
        return "Y" if flag else "N"
    return "true" if flag else "false"


def build_database(seed: int, layout: Layout, n_products: int, n_reviews: int
                   ) -> sqlite3.Connection:
    """The pre-migration database, in memory."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    for category in CATEGORIES:
        _build_group(conn, random.Random(f"db-rows:{seed}:{category}"), layout, category,
                     n_products, n_reviews)
    conn.commit()
    return conn


def _build_group(conn: sqlite3.Connection, rng: random.Random, layout: Layout, category: str,
                 n_products: int, n_reviews: int) -> None:
    g, vocab = layout.group[category], VOCAB[category]
    cents = category == ELECTRONICS
    price_type = "INTEGER" if cents else "REAL"
    stale = ", avg_rtg_30d REAL" if category == OFFICE else ""
    conn.execute(f"CREATE TABLE {g}_products (ref_id TEXT PRIMARY KEY, ttl TEXT, mcat TEXT, "
                 f"brd TEXT, prc {price_type}, avg_rtg REAL, rtg_ct INTEGER, rnk INTEGER{stale})")
    products, ids = [], []
    for n in range(n_products):
        ref = f"B{g[1]}{n:05d}{rng.choice('ABCDEFGHJK')}"
        brand = rng.choices(vocab["brand"], BRAND_WEIGHTS)[0]
        title = f"{brand} {rng.choice(ADJECTIVES)} {rng.choice(vocab['noun'])}"
        dollars = round(layout.base_price[category] * rng.lognormvariate(0.0, 0.5), 2)
        price: Any = None if rng.random() < 0.04 else (round(dollars * 100) if cents else dollars)
        rating = round(min(5.0, max(1.0, rng.gauss(3.9, 0.7))), 1)
        row = [ref, title, category, brand, price, rating, rng.randint(0, 4000),
               rng.randint(1, 500_000)]
        if category == OFFICE:
            row.append(round(min(5.0, max(1.0, rating + rng.gauss(0, 0.8))), 1)
                       if rng.random() < 0.3 else None)
        products.append(row)
        ids.append(ref)
    marks = ",".join("?" * len(products[0]))
    conn.executemany(f"INSERT INTO {g}_products VALUES ({marks})", products)
    conn.execute(f"CREATE TABLE {g}_reviews (rid INTEGER PRIMARY KEY, ref_id TEXT, usr TEXT, "
                 "rtg INTEGER, hlp_ct INTEGER, vrf, ts, txt TEXT)")
    reviews = []
    for n in range(n_reviews):
        text = None if rng.random() < 0.1 else " ".join(
            rng.choice(WORDS) for _ in range(rng.randint(2, 30)))
        reviews.append((n + 1, rng.choice(ids), f"U{rng.randint(1, n_reviews // 2):06d}",
                        rng.choices([1, 2, 3, 4, 5], [0.07, 0.08, 0.12, 0.25, 0.48])[0],
                        min(60, int(rng.expovariate(0.25))),
                        _encode_bool(rng.random() < 0.8, layout.bool_enc[category]),
                        _encode_time(rng.randrange(_T0, _T1), layout.time_enc[category]), text))
    conn.executemany(f"INSERT INTO {g}_reviews VALUES (?,?,?,?,?,?,?,?)", reviews)
    if layout.has_attrs(category):
        conn.execute(f"CREATE TABLE {g}_attrs (ref_id TEXT, k TEXT, v TEXT)")
        rows = []
        for ref in ids:
            for key in ("color", "material"):
                if rng.random() < 0.7:
                    rows.append((ref, key, rng.choice(vocab[key])))
        conn.executemany(f"INSERT INTO {g}_attrs VALUES (?,?,?)", rows)
    if layout.has_tax(category):
        conn.execute(f"CREATE TABLE {g}_tax (ref_id TEXT, lvl INTEGER, cat TEXT)")
        tax: list[tuple[str, int, str]] = []
        for ref in ids:
            tax.append((ref, 1, category))
            tax.append((ref, 2, rng.choice(vocab["sub"])))
        conn.executemany(f"INSERT INTO {g}_tax VALUES (?,?,?)", tax)


def migrate(pre: sqlite3.Connection, seed: int, layout: Layout) -> sqlite3.Connection:
    """A migrated copy of ``pre``: the paper's transforms plus soft deletes, each changing
    the data as well as the schema so that no pre-migration answer or query survives it
    (module docstring)."""
    post = sqlite3.connect(":memory:", check_same_thread=False)
    pre.backup(post)
    rng = random.Random(f"db-migration:{seed}")
    e, o, m = layout.group[ELECTRONICS], layout.group[OFFICE], layout.group[MUSIC]
    post.execute(f"ALTER TABLE {e}_products ADD COLUMN prc_v2 REAL")
    rows = post.execute(f"SELECT ref_id, prc FROM {e}_products WHERE prc IS NOT NULL").fetchall()
    post.executemany(f"UPDATE {e}_products SET prc_v2 = ? WHERE ref_id = ?",
                     [(round(p / 100 * rng.uniform(*PRICE_RISE), 2), r) for r, p in rows])
    post.execute(f"ALTER TABLE {o}_reviews ADD COLUMN verified_status TEXT")
    true = TRUE_LITERAL[layout.bool_enc[OFFICE]]
    rows = post.execute(f"SELECT rid, vrf = {true} FROM {o}_reviews").fetchall()
    moved = []
    for rid, flag in rows:
        if rng.random() < 0.7:
            kept = bool(flag) and rng.random() >= AUDIT_REVOKED
            moved.append(("verified" if kept else "unverified", rid))
    post.executemany(f"UPDATE {o}_reviews SET verified_status = ?, vrf = NULL WHERE rid = ?",
                     moved)
    _split_music_time(post, rng, layout, m)
    post.execute(f"CREATE TABLE {m}_attributes (ref_id TEXT, attr_name TEXT, attr_value TEXT)")
    post.execute(f"INSERT INTO {m}_attributes SELECT ref_id, k, v FROM {m}_attrs")
    known = set(post.execute(f"SELECT ref_id, k FROM {m}_attrs").fetchall())
    refs = [r for (r,) in post.execute(f"SELECT ref_id FROM {m}_products ORDER BY ref_id")]
    post.executemany(f"INSERT INTO {m}_attributes VALUES (?,?,?)",
                     [(ref, key, rng.choice(VOCAB[MUSIC][key])) for ref in refs
                      for key in ("color", "material")
                      if (ref, key) not in known and rng.random() < 0.5])
    post.execute(f"ALTER TABLE {m}_attrs RENAME TO {m}_attrs_legacy")
    keep = [r for (r,) in post.execute(f"SELECT rowid FROM {m}_attrs_legacy")]
    post.executemany(f"DELETE FROM {m}_attrs_legacy WHERE rowid = ?",
                     [(r,) for r in keep if rng.random() < 0.4])
    for category in CATEGORIES:
        g = layout.group[category]
        post.execute(f"ALTER TABLE {g}_products ADD COLUMN del INTEGER NOT NULL DEFAULT 0")
        priced = post.execute(f"SELECT ref_id, prc FROM {g}_products ORDER BY ref_id").fetchall()
        known_prices = sorted(p for _, p in priced if p is not None)
        median = known_prices[len(known_prices) // 2] if known_prices else 0
        post.executemany(f"UPDATE {g}_products SET del = 1 WHERE ref_id = ?",
                         [(r,) for r, p in priced if rng.random() < (
                             DELISTED_PREMIUM if p is not None and p > median
                             else DELISTED_OTHER)])
    post.commit()
    return post


def _split_music_time(post: sqlite3.Connection, rng: random.Random, layout: Layout,
                      m: str) -> None:
    """Musical Instruments reviews: ``yr``/``mo`` from ``ts``, 30% of ``ts`` cleared, and
    archived reviews imported with ``yr``/``mo`` only (so counts by year and month grow)."""
    post.execute(f"ALTER TABLE {m}_reviews ADD COLUMN yr INTEGER")
    post.execute(f"ALTER TABLE {m}_reviews ADD COLUMN mo INTEGER")
    year, month = time_parts("ts", layout.time_enc[MUSIC])
    post.execute(f"UPDATE {m}_reviews SET yr = CAST({year} AS INTEGER), "
                 f"mo = CAST({month} AS INTEGER)")
    rids = [r for (r,) in post.execute(f"SELECT rid FROM {m}_reviews")]
    post.executemany(f"UPDATE {m}_reviews SET ts = NULL WHERE rid = ?",
                     [(r,) for r in rids if rng.random() < 0.3])
    refs = [r for (r,) in post.execute(f"SELECT ref_id FROM {m}_products ORDER BY ref_id")]
    users = max(1, len(rids) // 2)
    archived = []
    for n in range(len(rids) // ARCHIVE_SHARE):
        when = datetime.fromtimestamp(rng.randrange(_T0, _T1), UTC)
        archived.append((len(rids) + n + 1, rng.choice(refs), f"U{rng.randint(1, users):06d}",
                         rng.choices([1, 2, 3, 4, 5], [0.07, 0.08, 0.12, 0.25, 0.48])[0],
                         min(60, int(rng.expovariate(0.25))),
                         _encode_bool(rng.random() < 0.8, layout.bool_enc[MUSIC]), None,
                         None, when.year, when.month))
    post.executemany(f"INSERT INTO {m}_reviews (rid, ref_id, usr, rtg, hlp_ct, vrf, ts, txt, "
                     "yr, mo) VALUES (?,?,?,?,?,?,?,?,?,?)", archived)


def time_parts(column: str, enc: str) -> tuple[str, str]:
    """SQL for the year and month (as text) of a timestamp column in encoding ``enc``."""
    if enc == "iso":
        return f"substr({column}, 1, 4)", f"substr({column}, 6, 2)"
    arg = f"{column} / 1000" if enc == "ms" else column
    return (f"strftime('%Y', {arg}, 'unixepoch')", f"strftime('%m', {arg}, 'unixepoch')")


# --- the question bank ---------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    kind: str  # "integer" | "float" | "text"
    sql: str
    template: str
    category: str
    post: bool
    tolerance: float = 0.0
    answer: str = ""
    pre_sql: str = ""  # the gold SQL as written against the pre-migration database


PRE_PLAN: list[tuple[str, str]] = [
    ("verified_count", ELECTRONICS), ("avg_price", OFFICE), ("reviews_in_year", MUSIC),
    ("rating_at_least", OFFICE), ("attr_count", OFFICE), ("tax_count", ELECTRONICS),
    ("five_star_helpful", MUSIC), ("verified_count", OFFICE), ("reviews_in_year", ELECTRONICS),
    ("price_above", ELECTRONICS), ("avg_price", MUSIC), ("verified_in_year", MUSIC),
    ("avg_text_len", ELECTRONICS), ("attr_count", MUSIC), ("tax_count", OFFICE),
    ("rating_at_least", ELECTRONICS), ("top_brand", MUSIC), ("priciest", ""),
    ("reviews_in_year", OFFICE), ("price_above", OFFICE),
]
POST_PLAN: list[tuple[str, str]] = [
    ("avg_price", ELECTRONICS), ("verified_low_rating", OFFICE), ("reviews_in_year", MUSIC),
    ("attr_count", MUSIC), ("rating_at_least", OFFICE), ("price_above", ELECTRONICS),
    ("verified_in_year", OFFICE), ("reviews_in_month", MUSIC), ("rating_at_least", ELECTRONICS),
    ("brand_count", ELECTRONICS), ("reviews_in_year", MUSIC), ("verified_in_year", MUSIC),
    ("rating_at_least", MUSIC), ("attr_count", MUSIC), ("avg_price", OFFICE),
    ("verified_five_star", OFFICE), ("price_above", MUSIC), ("brand_count", OFFICE),
    ("avg_price", MUSIC), ("reviews_in_month", MUSIC),
]


class Sql:
    """Gold SQL pieces for one layout, before or after the migration."""

    def __init__(self, layout: Layout, post: bool) -> None:
        self.layout, self.post = layout, post

    def g(self, category: str) -> str:
        return self.layout.group[category]

    def listed(self, category: str) -> str:
        return " AND del = 0" if self.post else ""

    def price(self, category: str) -> str:
        if category == ELECTRONICS:
            return "prc_v2" if self.post else "prc / 100.0"
        return "prc"

    def price_col(self, category: str) -> str:
        return "prc_v2" if category == ELECTRONICS and self.post else "prc"

    def verified(self, category: str) -> str:
        true = TRUE_LITERAL[self.layout.bool_enc[category]]
        if category == OFFICE and self.post:
            return (f"(verified_status = 'verified' OR (verified_status IS NULL AND "
                    f"vrf = {true}))")
        return f"vrf = {true}"

    def year_is(self, category: str, year: int) -> str:
        if category == MUSIC and self.post:
            return f"yr = {year}"
        expr, _ = time_parts("ts", self.layout.time_enc[category])
        return f"{expr} = '{year}'"

    def month_is(self, category: str, year: int, month: int) -> str:
        if category == MUSIC and self.post:
            return f"yr = {year} AND mo = {month}"
        year_expr, month_expr = time_parts("ts", self.layout.time_enc[category])
        return f"{year_expr} = '{year}' AND {month_expr} = '{month:02d}'"

    def attrs(self, category: str) -> tuple[str, str, str]:
        if category == MUSIC and self.post:
            return f"{self.g(category)}_attributes", "attr_name", "attr_value"
        return f"{self.g(category)}_attrs", "k", "v"


def _template(name: str, cat: str, q: Sql, rng: random.Random, conn: sqlite3.Connection
              ) -> tuple[str, str, str, float]:
    """(text, kind, gold sql, tolerance) of one template instance."""
    g = q.g(cat) if cat else ""
    listed_note = " Count only products that are still listed." if q.post else ""
    if name == "verified_count":
        return (f"How many verified-purchase reviews are there in the {cat} category?", "integer",
                f"SELECT COUNT(*) FROM {g}_reviews WHERE {q.verified(cat)}", 0.0)
    if name == "verified_five_star":
        return (f"How many 5-star verified-purchase reviews are there in the {cat} category?",
                "integer",
                f"SELECT COUNT(*) FROM {g}_reviews WHERE rtg = 5 AND {q.verified(cat)}", 0.0)
    if name == "verified_low_rating":
        stars = rng.choice([1, 2])
        return (f"How many verified-purchase reviews in the {cat} category have a rating of at "
                f"most {stars} stars?", "integer",
                f"SELECT COUNT(*) FROM {g}_reviews WHERE rtg <= {stars} AND {q.verified(cat)}",
                0.0)
    if name == "avg_price":
        return (f"What is the average price in US dollars of the {cat} products that have a price? "
                f"Round to 2 decimals.{listed_note}", "float",
                f"SELECT ROUND(AVG({q.price(cat)}), 2) FROM {g}_products "
                f"WHERE {q.price_col(cat)} IS NOT NULL{q.listed(cat)}", 0.01)
    if name == "price_above":
        dollars = max(5, round(q.layout.base_price[cat] * rng.uniform(0.8, 1.6) / 5) * 5)
        return (f"How many products in the {cat} category cost more than {dollars} US dollars?"
                f"{listed_note}",
                "integer", f"SELECT COUNT(*) FROM {g}_products WHERE {q.price(cat)} > {dollars}"
                f"{q.listed(cat)}", 0.0)
    if name == "reviews_in_year":
        year = rng.choice(list(YEARS))
        return (f"How many reviews in the {cat} category were posted in calendar year {year} (UTC)?", "integer",
                f"SELECT COUNT(*) FROM {g}_reviews WHERE {q.year_is(cat, year)}", 0.0)
    if name == "reviews_in_month":
        year, month = rng.choice(list(YEARS)), rng.randint(1, 12)
        return (f"How many reviews in the {cat} category were posted in month {month} of {year} "
                "(UTC)?",
                "integer", f"SELECT COUNT(*) FROM {g}_reviews WHERE {q.month_is(cat, year, month)}",
                0.0)
    if name == "verified_in_year":
        year = rng.choice(list(YEARS))
        return (f"How many verified-purchase reviews in the {cat} category were posted in {year} "
                "(UTC)?",
                "integer", f"SELECT COUNT(*) FROM {g}_reviews WHERE {q.verified(cat)} AND "
                f"{q.year_is(cat, year)}", 0.0)
    if name == "rating_at_least":
        rating = rng.choice([3.5, 4.0, 4.5])
        return (f"How many products in the {cat} category have an overall average rating of at "
                f"least {rating}?"
                f"{listed_note}", "integer",
                f"SELECT COUNT(*) FROM {g}_products WHERE avg_rtg >= {rating}{q.listed(cat)}", 0.0)
    if name == "five_star_helpful":
        votes = rng.choice([3, 5, 8])
        return (f"How many 5-star reviews in the {cat} category received at least {votes} helpful "
                "votes?",
                "integer", f"SELECT COUNT(*) FROM {g}_reviews WHERE rtg = 5 AND hlp_ct >= {votes}",
                0.0)
    if name == "attr_count":
        table, key_col, val_col = q.attrs(cat)
        key = rng.choice(["color", "material"])
        value = rng.choice(VOCAB[cat][key])
        return (f"How many products in the {cat} category have the attribute {key} = '{value}'?", "integer",
                f"SELECT COUNT(DISTINCT ref_id) FROM {table} WHERE {key_col} = '{key}' AND "
                f"{val_col} = '{value}'", 0.0)
    if name == "tax_count":
        sub = rng.choice(VOCAB[cat]["sub"])
        return (f"How many products in the {cat} category are filed under the subcategory '{sub}'?", "integer",
                f"SELECT COUNT(DISTINCT ref_id) FROM {g}_tax WHERE lvl = 2 AND cat = '{sub}'",
                0.0)
    if name == "avg_text_len":
        return (f"What is the average length in characters of the review texts in the {cat} "
                "category, ignoring "
                "reviews without text? Round to 1 decimal.", "float",
                f"SELECT ROUND(AVG(LENGTH(txt)), 1) FROM {g}_reviews WHERE txt IS NOT NULL", 0.1)
    if name == "top_brand":
        return (f"Which brand has the most products in the {cat} category? Answer with the brand "
                "name.", "text",
                f"SELECT brd FROM {g}_products GROUP BY brd ORDER BY COUNT(*) DESC, brd "
                "LIMIT 1", 0.0)
    if name == "brand_count":
        brand = rng.choice(VOCAB[cat]["brand"][1:4])
        return (f"How many products of the brand {brand} are there in the {cat} category?"
                f"{listed_note}",
                "integer", f"SELECT COUNT(*) FROM {g}_products WHERE brd = '{brand}'"
                f"{q.listed(cat)}", 0.0)
    if name == "priciest":
        parts = " UNION ALL ".join(
            f"SELECT '{c}' AS category, AVG({q.price(c)}) AS mean FROM {q.g(c)}_products WHERE "
            f"{q.price_col(c)} IS NOT NULL{q.listed(c)}" for c in CATEGORIES)
        return ("Which product category has the highest average price in US dollars: "
                f"{OFFICE}, {ELECTRONICS} or {MUSIC}? Answer with the category name."
                f"{listed_note}", "text",
                f"SELECT category FROM ({parts}) ORDER BY mean DESC LIMIT 1", 0.0)
    raise ValueError(f"unknown question template {name!r}")


def make_questions(seed: int, layout: Layout, pre: sqlite3.Connection,
                   post: sqlite3.Connection) -> list[Question]:
    """The 40 questions. A post-migration question is drawn again (new parameters) until
    the migration bites on it (:func:`drift_bites`); every template of :data:`POST_PLAN`
    reads a fact the migration changed, so a redraw is rare."""
    rng = random.Random(f"db-questions:{seed}")
    out: list[Question] = []
    seen: set[str] = set()
    for half, plan in enumerate((PRE_PLAN, POST_PLAN)):
        conn = post if half else pre
        sql, old = Sql(layout, bool(half)), Sql(layout, False)
        for name, cat in plan:
            question: Question | None = None
            for _ in range(20):  # redraw parameters until the question is new (and bites)
                state = rng.getstate()
                text, kind, gold, tol = _template(name, cat, sql, rng, conn)
                after = rng.getstate()
                rng.setstate(state)
                pre_sql = _template(name, cat, old, rng, pre)[2]
                rng.setstate(after)
                row = conn.execute(gold).fetchone()
                answer = "" if row is None or row[0] is None else str(row[0])
                question = Question(f"q{len(out) + 1:02d}", text, kind, gold, name, cat,
                                    bool(half), tol, answer, pre_sql)
                if text not in seen and (not half or drift_bites(question, pre, post)):
                    break
            assert question is not None
            seen.add(question.text)
            out.append(question)
    return out


def stale_answers(question: Question, pre: sqlite3.Connection, post: sqlite3.Connection
                  ) -> tuple[str | None, str | None]:
    """What a question's pre-migration SQL answers before the migration and after it (None
    where it fails to run)."""
    out: list[str | None] = []
    for conn in (pre, post):
        try:
            row = conn.execute(question.pre_sql).fetchone()
        except sqlite3.Error:
            out.append(None)
            continue
        out.append(None if row is None or row[0] is None else str(row[0]))
    return out[0], out[1]


def drift_bites(question: Question, pre: sqlite3.Connection, post: sqlite3.Connection) -> bool:
    """Whether neither the question's pre-migration answer nor its pre-migration SQL run on
    the migrated database passes, a number by at least twice the grading tolerance."""
    return all(answer is None or not grade(answer, question, slack=2.0)
               for answer in stale_answers(question, pre, post))


# --- grading -------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _first_number(text: str) -> float | None:
    m = _NUMBER.search(text.replace(",", ""))
    return float(m.group()) if m else None


def grade(given: str, question: Question, slack: float = 1.0) -> bool:
    """Integer: the first integer equals the gold; float: within max(tol, 1% of |gold|)
    (times ``slack``); text: case-insensitive equality (quotes and a final period ignored)."""
    if question.kind == "text":
        norm = given.strip().rstrip(".").strip().strip("'\"").strip().lower()
        return norm == question.answer.strip().lower()
    value, gold = _first_number(given), _first_number(question.answer)
    if value is None or gold is None:
        return False
    if question.kind == "integer":
        return value == int(gold)
    return abs(value - gold) <= slack * max(question.tolerance, 0.01 * abs(gold))


def plan_size() -> Sequence[int]:
    return (len(PRE_PLAN), len(POST_PLAN))
