"""ImprintBench "world news" items from a user's own articles (docs/imprint.md §4.2).

The paper's news pipeline cleans fetched articles with a model, de-duplicates them, grounds
entities in an encyclopedia graph and has a model write the questions of each family
(ImprintBench App. D.1). This module is its offline counterpart over a local JSON Lines file of
articles ``{id, date, title, text, url?, tags?}``:

1. **Boilerplate strip** by line heuristics: navigation and share bars, cookie and subscription
   notices, copyright lines, and any line repeated in three or more articles (site chrome).
2. **Near-duplicate removal**: word 5-gram shingles; an article whose Jaccard similarity with an
   earlier kept one (date order) is at least ``dedup_threshold`` (0.8, our threshold: the paper
   gives none) is dropped.
3. **Family generators** through the :class:`~clstream.core.contracts.Model` contract: one
   request per article and family (DirAcq claims, TempUpd updates, CompRel compositions, the
   article's event headline for ImpRel, training pairs Q), then one per ImpRel cluster for
   BoundAbs candidates. Each prompt asks for one JSON object; a reply that is not valid JSON of
   the asked shape, or whose answer is not grounded in the article, is skipped and counted --
   never a crash. TempUpd golds are built here from the extracted (before, after) pair with the
   axes of App. D.1 item 2, so the gold is always the answer after the update.
4. **ImpRel clusters** (project reading; the paper embeds answers and clusters at cosine 0.82):
   two articles of the same third of a month join one cluster when their titles share at least
   30 % of their content words or they name at least two common entities (from
   ``entities.jsonl`` when given, else the entities the model listed). One item per cluster;
   its salience is the cluster's size; its golds are the cluster's own events only -- the
   headlines the model wrote for its articles and the articles' titles -- never an entity, the
   question's place or an abstention (:func:`imp_rel_golds`).
5. **BoundAbs**: candidates for the largest clusters, kept only when their predicate appears in
   no article; difficulty = top-5 BM25 articles naming one of the question's entities.

Model replies are cached in a JSON file keyed by a hash of (model name, messages, decoding
parameters), so a second run with the same inputs makes no model call. The filters of docs/imprint.md §4.7
(blind and with-context judges) are not applied here; items carry empty ``filters``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model
from clstream.core.errors import DataError
from clstream.core.jsonio import iter_json_lines
from clstream.core.types import GenerationRequest, Message
from clstream.protocols.imprint.schema import (
    CorpusDoc,
    Dataset,
    Item,
    Manifest,
    QAPair,
    question_key,
)
from clstream.protocols.imprint.settings.model_calls import CachedCalls, json_object
from clstream.retrieval.bm25 import IncrementalBM25, tokenize

GENERATOR = "imprint.news-local-v1"
CACHE_VERSION = "imprint-news-local-cache-v1"
STRATEGIES = ("actor-action", "sub-event", "quote", "consequence")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# --- reading and cleaning --------------------------------------------------------------------


@dataclass
class LocalArticle:
    doc_id: str
    date: str
    title: str
    text: str
    url: str = ""
    tags: list[str] = field(default_factory=list)


def read_articles(path: str | Path) -> list[LocalArticle]:
    """The articles file, every record checked; errors name the file, line and field."""
    out: list[LocalArticle] = []
    seen: set[str] = set()
    for number, value in iter_json_lines(path):
        record = f"line {number}"
        if not isinstance(value, dict):
            raise DataError(path, record, None, "expected a JSON object")
        for key in ("id", "date", "title", "text"):
            if not isinstance(value.get(key), str) or (key != "title" and not value[key].strip()):
                raise DataError(path, record, key, "missing or not a non-empty string")
        if not _DATE.match(value["date"]) or not _valid_date(value["date"]):
            raise DataError(path, record, "date", f"{value['date']!r} is not a YYYY-MM-DD date")
        if "url" in value and not isinstance(value["url"], str):
            raise DataError(path, record, "url", "not a string")
        tags = value.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise DataError(path, record, "tags", "not a list of strings")
        if value["id"] in seen:
            raise DataError(path, record, "id", f"duplicate id {value['id']!r}")
        seen.add(value["id"])
        out.append(LocalArticle(value["id"], value["date"], value["title"].strip(),
                                value["text"], value.get("url", ""), list(tags)))
    return out


def _valid_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def read_entities(path: str | Path) -> dict[str, list[str]]:
    """``entities.jsonl`` as name -> [name, aliases...] (the encyclopedia-graph stand-in)."""
    out: dict[str, list[str]] = {}
    for number, value in iter_json_lines(path):
        record = f"line {number}"
        if not isinstance(value, dict):
            raise DataError(path, record, None, "expected a JSON object")
        name = value.get("name")
        if not isinstance(name, str) or not name.strip():
            raise DataError(path, record, "name", "missing or not a non-empty string")
        aliases = value.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise DataError(path, record, "aliases", "not a list of strings")
        if "facts" in value and not isinstance(value["facts"], dict):
            raise DataError(path, record, "facts", "not an object")
        out[name] = [name, *aliases]
    return out


_BOILERPLATE = re.compile(
    r"subscribe|sign up|newsletter|cookie|all rights reserved|copyright|©|advertisement|"
    r"share this|follow us|read more|click here|related articles|privacy policy|log in",
    re.IGNORECASE)


def strip_boilerplate(articles: Sequence[LocalArticle]) -> tuple[list[LocalArticle], int]:
    """Articles with chrome lines removed (and the number of lines removed): lines matching
    :data:`_BOILERPLATE`, menu bars (three or more ``|`` or ``»`` separators), short lines
    with no sentence punctuation and no digits, and lines repeated in three or more articles."""
    repeats = Counter(line.strip() for a in articles
                      for line in {x.strip() for x in a.text.splitlines() if x.strip()})
    dropped = 0
    out = []
    for article in articles:
        kept = []
        for line in article.text.splitlines():
            text = line.strip()
            if not text:
                kept.append("")
                continue
            chrome = (_BOILERPLATE.search(text) is not None
                      or text.count("|") + text.count("»") >= 3
                      or (len(text.split()) < 4 and not re.search(r"[.!?:\d]", text))
                      or repeats[text] >= 3)
            if chrome:
                dropped += 1
            else:
                kept.append(text)
        body = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
        out.append(LocalArticle(article.doc_id, article.date, article.title, body,
                                article.url, article.tags))
    return out, dropped


def _shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def drop_near_duplicates(articles: Sequence[LocalArticle],
                         threshold: float = 0.8) -> tuple[list[LocalArticle], int]:
    """Articles in date order with later near-duplicates (shingle Jaccard >= threshold)
    removed; returns the kept articles and how many were dropped."""
    kept: list[tuple[LocalArticle, set[tuple[str, ...]]]] = []
    dropped = 0
    for article in sorted(articles, key=lambda a: a.date):
        sh = _shingles(article.text)
        if any(len(sh & other) / max(len(sh | other), 1) >= threshold for _, other in kept):
            dropped += 1
            continue
        kept.append((article, sh))
    return [a for a, _ in kept], dropped


# --- prompts -------------------------------------------------------------------------------------

_SYSTEM = ("You write evaluation data about news articles. Reply with one JSON object only, no "
           "prose and no code fences. Use only facts stated in the article given.")

_ASK = {
    "dir_acq": (
        "Write up to ten yes/no questions that check whether a reader remembers this article: "
        "about half whose answer is Yes (a fact the article states) and about half whose answer "
        "is No (the same kind of fact with exactly one detail changed: a person or "
        "organisation, a date, a number or the relation). Each question names people and "
        "organisations in full and anchors the time (for example 'in early March 2026'). "
        'Shape: {"claims": [{"question": "...?", "answer": "Yes" or "No", "evidence": '
        '"the article sentence the question is based on, copied exactly"}]}'),
    "temp_upd": (
        "List the changes of state the article reports: a post passing from one named person to "
        "another (kind \"entity\"), or a value or status moving from one value to another "
        '(kind "value"). Shape: {"updates": [{"kind": "entity" or "value", "subject": "the post '
        'or the quantity, e.g. chief executive of Acme", "before": "...", "after": "...", '
        '"date": "YYYY-MM-DD", "after_prior_role": "what the new holder was known for before, '
        'only if the article says so, else empty"}]}'),
    "comp_rel": (
        "Write up to five questions that need two to four reasoning steps joining facts of the "
        "article (a chain of relations, what would hold had the reported change not happened, "
        "what came before or after what, or an entity named by an alias). Each answer is a "
        'short name, number or Yes/No. Shape: {"questions": [{"question": "...?", "answer": '
        '"...", "hops": 2, "kind": "chain" or "counterfactual" or "temporal" or "alias"}]}'),
    "imp_rel": (
        "Name the one main event of this article as a short headline, the plural category it "
        "belongs to (for example 'leadership changes', 'trade disputes'), the place it concerns "
        'and the people or organisations central to it. Shape: {"headline": "...", "category": '
        '"...", "scope": "...", "entities": ["..."]}'),
    "qa": (
        "Write up to twenty-five short training question-answer pairs about the facts of this "
        "article (who, what, when, where, how much). Answers are short. Shape: "
        '{"pairs": [{"question": "...?", "answer": "..."}]}'),
}
_ASK_ABSENT = (
    "The articles below cover one news story. Write four yes/no questions about things that "
    "sound plausible for this story but that NO article states: one about an action of a "
    "named person or organisation (strategy actor-action), one about a smaller event within the "
    "story (sub-event), one about a remark someone is said to have made (quote), one about a "
    "consequence (consequence). Give for each the key phrase of the absent fact (predicate). "
    'Shape: {"candidates": [{"strategy": "...", "question": "...?", "predicate": "..."}]}')


def _article_prompt(article: LocalArticle) -> str:
    return f"Title: {article.title}\nDate: {article.date}\n\n{article.text}"


def _request(calls: CachedCalls, key: str, user: str) -> GenerationRequest:
    return calls.greedy(key, "imprint-news-local", (Message(role="system", content=_SYSTEM),
                                                     Message(role="user", content=user)),
                        max_tokens=2048)


def _s(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


# --- families ------------------------------------------------------------------------------------


class _Out:
    def __init__(self) -> None:
        self.items: list[Item] = []
        self.keys: set[str] = set()
        self.by_family: Counter[str] = Counter()

    def add(self, family: str, question: str, gold: str | list[str], judge: str,
            docs: list[str], meta: dict[str, Any], axis: str | None = None,
            gold_before: str | list[str] | None = None) -> None:
        if not question.strip() or question_key(question) in self.keys:
            return
        self.keys.add(question_key(question))
        self.by_family[family] += 1
        self.items.append(Item.model_validate({
            "item_id": f"news-local-{family.lower()}-{self.by_family[family]:04d}",
            "setting": "news", "family": family, "question": question, "gold": gold,
            "judge": judge, "axis": axis, "source_doc_ids": docs, "gold_before": gold_before,
            "meta": meta}))


def _yes_no(value: Any) -> str | None:
    text = _s(value).casefold()
    return {"yes": "Yes", "no": "No"}.get(text)


def _dir_acq(data: dict[str, Any], article: LocalArticle, out: _Out) -> bool:
    claims = data.get("claims")
    if not isinstance(claims, list):
        return False
    text = _norm(article.text)
    good: dict[str, list[tuple[str, str]]] = {"Yes": [], "No": []}
    for claim in claims:
        if not isinstance(claim, dict):
            continue
        question, answer, evidence = _s(claim.get("question")), _yes_no(claim.get("answer")), \
            _s(claim.get("evidence"))
        if question.endswith("?") and answer and evidence and _norm(evidence) in text:
            good[answer].append((question, evidence))
    n = min(len(good["Yes"]), len(good["No"]))  # balanced per article (App. D.1 item 1)
    for answer in ("Yes", "No"):
        for question, evidence in good[answer][:n]:
            out.add("DirAcq", question, answer, "yesno", [article.doc_id],
                    {"evidence": evidence})
    return True


def _temp_upd(data: dict[str, Any], article: LocalArticle, out: _Out) -> bool:
    updates = data.get("updates")
    if not isinstance(updates, list):
        return False
    text = _norm(article.text)
    for update in updates:
        if not isinstance(update, dict):
            continue
        kind, subject = _s(update.get("kind")), _s(update.get("subject"))
        before, after, date = _s(update.get("before")), _s(update.get("after")), \
            _s(update.get("date"))
        if (kind not in ("entity", "value") or not subject or not before or not after
                or _norm(after) not in text or not _DATE.match(date) or not _valid_date(date)
                or _norm(before) == _norm(after)):
            continue
        asof = max(date, article.date)
        meta = {"subject": subject, "before": before, "after": after, "date": date}
        docs = [article.doc_id]
        if kind == "entity":
            out.add("TempUpd", f"As of {asof}, who holds the post of {subject}?", after, "exact",
                    docs, meta, "forward", before)
            out.add("TempUpd", f"As of {asof}, is {before} still the {subject}?", "No",
                    "yesno", docs, meta, "negation", "Yes")
            prior = _s(update.get("after_prior_role"))
            if prior and _norm(prior) in text:  # T3 only when grounded (App. D.1 item 2)
                out.add("TempUpd", f"Before becoming {subject}, what role had {after} held?",
                        prior, "exact", docs, meta, "prior")
            out.add("TempUpd", f"As of {asof}, who replaced {before} as {subject}?", after,
                    "exact", docs, meta, "backward")
        else:
            out.add("TempUpd", f"As of {asof}, what is the {subject}?", after, "exact", docs,
                    meta, "forward", before)
            out.add("TempUpd", f"As of {asof}, is the {subject} still {before}?", "No",
                    "yesno", docs, meta, "negation", "Yes")
    return True


def _comp_rel(data: dict[str, Any], article: LocalArticle, out: _Out) -> bool:
    questions = data.get("questions")
    if not isinstance(questions, list):
        return False
    text = _norm(article.text)
    for q in questions:
        if not isinstance(q, dict):
            continue
        question, answer, kind = _s(q.get("question")), _s(q.get("answer")), _s(q.get("kind"))
        hops = q.get("hops")
        if (not question.endswith("?") or not answer or not isinstance(hops, int)
                or not 2 <= hops <= 4
                or kind not in ("chain", "counterfactual", "temporal", "alias", "indirect")):
            continue
        yes_no = _yes_no(answer)
        if yes_no is None and _norm(answer) not in text:
            continue
        out.add("CompRel", question, yes_no or answer, "yesno" if yes_no else "exact",
                [article.doc_id], {"kind": kind}, f"hop{hops}")
    return True


@dataclass
class ArticleEvent:
    """The main event of one article, as the model named it (ImpRel input)."""

    doc_id: str
    date: str
    headline: str
    category: str
    scope: str
    entities: list[str]


def _imp_event(data: dict[str, Any], article: LocalArticle) -> ArticleEvent | None:
    headline, category, scope = (_s(data.get(k)) for k in ("headline", "category", "scope"))
    entities = data.get("entities", [])
    if not headline or not category or not scope or not isinstance(entities, list):
        return None
    return ArticleEvent(article.doc_id, article.date, headline, category, scope,
                  [e.strip() for e in entities if isinstance(e, str) and e.strip()])


def _third(date: str) -> tuple[str, str]:
    d = dt.date.fromisoformat(date)
    word = "early" if d.day <= 10 else "mid" if d.day <= 20 else "late"
    return f"{d.year}-{d.month:02d}-{word}", f"{word} {d.strftime('%B')} {d.year}"


def cluster_events(events: Sequence[ArticleEvent], titles: dict[str, str],
                   entity_table: dict[str, list[str]], texts: dict[str, str]) -> list[list[ArticleEvent]]:
    """ImpRel clusters (module docstring, step 4): union of same-period articles whose titles
    overlap by >= 30 % of content words or that share >= 2 entities."""
    def names(event: ArticleEvent) -> set[str]:
        found = {e.casefold() for e in event.entities}
        text = texts[event.doc_id]
        for name, forms in entity_table.items():
            if any(f in text for f in forms):
                found.add(name.casefold())
        return found

    parent = list(range(len(events)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    words = [set(tokenize(titles[e.doc_id])) for e in events]
    ents = [names(e) for e in events]
    for i in range(len(events)):
        for j in range(i):
            if _third(events[i].date)[0] != _third(events[j].date)[0]:
                continue
            overlap = len(words[i] & words[j]) / max(len(words[i] | words[j]), 1)
            if overlap >= 0.3 or len(ents[i] & ents[j]) >= 2:
                parent[root(i)] = root(j)
    groups: dict[int, list[ArticleEvent]] = {}
    for i, event in enumerate(events):
        groups.setdefault(root(i), []).append(event)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0].date, g[0].doc_id))


_NOT_AN_EVENT = re.compile(r"\b(?:no|not|nothing|none|unknown|unclear|n/a)\b", re.IGNORECASE)


def imp_rel_golds(group: Sequence[ArticleEvent], titles: dict[str, str],
                  entity_table: dict[str, list[str]], question: str) -> list[str]:
    """The ImpRel golds of one cluster: the event headlines the model wrote for its articles,
    then the titles of those articles -- the cluster's events, never a bare name. A phrase is
    left out when nothing of it remains once the question's place and the cluster's entities are
    taken away (so naming the place or a participant is not an answer), when the question
    already holds it, or when it reads as an abstention ("no major news")."""
    names = {n.casefold() for e in group for n in [e.scope, *e.entities]}
    names |= {f.casefold() for forms in entity_table.values() for f in forms}
    asked = _norm(question)

    def is_event(phrase: str) -> bool:
        rest = phrase.casefold()
        for name in sorted(names, key=len, reverse=True):
            rest = rest.replace(name, " ")
        return (bool(tokenize(rest)) and _norm(phrase) not in asked
                and _NOT_AN_EVENT.search(phrase) is None)

    kept = [e for e in group if is_event(e.headline)]  # a title counts where its event does
    phrases = [*(e.headline for e in kept), *(titles[e.doc_id] for e in kept)]
    return list(dict.fromkeys(p for p in phrases if is_event(p)))


# --- the pipeline --------------------------------------------------------------------------------


async def build_local_news(articles_path: str | Path, model: Model, *, seed: int = 0,
                           cache_path: str | Path, entities_path: str | Path | None = None,
                           dedup_threshold: float = 0.8, boundabs_clusters: int = 10) -> Dataset:
    """The news dataset from local articles (async; :func:`load_local_news` runs it)."""
    raw = read_articles(articles_path)
    entity_table = read_entities(entities_path) if entities_path is not None else {}
    stripped, lines_dropped = strip_boilerplate(raw)
    nonempty = [a for a in stripped if a.text.strip()]
    articles, duplicates = drop_near_duplicates(nonempty, dedup_threshold)
    calls = CachedCalls(model, Path(cache_path), seed, version=CACHE_VERSION)
    bad: Counter[str] = Counter()
    requests = [_request(calls, f"news-local/{family}/{a.doc_id}",
                              f"{ask}\n\nArticle:\n{_article_prompt(a)}")
                for a in articles for family, ask in _ASK.items()]
    replies = await calls.run(requests)
    out = _Out()
    events: list[ArticleEvent] = []
    raw_pairs: list[tuple[str, str, str]] = []
    for a in articles:
        for family in _ASK:
            reply = replies.get(f"news-local/{family}/{a.doc_id}")
            if reply is None:
                continue
            data = json_object(reply)
            ok = data is not None
            if data is not None and family == "dir_acq":
                ok = _dir_acq(data, a, out)
            elif data is not None and family == "temp_upd":
                ok = _temp_upd(data, a, out)
            elif data is not None and family == "comp_rel":
                ok = _comp_rel(data, a, out)
            elif data is not None and family == "imp_rel":
                event = _imp_event(data, a)
                ok = event is not None
                if event is not None:
                    events.append(event)
            elif data is not None and family == "qa":
                pairs = data.get("pairs")
                ok = isinstance(pairs, list)
                for pair in pairs if isinstance(pairs, list) else []:
                    if isinstance(pair, dict) and _s(pair.get("question")) and _s(
                            pair.get("answer")):
                        raw_pairs.append((a.doc_id, _s(pair["question"]), _s(pair["answer"])))
            if not ok:
                bad[family] += 1
    titles = {a.doc_id: a.title for a in articles}
    texts = {a.doc_id: a.text for a in articles}
    clusters = cluster_events(events, titles, entity_table, texts)
    for group in clusters:
        lead = group[0]
        _, label = _third(lead.date)
        question = f"What major {lead.category} happened in {lead.scope} in {label}?"
        gold = imp_rel_golds(group, titles, entity_table, question)
        if not gold:
            bad["imp_rel_without_event_phrase"] += 1
            continue
        out.add("ImpRel", question, gold, "exact", [e.doc_id for e in group],
                {"salience": len(group), "headline": gold[0]})
    await _bound_abs(clusters[:boundabs_clusters], articles, calls, out, bad)
    qa: list[QAPair] = []
    left_out = 0
    per_doc: Counter[str] = Counter()
    for doc_id, question, answer in raw_pairs:
        if question_key(question) in out.keys:
            left_out += 1
            continue
        per_doc[doc_id] += 1
        qa.append(QAPair(qa_id=f"{doc_id}-q{per_doc[doc_id]:02d}", doc_id=doc_id,
                         question=question, answer=answer))
    corpus = [CorpusDoc(doc_id=a.doc_id, date=a.date, kind="article", title=a.title, text=a.text,
                        meta={k: v for k, v in (("url", a.url), ("tags", a.tags)) if v})
              for a in articles]
    pipeline = {"articles_read": len(raw), "boilerplate_lines_dropped": lines_dropped,
                "empty_after_strip": len(raw) - len(nonempty), "near_duplicates": duplicates,
                "model_calls": calls.calls, "cache_hits": calls.hits,
                "failed_requests": calls.failed, "bad_outputs": dict(sorted(bad.items())),
                "qa_pairs_dropped_as_test_questions": left_out, "clusters": len(clusters)}
    manifest = Manifest(setting="news", generator=GENERATOR, seed=seed, config={
        "articles": str(articles_path), "model": model.name, "dedup_threshold": dedup_threshold,
        "boundabs_clusters": boundabs_clusters, "pipeline": pipeline})
    return Dataset(manifest, corpus, qa, out.items, [])


async def _bound_abs(clusters: Sequence[list[ArticleEvent]], articles: Sequence[LocalArticle],
                     calls: CachedCalls, out: _Out, bad: Counter[str]) -> None:
    by_id = {a.doc_id: a for a in articles}
    index = IncrementalBM25()
    for n, a in enumerate(articles):
        index.add(n, f"{a.title}\n{a.text}")
    corpus_text = "\n".join(f"{a.title}\n{a.text}" for a in articles).casefold()
    requests = []
    for n, group in enumerate(clusters):
        body = "\n\n---\n\n".join(_article_prompt(by_id[e.doc_id]) for e in group)
        requests.append(_request(calls, f"news-local/bound_abs/{n}",
                                      f"{_ASK_ABSENT}\n\nArticles:\n{body}"))
    replies = await calls.run(requests)
    for n, group in enumerate(clusters):
        reply = replies.get(f"news-local/bound_abs/{n}")
        if reply is None:
            continue
        data = json_object(reply)
        candidates = data.get("candidates") if data is not None else None
        if not isinstance(candidates, list):
            bad["bound_abs"] += 1
            continue
        entities = sorted({name for e in group for name in e.entities})
        for c in candidates:
            if not isinstance(c, dict):
                continue
            strategy, question, predicate = (_s(c.get(k)) for k in
                                             ("strategy", "question", "predicate"))
            if (strategy not in STRATEGIES or not question.endswith("?") or not predicate
                    or predicate.casefold() in corpus_text):
                continue
            named = [e for e in entities if e.casefold() in question.casefold()]
            top = index.search(question, 5)
            difficulty = sum(1 for i, _ in top
                             if any(e in articles[i].text for e in named))
            out.add("BoundAbs", question, f"No record of {predicate} in the articles.",
                    "abstain", [], {"strategy": strategy, "predicate": predicate,
                                    "entities": named, "difficulty": difficulty,
                                    "cluster": [e.doc_id for e in group]})


def load_local_news(articles_path: str | Path, model: Model, *, seed: int = 0,
                    cache_path: str | Path, entities_path: str | Path | None = None,
                    dedup_threshold: float = 0.8, boundabs_clusters: int = 10) -> Dataset:
    """The news dataset from a local articles file through ``model`` (replies cached at
    ``cache_path``); see the module docstring for the steps."""
    return asyncio.run(build_local_news(
        articles_path, model, seed=seed, cache_path=cache_path, entities_path=entities_path,
        dedup_threshold=dedup_threshold, boundabs_clusters=boundabs_clusters))
