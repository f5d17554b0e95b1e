"""Scrubber.json: the JSON text of the scrubbed value, whether or not it walks the value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clstream.core.secrets import REDACTED, Scrubber

KEY = "sk-abcdef123456"

VALUES: list[Any] = [
    {"b": 1, "a": [1.5, None, True, "text"], "c": {"d": ("x", "y")}},
    {"prompt": f"the key is {KEY} here", KEY: "as a key"},
    {"lone": "\ud800 half", "pair": "\U0001f600"},
    {"escaped": "a \\ud800 written out", "quote": 'say "hi"', "ctl": "a\nb\tc"},
    ["plain", ["nested", {"deep": f"x{KEY}y"}]],
    "just a string",
    {1: "int key", "s": "str key"},
]


@pytest.mark.parametrize("secrets", [(), (KEY,), ('with"quote-and\\slash',), ("ünïcode-secret",)])
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("sort_keys", [False, True])
def test_json_is_the_text_of_the_scrubbed_value(secrets: tuple[str, ...], value: Any,
                                               sort_keys: bool) -> None:
    scrubber = Scrubber(secrets)
    if sort_keys and isinstance(value, dict) and any(not isinstance(k, str) for k in value):
        with pytest.raises(TypeError):
            scrubber.json(value, sort_keys=sort_keys)
        return
    assert scrubber.json(value, sort_keys=sort_keys) == json.dumps(
        scrubber.value(value), sort_keys=sort_keys)


def test_json_redacts_and_makes_storable() -> None:
    scrubber = Scrubber([KEY])
    text = scrubber.json({"k": f"{KEY}!", "s": "\udc80"})
    assert KEY not in text and REDACTED in text
    assert json.loads(text)["s"] == "\\udc80"  # the lone surrogate kept as its escape
    text.encode("utf-8")


def test_secrets_json_escapes_would_hide_are_still_found() -> None:
    secret = 'pass"word\\with-escapes'
    scrubber = Scrubber([secret])
    text = scrubber.json({"v": f"before {secret} after"})
    assert json.loads(text) == {"v": f"before {REDACTED} after"}
