"""The news writer (docs/imprint.md §4.7) with a scripted model: a rewrite keeps the draft's
names, dates and numbers (so a falsehood keeps its one changed element) or is dropped; an
open gold may not be put into the question; removals are counted per family."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clstream.core.types import GenerationRequest, GenerationResult, Sample
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.imprint.settings import writing as fmt
from clstream.protocols.imprint.settings.news.generate import NewsConfig, generate_news
from clstream.protocols.imprint.settings.news.stages import anchors, news_stages

SMALL = NewsConfig(seed=1, n_people=16, n_orgs=8, n_roles=4, n_quantities=3, days=21,
                   n_deals=3, n_launches=2, n_votes=2, qa_per_article=8)


def test_anchors_are_names_dates_periods_and_numbers() -> None:
    found = anchors("As of 2030-03-18, is the policy rate of the Central Bank of Nesabam "
                    "still 1.91 percent?")
    assert {"2030-03-18", "1.91", "Central Bank", "Nesabam"} <= set(found)
    assert "As" not in found
    assert "mid February 2030" in anchors("In mid February 2030, did Ada Brink resign?")


class Rewriter:
    """Rewrites every question; drops a name from the first DirAcq "No" item and puts the
    gold into the first forward TempUpd (``targets``: draft -> rewrite)."""

    name = "scripted-news-writer"

    def __init__(self, targets: dict[str, str]) -> None:
        self.targets = targets
        self.tokenizer = approx_tokenizer()

    def describe(self) -> dict[str, Any]:
        return {"backend": "test", "name": self.name}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for request in requests:
            read = fmt.read_request(request.messages)
            assert read is not None and read[0] == fmt.WRITE
            question = read[1]["draft"]["question"]
            text = self.targets.get(question, "Tell me: " + question[0].lower() + question[1:])
            out.append(GenerationResult(key=request.key,
                                        samples=[Sample(text=json.dumps({"question": text}))]))
        return out


def test_rewrites_that_lose_an_anchor_or_leak_the_gold_are_dropped(tmp_path: Path) -> None:
    data = generate_news(SMALL)
    falsehoods = [i for i in data.items if i.family == "DirAcq" and i.gold == "No"]
    forward = next(i for i in data.items if i.family == "TempUpd" and i.axis == "forward")
    dropped_name = falsehoods[0]
    name = next(a for a in anchors(dropped_name.question) if a[0].isupper() and " " in a)
    gold = forward.golds[0]
    targets = {dropped_name.question: dropped_name.question.replace(name, "that outfit"),
               forward.question: forward.question.rstrip("?") + f" -- {gold}?"}
    staged = news_stages(data, Rewriter(targets), tmp_path)
    kept = {i.item_id: i for i in staged.items}
    assert dropped_name.item_id not in kept and forward.item_id not in kept
    audits = staged.manifest.config["pipeline"]["audits"]["writer"]
    assert audits["DirAcq"] == 1 and audits["TempUpd"] == 1 and audits["CompRel"] == 0
    assert len(staged.items) == len(data.items) - 2
    for item in staged.items:
        if item.family in ("DirAcq", "TempUpd", "CompRel"):
            assert item.question.startswith("Tell me: ")
            assert item.meta["draft"] != item.question
        else:
            assert "draft" not in item.meta
    assert staged.manifest.config["pipeline"]["template_families"] == ["BoundAbs", "ImpRel"]
