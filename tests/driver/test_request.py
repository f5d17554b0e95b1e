"""The driver's side of a run request: sampling and executor settings checked in one line
naming the flag; and the driver never imports argparse nor anything above it."""

from __future__ import annotations

import grimp
import pytest

from clstream.core.errors import SpecError
from clstream.core.types import SamplingParams
from clstream.driver.request import (
    ExecutorChoice,
    ExecutorFlags,
    SamplingFlags,
    executor_choice,
    sampling_params,
)


def test_sampling_flags_become_the_sampling_parameters() -> None:
    params = sampling_params(SamplingFlags(top_k=5, samples=3, thinking="off"), seed=7)
    assert params == SamplingParams(temperature=0.7, top_p=0.8, top_k=5, min_p=0.0,
                                    max_tokens=4096, n=3, seed=7, thinking=False)


@pytest.mark.parametrize(("flags", "says"), [
    (SamplingFlags(temperature=9.0), "flag --temperature: must be a finite number in [0, 2]"),
    (SamplingFlags(top_p=0.0), "flag --top-p: must be a finite number in (0, 1]"),
    (SamplingFlags(min_p=float("nan")), "flag --min-p"),
    (SamplingFlags(samples=0), "flag --samples"),
])
def test_a_sampling_value_out_of_bounds_names_its_flag(flags: SamplingFlags, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        sampling_params(flags, seed=0)
    assert str(caught.value).startswith(says) and "\n" not in str(caught.value)


def test_ray_settings_need_the_ray_executor() -> None:
    assert executor_choice(ExecutorFlags()) == ExecutorChoice()
    with pytest.raises(SpecError, match="need --executor ray"):
        executor_choice(ExecutorFlags(ray_workers=2))
    with pytest.raises(SpecError, match="--ray-workers: must be >= 1"):
        executor_choice(ExecutorFlags(ray_workers=0))


def test_the_driver_imports_no_command_line_nor_anything_above_it() -> None:
    graph = grimp.build_graph("clstream", include_external_packages=True, cache_dir=None)
    driver = {"clstream.driver", *graph.find_descendants("clstream.driver")}
    above = ("argparse", "clstream.arguments", "clstream.commands", "clstream.cli",
             "clstream.protocols")
    found = sorted((module, imported) for module in driver
                   for imported in graph.find_modules_directly_imported_by(module)
                   if imported.startswith(above))
    assert found == []
