"""Shared run flags: numbers typed on the command line are finite and bounded, seeds fit 64
bits, and an endpoint URL that cannot be connected to is refused as it is typed."""

from __future__ import annotations

import argparse

import pytest

from clstream.arguments.groups import (
    add_backend_arguments,
    count_type,
    endpoint_url,
    finite_float_type,
    parser_actions,
    seed_value,
)
from clstream.driver.flags import SEED_MAX, bounded_int


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "NaN", "2.5", "-0.1", "1e999", "x", ""])
def test_a_temperature_that_is_not_finite_or_in_range_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"finite number in \[0, 2\]"):
        finite_float_type(0.0, 2.0)(text)


def test_an_open_lower_bound_refuses_the_bound_itself() -> None:
    top_p = finite_float_type(0.0, 1.0, above=True)
    assert top_p("1") == 1.0
    with pytest.raises(argparse.ArgumentTypeError, match=r"\(0, 1\]"):
        top_p("0")


@pytest.mark.parametrize("text", ["-1", str(SEED_MAX + 1), "1" + "0" * 5000, "1.5", "seven"])
def test_a_seed_outside_64_bits_is_refused_without_converting_it(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        seed_value(text)
    assert len(str(caught.value)) < 120  # a 5,000-digit value is named by its length
    assert seed_value(str(SEED_MAX)) == SEED_MAX and seed_value(" 0 ") == 0


def test_counts_are_bounded_on_both_sides() -> None:
    tasks = count_type(8, 100)
    assert tasks("8") == 8 and tasks("100") == 100
    for text in ("7", "101", "-3", "1000000000"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"\[8, 100\]"):
            tasks(text)
    with pytest.raises(ValueError, match="integer"):
        bounded_int("12", 0, 10)


@pytest.mark.parametrize(("url", "needle"), [
    ("http://127.0.0.1:99999/v1", "Port out of range"),
    ("http://[::1", "IPv6"),
    ("ftp://host/v1", "http://"),
    ("127.0.0.1:8000/v1", "http://"),
    ("http://h:0/v1", "port must be"),
    ("http://user:secret@[::1", "IPv6"),
])
def test_an_endpoint_that_cannot_be_connected_to_is_refused(url: str, needle: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=needle) as caught:
        endpoint_url(url)
    assert "secret" not in str(caught.value)


def test_endpoints_that_can_be_connected_to_are_kept_as_typed() -> None:
    for url in ("http://127.0.0.1:8000/v1", "https://api.example.com/v1", "http://[::1]:80/v1"):
        assert endpoint_url(url) == url


def test_a_verbs_actions_are_built_once() -> None:
    first = parser_actions(add_backend_arguments)
    assert first is parser_actions(add_backend_arguments)
    assert "--base-url" in {o for a in first for o in a.option_strings}
