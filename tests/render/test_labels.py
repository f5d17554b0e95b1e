"""Runs sharing a system label are told apart by what differs in their specs, not by hashes."""

from __future__ import annotations

import copy
from typing import Any

from clstream.protocols.imprint.run_summary import run_label
from clstream.render.labels import display_labels


def _run(run_id: str, system: str = "oracle", **changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "protocol": "imprint", "dataset_hash": "d" * 64,
        "model": {"name": "builtin", "args": {}},
        "system": {"name": system, "args": {}},
        "params": {"prompt": "bare", "setting": "news", "supervision": "C"},
        "sampling": {"temperature": 0.7, "top_p": 0.95, "seed": 0, "n": 2},
        "seed": 0,
    }
    for path, value in changes.items():
        *outer, last = path.split("__")
        node = spec
        for key in outer:
            node = node[key]
        node[last] = value
    return {"run_id": run_id + "0" * 8, "system": system, "model": "builtin",
            "meta": {"spec": spec}, "dataset": {"path": "/data/news.jsonl"}}


def test_labels_name_the_spec_fields_that_differ() -> None:
    runs = [_run("aaaa"), _run("bbbb", params__prompt="coached"),
            _run("cccc", seed=1, sampling__seed=1), _run("dddd", sampling__temperature=0.2),
            _run("eeee", system="rag:k=3")]
    assert display_labels(runs) == [
        "oracle \u00b7 seed=0 \u00b7 prompt=bare \u00b7 temperature=0.7",
        "oracle \u00b7 seed=0 \u00b7 prompt=coached \u00b7 temperature=0.7",
        "oracle \u00b7 seed=1 \u00b7 prompt=bare \u00b7 temperature=0.7",
        "oracle \u00b7 seed=0 \u00b7 prompt=bare \u00b7 temperature=0.2",
        "rag:k=3",
    ]


def test_models_settings_and_supervision_are_named_without_hashes() -> None:
    other_model = _run("bbbb")
    other_model["model"] = "openai:gpt-x"
    assert display_labels([_run("aaaa"), other_model]) == [
        "oracle \u00b7 builtin", "oracle \u00b7 openai:gpt-x"]
    code = _run("cccc", params__setting="code", dataset_hash="e" * 64)
    code["dataset"] = {"path": "/data/code.jsonl"}
    # the dataset changes with the setting, so the setting alone tells them apart
    assert display_labels([_run("aaaa"), code]) == [
        "oracle \u00b7 setting=news", "oracle \u00b7 setting=code"]
    assert display_labels([_run("aaaa"), _run("bbbb", params__supervision="A")]) == [
        "oracle \u00b7 supervision=C", "oracle \u00b7 supervision=A"]
    other_data = _run("dddd", dataset_hash="e" * 64)
    other_data["dataset"] = {"path": "/data/news-v2.jsonl"}
    assert display_labels([_run("aaaa"), other_data]) == [
        "oracle \u00b7 news.jsonl", "oracle \u00b7 news-v2.jsonl"]


def test_hash_only_when_specs_differ_in_nothing_nameable() -> None:
    same = _run("aaaa")
    twin = copy.deepcopy(same)
    twin["run_id"] = "bbbb0000"
    labels = display_labels([same, twin, same])
    assert labels[:2] == ["oracle \u00b7 aaaa0000", "oracle \u00b7 bbbb0000"]
    assert len(set(labels)) == 3


def test_imprint_tags_stay_and_generic_names_add_to_them() -> None:
    runs = [_run("aaaa", params__prompt="coached"), _run("bbbb"),
            _run("cccc", params__prompt="coached", params__setting="code")]
    tagged = [{**r, "system": run_label(r)} for r in runs]
    assert display_labels(tagged) == [
        "oracle [coached] \u00b7 setting=news", "oracle", "oracle [coached] \u00b7 setting=code"]
