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
from clstream.core import imprint_writing as fmt
from clstream.core.types import Message
from clstream.protocols.imprint.schema import load_dataset

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
