"""``generate imprint --model`` against a loopback OpenAI-compatible server that plays the
writer and the audits (docs/imprint.md §4.7): the builtin model's replies over HTTP, except
that the writer words every question its own way and the forced guess is always option A.
Every written family comes back reworded, every audit's removals are counted per family in
the manifest, and the replies are cached in the dataset directory."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core.types import Message
from clstream.protocols.imprint.schema import Dataset, load_dataset
from clstream.protocols.imprint.settings import writing as fmt
from clstream.protocols.imprint.settings.code.paraphrase import shares_content
from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig, write_library_wheels
from clstream.protocols.imprint.settings.persona.option_audit import solved_by

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import PolicyServer, is_preflight  # noqa: E402

PREFIX = "Quick check: "


class StageServer(PolicyServer):
    """The builtin model's replies, with the writer's questions reworded and every forced
    guess "A"."""

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        if is_preflight(body):
            return payload
        read = fmt.read_request([Message(role=m["role"], content=m["content"])
                                 for m in body["messages"]])
        assert read is not None, "every request of generate is a stage request"
        stage, request = read
        text = None
        if stage == fmt.WRITE:
            draft = dict(request["draft"])
            question = draft["question"]
            draft["question"] = PREFIX + question[0].lower() + question[1:]
            text = json.dumps(draft)
        elif stage == fmt.FORCED_COMMIT:
            text = "A guess, as asked.\nGUESS: A"
        if text is not None:
            for choice in payload["choices"]:
                choice["message"]["content"] = text
        return payload


def _generate(out: Path, setting: str, *model: str) -> int:
    return main(["generate", "imprint", "--setting", setting, "--size", "small", "--seed", "3",
                 "--out", str(out), *model])


@pytest.mark.parametrize("setting", ["news", "persona"])
def test_the_loopback_model_writes_and_audits_the_items(tmp_path: Path, setting: str) -> None:
    assert _generate(tmp_path / "builtin", setting, "--model", "builtin") == 0
    offline = load_dataset(tmp_path / "builtin")
    with StageServer() as server:
        assert _generate(tmp_path / "served", setting, "--model", "openai:writer",
                         "--base-url", server.base_url) == 0
        asked = [b for b in server.requests if not is_preflight(b)]
    served = load_dataset(tmp_path / "served")
    pipeline = served.manifest.config["pipeline"]
    written = set(pipeline["writer"]["families"])
    assert written == ({"DirAcq", "TempUpd", "CompRel"} if setting == "news"
                       else {"TempUpd", "RefRes", "ImpRel"})
    assert set(pipeline["template_families"]) == {i.family for i in offline.items} - written
    assert pipeline["writer"]["model_calls"] == len(asked)
    # The builtin writer keeps the drafts; the served one words every question its way.
    by_id = {i.item_id: i for i in offline.items}
    for item in served.items:
        draft = by_id[item.item_id]
        if item.family in written:
            assert item.question == PREFIX + draft.question[0].lower() + draft.question[1:]
            assert item.meta["draft"] == draft.question
        else:
            assert item.question == draft.question
        assert item.gold == draft.gold
    removed = {i.item_id for i in offline.items} - {i.item_id for i in served.items}
    if setting == "persona":
        # Forced to guess, the server says "A": exactly the answerable items with gold A go.
        guessed = Counter(i.family for i in offline.items if i.options and i.gold == "A")
        assert {by_id[r].family for r in removed} == set(guessed)
        assert Counter(by_id[r].family for r in removed) == guessed
        assert {f: n for f, n in pipeline["audits"]["forced_commit"].items() if n} == guessed
        assert set(pipeline["audits"]) == {"writer", "option_only", "forced_commit",
                                           "option_bias", "fact_oracle", "universality"}
    else:
        assert not removed and pipeline["audits"]["writer"] == {
            "CompRel": 0, "DirAcq": 0, "TempUpd": 0}
    assert (tmp_path / "served" / "stage_cache.json").exists()


def test_the_builtin_model_plays_every_stage_offline(tmp_path: Path) -> None:
    """Offline, the builtin model keeps every draft and every item the templates wrote: the
    generated items pass its audits (they are not solvable without the history and follow
    from the fact list)."""
    assert _generate(tmp_path / "plain", "persona") == 0
    assert _generate(tmp_path / "staged", "persona", "--model", "builtin") == 0
    plain, staged = load_dataset(tmp_path / "plain"), load_dataset(tmp_path / "staged")
    assert [i.question for i in staged.items] == [i.question for i in plain.items]
    audits = staged.manifest.config["pipeline"]["audits"]
    assert all(n == 0 for name, row in audits.items() if name != "option_only"
               for n in row.values())
    assert plain.manifest.config["pipeline"]["writer"] == "templates"


SMALL_LIBRARY = CodeWorldConfig(seed=3, n_modules=5, n_functions=16, n_classes=4, n_added=6,
                                n_added_methods=3, n_added_params=4, n_moved=2, n_aliased=1,
                                n_removed=2)


def _source(setting: str, tmp_path: Path) -> list[str]:
    """The flags that pick the setting's source: its procedural world, or for ``wheels`` the
    fictional library's two wheels read as a real package's."""
    if setting != "wheels":
        return ["--setting", setting, "--size", "small"]
    old, new, changelog = write_library_wheels(SMALL_LIBRARY, tmp_path / "wheels")
    return ["--setting", "code", "--old-wheel", str(old), "--new-wheel", str(new),
            "--package", changelog.package, "--usage-dir", str(changelog.usage_dir)]


def _documentation(data: Dataset, doc_id: str) -> str:
    doc = next(d for d in data.corpus if d.doc_id == doc_id)
    return doc.text.split("Documentation:\n", 1)[1]


def _served(out: Path, source: list[str], *flags: str) -> list[Any]:
    """Generate into ``out`` with a loopback server answering as the builtin model; returns
    the requests it answered (the endpoint check aside)."""
    with PolicyServer(model="served") as server:
        assert main(["generate", "imprint", *source, "--seed", "3", "--out", str(out),
                     "--model", "openai:served", "--base-url", server.base_url, *flags]) == 0
        return [b for b in server.requests if not is_preflight(b)]


@pytest.mark.parametrize("setting", ["news", "persona", "code", "wheels"])
def test_every_setting_runs_its_stages_audits_and_filters_against_a_served_model(
        tmp_path: Path, setting: str) -> None:
    """A loopback server answering as the builtin model writes, audits and filters every
    setting (the code one procedural and from wheels); the card records, per stage and audit
    and per family, what each removed, and the filters' removals add up with what was kept."""
    source = _source(setting, tmp_path)
    out = tmp_path / "ds"
    asked = _served(out, source, "--filter", "--filter-samples", "2")
    data = load_dataset(out)
    config = data.manifest.config
    pipeline = config["pipeline"]
    report = json.loads((out / "filter_report.json").read_text())
    present = set(report["families"])
    if setting in ("news", "persona"):
        written = {"news": {"DirAcq", "TempUpd", "CompRel"},
                   "persona": {"TempUpd", "RefRes", "ImpRel"}}[setting]
        assert pipeline["writer"]["model"] == "openai:served"
        assert pipeline["writer"]["model_calls"] > 0
        assert set(pipeline["writer"]["families"]) == written & present
        assert set(pipeline["template_families"]) == present - written
        audits = pipeline["audits"]
        stages = ({"writer"} if setting == "news" else
                  {"writer", "option_only", "forced_commit", "option_bias", "fact_oracle",
                   "universality"})
        assert set(audits) == stages and audits["writer"].keys() == written & present
        assert all(isinstance(n, int) for row in audits.values() for n in row.values())
    else:
        assert pipeline["writer"] == "openai:served" and pipeline["model_calls"] > 0
        assert "golden_subset" in pipeline["stages"] and pipeline["golden"]["sent"] > 0
        assert set(pipeline["removed"]) == {"RefRes", "CompRel"}
        # the written items, before the filters (which drop every RefRes item the builtin
        # backbone cannot name from its page)
        _served(tmp_path / "unfiltered", source, "--filter-samples", "2")
        unfiltered = load_dataset(tmp_path / "unfiltered")
        refres = [i for i in unfiltered.items if i.family == "RefRes"]
        assert refres and all(i.meta["written"] == "model" for i in refres)
        assert all(i.gold == "Yes" for i in unfiltered.items if i.family == "DirAcq")
        for item in refres:
            assert not shares_content(item.meta["description"],
                                      _documentation(unfiltered, item.source_doc_ids[0]))
        for item in (i for i in unfiltered.items if i.family == "CompRel"):
            assert not any(r.meta["description"] in item.question for r in refres)
    assert len(asked) > 0
    # the filters: per family in the card, and what they removed and kept adds up
    filtered = config["filters"]["removed"]
    assert set(filtered) == present
    kept = Counter(i.family for i in data.items)
    for family, row in report["families"].items():
        assert filtered[family] == {"blind": row["dropped_blind"], "ctx": row["dropped_ctx"]}
        assert row["items"] == kept[family] + row["dropped_blind"] + row["dropped_ctx"]
    if setting == "persona":  # no kept choice item is solvable from its options
        for item in (i for i in data.items if i.family in ("CompRel", "ImpRel")):
            slots = item.meta["option_values"] if item.family == "CompRel" else None
            assert solved_by(item.question, item.options, str(item.gold), slots) == []


@pytest.mark.parametrize("setting", ["news", "persona", "code", "wheels"])
def test_without_a_model_the_card_names_every_template_family(tmp_path: Path,
                                                                setting: str) -> None:
    """news and persona: every family is a template; code: the families the paper writes
    with a model (RefRes, CompRel) are named with what stands in for them."""
    out = tmp_path / "ds"
    assert main(["generate", "imprint", *_source(setting, tmp_path), "--seed", "3",
                 "--out", str(out)]) == 0
    data = load_dataset(out)
    pipeline = data.manifest.config["pipeline"]
    families = {i.family for i in data.items}
    if setting in ("news", "persona"):
        assert pipeline["writer"] == "templates"
        assert set(pipeline["template_families"]) == families
    else:
        assert pipeline["writer"] is None
        template = pipeline["template_families"]
        assert set(template) == {"RefRes", "CompRel"} and all(template.values())
    assert not (out / "stage_cache.json").exists()
