"""The flags of the ImprintBench verbs are built without importing the dataset schema, so the
supervision choices they offer are written out: they must be the schema's own."""

from __future__ import annotations

import argparse

import pytest

from clstream.protocols.imprint import arguments
from clstream.protocols.imprint.schema import SUPERVISIONS


def test_the_supervision_choices_are_the_schemas() -> None:
    assert arguments.SUPERVISIONS == SUPERVISIONS


def test_run_imprint_takes_each_supervision_and_refuses_others() -> None:
    parser = argparse.ArgumentParser(prog="clstream")
    arguments.add_run_imprint_arguments(parser)
    base = ["data", "--system", "oracle", "--out", "results"]
    for supervision in SUPERVISIONS:
        assert parser.parse_args([*base, "--supervision", supervision]).supervision == supervision
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--supervision", "X"])
