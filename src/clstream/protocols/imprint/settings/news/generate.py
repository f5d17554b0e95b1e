"""The news setting generated offline from a seed (docs/imprint.md §4.1; ImprintBench
§2, App. D.1), assembled from its parts:

* :mod:`~clstream.protocols.imprint.settings.news.world` -- the configuration, the invented
  entities and the plan of events and arcs;
* :mod:`~clstream.protocols.imprint.settings.news.ledger` -- the ledger every gold is derived
  from, with the dates and names the text uses;
* :mod:`~clstream.protocols.imprint.settings.news.events` -- one table entry per event kind;
* :mod:`~clstream.protocols.imprint.settings.news.articles` -- the corpus;
* :mod:`~clstream.protocols.imprint.settings.news.items` -- the held-out items: DirAcq,
  TempUpd, CompRel;
* :mod:`~clstream.protocols.imprint.settings.news.arc_items` -- ImpRel and BoundAbs;
* :mod:`~clstream.protocols.imprint.settings.news.training` -- the training pairs Q.

The one random source is drawn in a fixed order (world, plan, articles, training pairs, then
the families in turn), so a config always gives the same bytes.
"""

from __future__ import annotations

import random

from clstream.core.errors import SpecError
from clstream.protocols.imprint.schema import (
    REPORTED_FAMILIES,
    CorpusDoc,
    Dataset,
    Manifest,
    check_disjoint,
)
from clstream.protocols.imprint.settings.news.arc_items import bound_abs, imp_rel, main_event
from clstream.protocols.imprint.settings.news.articles import article_text, write_articles
from clstream.protocols.imprint.settings.news.events import headline, is_follow_up
from clstream.protocols.imprint.settings.news.items import (
    Items,
    Support,
    comp_rel,
    corpus_window,
    dir_acq,
    temp_upd,
)
from clstream.protocols.imprint.settings.news.ledger import NewsLedger, led_records
from clstream.protocols.imprint.settings.news.training import training_pairs
from clstream.protocols.imprint.settings.news.world import (
    NewsConfig,
    Plan,
    build_world,
    finish_events,
    plan_events,
)
from clstream.protocols.imprint.stage_timings import timed_build

# The config is offered here with the generator that takes it, so a caller needs one import.
__all__ = ["GENERATOR", "NewsConfig", "generate_news"]

GENERATOR = "imprint.news-world-v2"

_HINTS = {"DirAcq": "raise n_deals or days", "TempUpd": "raise n_roles or n_quantities",
          "CompRel": "raise n_roles or n_people", "ImpRel": "raise n_roles or n_deals",
          "BoundAbs": "raise boundabs_arcs"}


@timed_build("template_build")
def generate_news(config: NewsConfig | None = None) -> Dataset:
    """The news setting's dataset for ``config`` (one instance, ``"all"``), byte-identical
    for the same config."""
    config = config or NewsConfig()
    config.validate()
    rng = random.Random(config.seed)
    world = build_world(config, rng)
    plan = Plan(config, rng, world)
    plan_events(plan)
    finish_events(plan)
    base = [*world.records, *plan.events]
    led = NewsLedger(base + list(plan.arcs.values()))
    for arc in plan.arcs.values():
        main = main_event(led, arc)
        arc["title"] = headline(led, main)[0]
        arc["alternatives"] = list(dict.fromkeys(
            key for e in arc["events"] if not is_follow_up(led.events[e])
            for key in headline(led, led.events[e])[1]))
    articles = write_articles(plan, led)
    for arc in plan.arcs.values():
        arc["salience"] = sum(1 for a in articles if a.arc == arc["id"])
    led = NewsLedger(base + sorted(plan.arcs.values(), key=lambda a: a["id"]))
    support = Support()
    for article in articles:
        support.add(article)
    qa = training_pairs(led, articles, config)
    items = Items()
    dir_acq(led, articles, support, items, config, rng)
    window = corpus_window(articles)
    temp_upd(led, support, items, rng, window)
    comp_rel(led, support, items, config, rng, window)
    imp_rel(led, articles, support, items)
    bound_abs(led, articles, qa, items, config, rng)
    present = {item.family for item in items.items}
    for family in REPORTED_FAMILIES["news"]:
        if family not in present:
            raise SpecError(f"news world (seed {config.seed}) has no {family} items; "
                            f"{_HINTS[family]}")
    corpus = [CorpusDoc(doc_id=a.doc_id, date=a.date, kind="article", title=a.title,
                        text=article_text(a),
                        meta={"arc": a.arc, "events": a.events,
                              "facts": [[i, f] for i, (_, facts) in enumerate(a.sentences)
                                        for f in facts]})
              for a in articles]
    order = {f: n for n, f in enumerate(REPORTED_FAMILIES["news"])}
    ordered = sorted(items.items, key=lambda i: order[i.family])
    check_disjoint(qa, ordered, "news generator")
    # Without a model every family is a template (docs/imprint.md §4.7).
    pipeline = {"writer": "templates", "template_families": sorted(present)}
    manifest = Manifest(setting="news", generator=GENERATOR, seed=config.seed,
                        config={**config.as_json(), "pipeline": pipeline})
    return Dataset(manifest, corpus, qa, ordered, led_records(led))
