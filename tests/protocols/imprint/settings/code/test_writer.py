"""The paper's code stages with a model (App. D.2): writer, validator, golden subset; played by
a loopback server answering as the builtin model, by the builtin model itself, and by scripted
replies that the stages must reject."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from fake_openai_server import PolicyServer

from clstream.cli import main
from clstream.core.types import GenerationRequest, GenerationResult, Sample
from clstream.models.builtin import BuiltinReader
from clstream.protocols.imprint.schema import Dataset, load_dataset
from clstream.protocols.imprint.settings.code.dataset import generate_code
from clstream.protocols.imprint.settings.code.paraphrase import shares_content
from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig
from clstream.protocols.imprint.settings.code.writer import (
    COMPREL_TASK,
    REFRES_TASK,
    VALIDATE_TASK,
    write_code_items,
)

SMALL = CodeWorldConfig(seed=3, n_modules=5, n_functions=16, n_classes=4, n_added=6,
                        n_added_methods=3, n_added_params=4, n_moved=2, n_aliased=1, n_removed=2)


@pytest.fixture(scope="module")
def template() -> Dataset:
    return generate_code(SMALL)


def _documentation(data: Dataset, doc_id: str) -> str:
    doc = next(d for d in data.corpus if d.doc_id == doc_id)
    return doc.text.split("Documentation:\n", 1)[1]


def test_builtin_model_plays_the_stages_offline(template: Dataset, tmp_path: Path) -> None:
    model = BuiltinReader()
    data = asyncio.run(write_code_items(template, model, cache_path=tmp_path / "c.json",
                                        golden_n=2, filter_cache=tmp_path / "g.jsonl"))
    pipeline = data.manifest.config["pipeline"]
    assert pipeline["writer"] == model.name and pipeline["template_families"] == {}
    assert "golden_subset" in pipeline["stages"] and pipeline["model_calls"] > 0
    refres = [i for i in data.items if i.family == "RefRes"]
    assert refres and all(i.meta["written"] == "model" for i in refres)
    for item in refres:
        assert not shares_content(item.meta["description"],
                                  _documentation(data, item.source_doc_ids[0]))
    comprel = [i for i in data.items if i.family == "CompRel"]
    assert all(i.meta["written"] == "model" and i.filters["ctx"]["k_correct"] == 2
               and i.filters["blind"]["k_correct"] == 0 for i in comprel)
    # what the golden subset removed is counted, and the counts add up
    before = sum(1 for i in template.items if i.family == "CompRel")
    counts = dict(pipeline["removed"]["CompRel"])
    # the template build's removals stay in the card, beside the stages'
    assert counts.pop("snippet_gates") == template.manifest.config["pipeline"]["removed"][
        "CompRel"]["snippet_gates"]
    assert before == len(comprel) + sum(counts.values())
    # a rerun is served from the cache
    again = asyncio.run(write_code_items(template, model, cache_path=tmp_path / "c.json",
                                         golden_n=2, filter_cache=tmp_path / "g.jsonl"))
    assert again.manifest.config["pipeline"]["model_calls"] == 0
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in data.items]


class Scripted:
    """A model whose reply to each stage prompt ``script`` gives."""

    name = "scripted"

    def __init__(self, script: Callable[[str, str], str]):
        self.script = script
        self.inner = BuiltinReader()

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for request in requests:
            text = request.messages[-1].content
            task = next((t for t in (REFRES_TASK, COMPREL_TASK, VALIDATE_TASK)
                         if f"Environment task: {t}" in text), None)
            if task is None:  # the golden subset's answering prompts
                out.extend(await self.inner.generate([request]))
                continue
            reply = self.script(task, text)
            out.append(GenerationResult(key=request.key, stage=request.stage,
                                        samples=[Sample(text=reply, finish_reason="stop")]))
        return out


def test_rejections_are_counted_per_family(template: Dataset, tmp_path: Path) -> None:
    leaf_of = {i.item_id: i.gold for i in template.items if i.family == "RefRes"}
    first_leaf = next(iter(leaf_of.values()))

    def script(task: str, text: str) -> str:
        if task == REFRES_TASK:
            if f"Identifier: {first_leaf}" in text:
                return json.dumps({"description": f"does what {first_leaf} says"})
            return "no JSON here"
        if task == COMPREL_TASK:
            return json.dumps({"question": "Which function does the code call"})
        return json.dumps({"verdict": "fabricated", "reason": "unsupported"})

    data = asyncio.run(write_code_items(template, Scripted(script),  # type: ignore[arg-type]
                                        cache_path=tmp_path / "c.json", golden_n=0))
    removed = data.manifest.config["pipeline"]["removed"]
    assert removed["RefRes"] == {"giveaway_check": 1, "writer_unreadable": len(leaf_of) - 1}
    n_comprel = sum(1 for i in template.items if i.family == "CompRel")
    assert {k: v for k, v in removed["CompRel"].items() if not k.startswith("snippet")} == {
        "validator_fabricated": n_comprel}
    assert not [i for i in data.items if i.family in ("RefRes", "CompRel")]
    # DirAcq and ImpRel are the paper's templates: untouched
    assert [i for i in data.items] == [i for i in template.items
                                       if i.family not in ("RefRes", "CompRel")]


def test_a_comprel_question_repeating_the_refres_description_is_rejected(
        template: Dataset, tmp_path: Path) -> None:
    def script(task: str, text: str) -> str:
        if task == VALIDATE_TASK:
            return json.dumps({"verdict": "faithful"})
        return json.dumps({"description": "makes a page tidy",
                           "question": "Which API makes a page tidy in this code"})

    data = asyncio.run(write_code_items(template, Scripted(script),  # type: ignore[arg-type]
                                        cache_path=tmp_path / "c.json", golden_n=0))
    removed = data.manifest.config["pipeline"]["removed"]["CompRel"]
    assert removed["repeats_refres"] == sum(1 for i in template.items if i.family == "CompRel"
                                            and i.meta["path"] in {
                                                r.meta["path"] for r in template.items
                                                if r.family == "RefRes"})


def test_generate_with_a_loopback_model(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ds"
    with PolicyServer(model="served") as server:
        assert main(["generate", "imprint", "--setting", "code", "--size", "small",
                     "--out", str(out), "--model", "openai:served", "--base-url",
                     server.base_url, "--filter-samples", "2"]) == 0
        sent = len(server.completions)
    assert sent > 0
    data = load_dataset(out)
    pipeline = data.manifest.config["pipeline"]
    assert pipeline["writer"] == "openai:served" and pipeline["template_families"] == {}
    assert (out / "code_writer_cache.json").exists()
    assert all(i.gold == "Yes" for i in data.items if i.family == "DirAcq")
    refres = [i for i in data.items if i.family == "RefRes"]
    assert refres and all(i.meta["written"] == "model" for i in refres)
    for item in refres:
        assert str(item.gold).lower() not in item.question.lower()
        assert not shares_content(item.meta["description"],
                                  _documentation(data, item.source_doc_ids[0]))
    # an interrupted generation's caches are reused: no writer or golden-subset call again
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    for name in ("code_writer_cache.json", "golden_cache.jsonl"):
        (rerun / name).write_bytes((out / name).read_bytes())
    with PolicyServer(model="served") as server:
        assert main(["generate", "imprint", "--setting", "code", "--size", "small",
                     "--out", str(rerun), "--model", "openai:served", "--base-url",
                     server.base_url, "--filter-samples", "2"]) == 0
        again = load_dataset(rerun).manifest.config["pipeline"]
    assert again["model_calls"] == 0 and again["golden"]["sent"] == 0
    assert "pipeline:" in capsys.readouterr().err


def test_without_a_model_the_card_names_the_template_families(template: Dataset) -> None:
    pipeline = template.manifest.config["pipeline"]
    assert pipeline["writer"] is None
    assert set(pipeline["template_families"]) == {"RefRes", "CompRel"}


def test_a_damaged_reply_cache_is_one_line_and_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ds"
    out.mkdir()
    cache = out / "code_writer_cache.json"
    cache.write_text('{"version": "other"}\n', encoding="utf-8")
    assert main(["generate", "imprint", "--setting", "code", "--size", "small",
                 "--out", str(out), "--model", "builtin"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "code_writer_cache.json" in err[0] and "Traceback" not in err[0]
    assert cache.read_text(encoding="utf-8") == '{"version": "other"}\n'
    assert sorted(p.name for p in out.iterdir()) == ["code_writer_cache.json"]
