"""Recipes (docs/parametric.md §1): every field is identity, bad values are refused."""

from __future__ import annotations

import dataclasses

import pytest

from clstream.training.recipe import Recipe


def test_identity_holds_every_field_and_accumulation_rounds_up() -> None:
    recipe = Recipe(objective="ntp", lora=True, lr=1e-5)
    assert set(recipe.identity()) == {f.name for f in dataclasses.fields(Recipe)}
    assert recipe.identity()["batch"] == 64 and recipe.accumulation == 8
    assert Recipe(objective="sft", lora=False, lr=1e-5, batch=10, micro_batch=4).accumulation == 3


@pytest.mark.parametrize("change", [{"objective": "rl"}, {"epochs": 0}, {"lr": 0.0},
                                    {"precision": "float16"}, {"micro_batch": 0}])
def test_bad_values_are_refused(change: dict[str, object]) -> None:
    fields: dict[str, object] = {"objective": "ntp", "lora": False, "lr": 1e-5, **change}
    with pytest.raises(ValueError):
        Recipe(**fields)  # type: ignore[arg-type]
