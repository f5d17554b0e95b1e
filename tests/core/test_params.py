from typing import Any

import pytest

from clstream.core.errors import SpecError
from clstream.core.params import Param, check_args

PARAMS = {
    "k": Param(8, "items", minimum=1),
    "mode": Param("a", "how", choices=("a", "b")),
    "w": Param(0.5, "weight"),
    "on": Param(True, "switch"),
    "limit": Param(None, "unset unless given", minimum=1, value_type=int),
}


def test_defaults_filled_and_values_checked() -> None:
    assert check_args("system 'x'", PARAMS, {}) == {
        "k": 8, "limit": None, "mode": "a", "on": True, "w": 0.5}
    got = check_args("system 'x'", PARAMS, {"w": 2, "limit": 4, "on": False})
    assert got["w"] == 2.0 and isinstance(got["w"], float) and got["limit"] == 4
    assert check_args("system 'x'", PARAMS, {"limit": None})["limit"] is None
    assert list(check_args("system 'x'", PARAMS, {})) == sorted(PARAMS)


@pytest.mark.parametrize("args, why", [
    ({"kk": 1}, "unknown argument 'kk' .known: k, limit, mode, on, w."),
    ({"k": True}, "'k' must be an integer"),
    ({"k": 0}, "'k' must be >= 1"),
    ({"limit": "x"}, "'limit' must be an integer"),
    ({"limit": 0}, "'limit' must be >= 1"),
    ({"mode": "c"}, "'mode' must be one of a, b"),
    ({"on": 1}, "'on' must be true or false"),
    ({"w": "x"}, "'w' must be a number"),
])
def test_bad_values_name_the_component(args: dict[str, Any], why: str) -> None:
    with pytest.raises(SpecError, match=f"^system 'x': (argument )?{why}"):
        check_args("system 'x'", PARAMS, args)


def test_a_declaration_that_contradicts_itself_fails_at_once() -> None:
    with pytest.raises(TypeError, match="value_type"):
        Param(None, "no type")
    with pytest.raises(TypeError):
        Param([1], "a list is not a command-line value")
    with pytest.raises(ValueError, match="not among"):
        Param("c", "x", choices=("a", "b"))
    with pytest.raises(ValueError, match="below its minimum"):
        Param(0, "x", minimum=1)
    with pytest.raises(TypeError, match="numbers only"):
        Param("a", "x", minimum=1)
    with pytest.raises(TypeError, match="not a int"):
        Param(1.5, "x", value_type=int)
    assert Param(None, "x", value_type=float).type_name == "float"
    assert Param(3, "x").type_name == "int"
