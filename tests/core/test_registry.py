import pytest

from clstream.core.errors import SpecError
from clstream.core.registry import names, register, resolve


def test_builtin_names_registered() -> None:
    assert {"full", "window", "rag", "rag+window"} <= set(names("system"))
    assert "builtin" in names("model")


def test_resolve_unknown_lists_known() -> None:
    with pytest.raises(SpecError, match="known: .*full"):
        resolve("system", "nope")


def test_register_and_resolve_lazily() -> None:
    register("judge", "json-dumps", "json:dumps")
    import json

    assert resolve("judge", "json-dumps") is json.dumps
    with pytest.raises(ValueError):
        register("judge", "bad", "no-colon")
