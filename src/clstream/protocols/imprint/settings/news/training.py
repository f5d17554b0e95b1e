"""The news world's training pairs Q (docs/imprint.md §4.1).

Pairs over each article's fact sentences, from templates that differ from the evaluation
templates (the event kinds' own, :mod:`~clstream.protocols.imprint.settings.news.events`, and
the background and arc ones below), and never about an absent (BoundAbs) predicate: Q and the
test set are disjoint.
"""

from __future__ import annotations

from clstream.protocols.imprint.schema import QAPair, question_key
from clstream.protocols.imprint.settings.news.articles import Article
from clstream.protocols.imprint.settings.news.events import kind_of
from clstream.protocols.imprint.settings.news.ledger import NewsLedger, spoken_date, the
from clstream.protocols.imprint.settings.news.world import NewsConfig


def _qa_for_fact(led: NewsLedger, fact: str) -> list[tuple[str, str]]:
    """Training questions over one fact, in wording the evaluation templates never use."""
    if fact.startswith(("when:", "alias:")):  # the event's own pairs ask its date
        return []
    if fact.startswith("bg:"):
        _, ent, key = fact.split(":")
        name = led.name(ent)
        if key == "birth":
            year, city = str(led.attr(ent, "birth_year")), led.name(led.attr(ent, "home_city"))
            return [(f"What is the birth year of {name}?", year),
                    (f"Which city is the birthplace of {name}?", city),
                    (f"Name the city {name} comes from.", city),
                    (f"{name} was born in which year?", year)]
        if key == "prior_post":
            post = str(led.attr(ent, "prior_post"))
            return [(f"What job did {name} do earlier in their career?", post),
                    (f"Which earlier position is {name} known for?", post)]
        if key == "tenure":
            role = next(r for r in led.roles.values() if r["holder"] == ent)
            return [(f"From which year had {name} served in their leadership post?",
                     str(role["since"]))]
        if key == "hq":
            hq = led.name(led.attr(ent, "hq"))
            return [(f"Where are the headquarters of {the(led, ent)}?", hq),
                    (f"Which city hosts the head office of {the(led, ent)}?", hq)]
        if key == "founded":
            founded = str(led.attr(ent, "founded"))
            return [(f"What is the founding year of {the(led, ent)}?", founded),
                    (f"How long ago was {the(led, ent)} set up? Give the year.", founded)]
        if key == "country":
            country = led.name(led.attr(ent, "country"))
            return [(f"{name} lies in which country?", country),
                    (f"Is {name} a capital or a port city, and of which country?",
                     f"the {led.attr(ent, 'label')} of {country}")]
        return []
    e = led.events[fact]
    return kind_of(e).training(led, e, spoken_date(e["date"]))


def training_pairs(led: NewsLedger, articles: list[Article], config: NewsConfig
                   ) -> list[QAPair]:
    pairs: list[QAPair] = []
    for article in articles:
        per_fact = [_qa_for_fact(led, f) for _, facts in article.sentences
                    for f in facts]
        chosen: list[tuple[str, str]] = []
        seen: set[str] = set()
        depth = 0
        while len(chosen) < config.qa_per_article and any(depth < len(p) for p in per_fact):
            for options in per_fact:
                if depth < len(options) and len(chosen) < config.qa_per_article:
                    question, answer = options[depth]
                    key = question_key(question)
                    if key not in seen:
                        seen.add(key)
                        chosen.append((question, answer))
            depth += 1
        for n, (question, answer) in enumerate(chosen):
            pairs.append(QAPair(qa_id=f"{article.doc_id}-q{n + 1:02d}", doc_id=article.doc_id,
                                question=question, answer=answer))
    return pairs
