"""Components registered only for the tests of this folder, in a module made on the fly."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from clstream.core import registry
from clstream.core.params import Param

MODULE = "clstream_core_test_components"


class FakeSystem:
    summary: ClassVar[str] = "a system for registry tests"
    params: ClassVar[dict[str, Param]] = {
        "k": Param(8, "items kept", minimum=1),
        "mode": Param("plain", "how", choices=("plain", "fancy")),
        "scale": Param(0.5, "a weight", minimum=0.0),
    }
    name = "fake-sys"

    def __init__(self, model: Any, sampling: Any = None, seed: int = 0, **args: Any):
        self.args = args


class UndeclaredSystem:
    """Declares no params: its constructor checks what it takes."""

    name = "fake-undeclared"

    def __init__(self, model: Any, sampling: Any = None, seed: int = 0, **args: Any):
        self.args = args


def not_a_class() -> None:
    return None


@pytest.fixture
def fake_components() -> Iterator[str]:
    module = types.ModuleType(MODULE)
    module.FakeSystem = FakeSystem  # type: ignore[attr-defined]
    module.UndeclaredSystem = UndeclaredSystem  # type: ignore[attr-defined]
    module.not_a_class = not_a_class  # type: ignore[attr-defined]
    sys.modules[MODULE] = module
    registry.register("system", "fake-sys", f"{MODULE}:FakeSystem")
    registry.register("system", "fake-undeclared", f"{MODULE}:UndeclaredSystem")
    try:
        yield MODULE
    finally:
        registry.unregister("system", "fake-sys")
        registry.unregister("system", "fake-undeclared")
        sys.modules.pop(MODULE, None)
