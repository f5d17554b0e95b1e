"""Terminal tables whose columns fit their longest cell."""

from __future__ import annotations

import pytest

from clstream.render.text_columns import aligned_lines, seed_text


def test_columns_fit_the_longest_label_and_numbers_align_right() -> None:
    lines = aligned_lines(("system", "acc"), [("mem0:retriever=bm25", "0.5"),
                                               ("rag", "0.25")], (False, True))
    assert lines == ["system                acc",
                     "mem0:retriever=bm25   0.5",
                     "rag                  0.25"]
    # Nothing is cut: every cell is whole, and every column starts at the same place.
    assert lines[1].index("0.5") + len("0.5") == len(lines[0]) == len(lines[2])


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="2 columns"):
        aligned_lines(("a", "b"), [("x",)], (False, False))


def test_the_seed_comes_from_the_summary_meta() -> None:
    assert seed_text({"meta": {"seed": 3}}) == "3"
    assert seed_text({"meta": {"seed": 0}}) == "0"
    assert seed_text({"meta": {}}) == "-"
    assert seed_text({}) == "-"
