"""The news world's articles (docs/imprint.md §4.1; ImprintBench App. D.1).

Each event yields dated articles (never before the event) that mix the event's statement (with
a random alias for the secondary entities, :mod:`~clstream.protocols.imprint.settings.news.
events`) and, right after it, the sentence that dates it; background sentences (the first
article of an event always places its organisation: headquarters and that city's country);
for a leadership change, a sentence naming the new holder by an alias (honorific or former
post), so every alias a question uses occurs in an article first; distractor sentences about
other arcs (undated, so no sentence places another arc in its period) and neutral filler.
Every fact sentence is recorded with its fact ids -- an event id for its statement,
``when:<event>`` for its date, ``bg:<entity>:<key>`` for background, ``alias:<entity>:<alias>``
for an alias mention -- which the dataset keeps in each document's ``meta["facts"]`` as
``[sentence index, fact id]``.

Sentences are written so that :func:`clstream.models.builtin.reader.split_sentences` splits
them exactly (no abbreviation periods, no quotation marks): the recorded indices refer to that
split of the document text (:func:`sentence_split`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from clstream.protocols.imprint.settings.news.events import (
    article_title,
    is_follow_up,
    kind_of,
    timing_sentence,
)
from clstream.protocols.imprint.settings.news.ledger import (
    NewsLedger,
    cap,
    plus_days,
    post,
    the,
)
from clstream.protocols.imprint.settings.news.world import Plan

_FILLER = ("Analysts said further details were expected in the coming days.",
           "Officials gave no timetable for the next steps.",
           "Local commentators followed the developments closely.",
           "Reaction among observers was measured.",
           "The announcement came after weeks of speculation in the local press.",
           "Several observers said the full picture would take time to emerge.",
           "Trading in the capital was otherwise quiet for the season.",
           "Commentators noted that the week had been a busy one for regional newsrooms.",
           "Officials promised to publish a fuller account at a later date.")


# --- sentences -----------------------------------------------------------------------------------


class Writer:
    """Renders events and facts as sentences (wording of this project, several variants)."""

    def __init__(self, ledger: NewsLedger, rng: random.Random):
        self.led = ledger
        self.rng = rng

    def role_text(self, role: str) -> str:
        return post(self.led, role)

    def event_sentence(self, e: dict[str, Any], full: bool) -> str:
        """The event stated once; the answer-bearing entity always by its full name."""
        return kind_of(e).statement(self.led, self.rng, e, full)

    def background(self, fact: str) -> str:
        """A stable background fact ("bg:<entity>:<key>") as a sentence."""
        _, entity, key = fact.split(":")
        led = self.led
        if key == "birth":
            city = led.attr(entity, "home_city")
            return (f"{led.name(entity)} was born in {led.name(city)} in "
                    f"{led.attr(entity, 'birth_year')}.")
        if key == "prior_post":
            return (f"Earlier in their career, {led.name(entity)} served as "
                    f"{led.attr(entity, 'prior_post')}.")
        if key == "tenure":
            role = next(r for r in led.roles.values() if r["holder"] == entity)
            return (f"{led.name(entity)} had served as {self.role_text(role['id'])} since "
                    f"{role['since']}.")
        if key == "hq":  # also where an organisation's short name is introduced
            known = led.entities[entity]["aliases"]
            also = f", known as {known[0]}," if known else ""
            return (f"{cap(the(led, entity))}{also} has its headquarters in "
                    f"{led.name(led.attr(entity, 'hq'))}.")
        if key == "founded":
            return f"{cap(the(led, entity))} was founded in {led.attr(entity, 'founded')}."
        if key == "country":
            return (f"{led.name(entity)} is the {led.attr(entity, 'label')} of "
                    f"{led.name(led.attr(entity, 'country'))}.")
        raise ValueError(fact)

    def alias_mention(self, person: str, org: str, incoming: bool) -> tuple[str, str]:
        """(alias, sentence): a later mention of an incoming or outgoing post holder by an
        honorific or a former post, never the bare full name."""
        alias = str(self.rng.choice(self.led.entities[person]["aliases"][1:]))
        the_org = the(self.led, org)
        text = self.rng.choice((
            f"{alias} is expected to set out priorities for {the_org} within weeks.",
            f"{alias} has promised an early review of the work of {the_org}.",
        ) if incoming else (
            f"{alias} did not comment on the handover at {the_org}.",
            f"{alias} is expected to stay on as an adviser to {the_org} until the summer.",
        ))
        return alias, cap(text)


@dataclass
class Article:
    date: str
    order: int
    title: str
    sentences: list[tuple[str, list[str]]]  # (sentence, fact ids)
    arc: str
    events: list[str]
    doc_id: str = ""


def _event_background(led: NewsLedger, e: dict[str, Any]) -> list[str]:
    """Background facts an article about ``e`` may carry."""
    t = e["type"]
    if t == "role_change":
        org = led.roles[e["role"]]["org"]
        return [f"bg:{e['new']}:prior_post", f"bg:{e['new']}:birth", f"bg:{e['old']}:tenure",
                f"bg:{e['old']}:birth", f"bg:{org}:hq", f"bg:{org}:founded",
                f"bg:{led.attr(e['new'], 'home_city')}:country",
                f"bg:{led.attr(org, 'hq')}:country"]
    orgs = [e[k] for k in ("buyer", "target", "a", "b", "org", "party") if k in e
            and led.entities.get(e[k], {}).get("type") == "org"]
    if t == "value_change":
        region = led.quantities[e["quantity"]]["region"]
        orgs += [o for o, r in led.entities.items() if r["type"] == "org"
                 and r["attrs"]["org_type"] == "central bank" and r["attrs"]["country"] == region]
    people = [e["person"]] if "person" in e else []
    facts = [f"bg:{o}:{k}" for o in orgs for k in ("hq", "founded")]
    facts += [f"bg:{p}:{k}" for p in people for k in ("birth", "prior_post")]
    facts += [f"bg:{led.attr(o, 'hq')}:country" for o in orgs]
    return facts


def event_org(led: NewsLedger, e: dict[str, Any]) -> str | None:
    """The organisation whose country is an event's region (None for a country's own
    figures and for follow-ups)."""
    if e["type"] == "role_change":
        return str(led.roles[e["role"]]["org"])
    if e["type"] == "value_change":
        org = led.quantities[e["quantity"]].get("org")
        return None if org is None else str(org)
    return next((str(e[k]) for k in ("buyer", "a", "org", "party") if k in e
                 and not is_follow_up(e)), None)


def _title_for(led: NewsLedger, e: dict[str, Any], follow_up: bool) -> str:
    said = kind_of(e).follow_up_title
    if said is not None:
        return f"{led.attr(e['person'], 'surname')} {said}"
    title = article_title(led, e)
    return f"Reaction: {title}" if follow_up else title


def write_articles(plan: Plan, led: NewsLedger) -> list[Article]:
    rng, config = plan.rng, plan.config
    writer = Writer(led, rng)
    articles: list[Article] = []
    timeline = led.timeline
    for order, e in enumerate(timeline):
        n_articles = rng.randint(*config.articles_per_event)
        if is_follow_up(e):
            n_articles = 1
        for k in range(n_articles):
            date = plus_days(e["date"], 0 if k == 0 else rng.randint(1, 4))
            statement = writer.event_sentence(e, full=k == 0)
            facts = [e["id"]]
            if e["type"] == "role_change" and led.name(e["old"]) not in statement:
                aliases = sorted(led.entities[e["old"]]["aliases"], key=len, reverse=True)
                named = next(a for a in aliases if a in statement)
                facts.append(f"alias:{e['old']}:{named}")
            # Blocks are kept whole when filler is placed: an event is dated right after it.
            blocks: list[list[tuple[str, list[str]]]] = [
                [(statement, facts), (timing_sentence(e), [f"when:{e['id']}"])]]
            if e["type"] == "role_change":
                for person, incoming in ((e["new"], True), (e["old"], False)):
                    alias, text = writer.alias_mention(person, led.roles[e["role"]]["org"],
                                                       incoming)
                    blocks.append([(text, [f"alias:{person}:{alias}"])])
            background = _event_background(led, e)
            rng.shuffle(background)
            first = []
            org = event_org(led, e)
            if k == 0 and org is not None:  # the region of the event's arc, always placed
                first += [f"bg:{org}:hq", f"bg:{led.attr(org, 'hq')}:country"]
            if e["type"] == "role_change" and k == 0:  # the new holder's earlier post (T3)
                first.insert(0, f"bg:{e['new']}:prior_post")
            background = first + [f for f in background if f not in first]
            for fact in background[: len(first) + rng.randint(3 - len(first) // 2, 5)]:
                blocks.append([(writer.background(fact), [fact])])
            others = [o for o in timeline if o["arc"] != e["arc"] and o["date"] <= date
                      and not is_follow_up(o)]
            for o in rng.sample(others, min(len(others), rng.randint(2, 4))):
                lead = rng.choice(("Elsewhere, ", "Separately, ", "Also in the news, "))
                text = writer.event_sentence(o, full=True)
                if text.split()[0] == "The":
                    text = text[0].lower() + text[1:]
                blocks.append([(lead + text, [o["id"]])])
            target = rng.randint(*config.words_per_article)
            fillers = list(_FILLER)
            rng.shuffle(fillers)
            words = sum(len(s.split()) for block in blocks for s, _ in block)
            while words < target and fillers:
                filler = fillers.pop()
                words += len(filler.split())
                blocks.insert(rng.randint(1, len(blocks)), [(filler, [])])
            sents = [sentence for block in blocks for sentence in block]
            articles.append(Article(date, order * 10 + k, _title_for(led, e, k > 0),
                                    sents, e["arc"], [e["id"]]))
    articles.sort(key=lambda a: (a.date, a.order))
    for n, article in enumerate(articles):
        article.doc_id = f"news-{n + 1:04d}"
    return articles


def article_text(article: Article) -> str:
    """Paragraphs of up to four sentences; the splitter also breaks at newlines, so sentence
    indices are the same either way."""
    sentences = [s for s, _ in article.sentences]
    return "\n\n".join(" ".join(sentences[i:i + 4]) for i in range(0, len(sentences), 4))


def sentence_split(text: str) -> list[str]:
    """The split the recorded sentence indices refer to (same as the builtin reader's)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])[\"')\]]*\s+|\n+", text) if s.strip()]
