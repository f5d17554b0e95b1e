"""Invented names in a package's own naming (docs/imprint.md §4.4)."""

from __future__ import annotations

import random

from clstream.protocols.imprint.settings.code.naming import (
    forbidden_names,
    identifier_words,
    invented_candidates,
    invented_leaf,
    name_style,
    name_words,
)

# a slice of numpy's top-level function names
NUMPY_LIKE = ["sum", "prod", "max", "min", "mean", "nansum", "nanprod", "nanmax", "nanmin",
              "nanmean", "cumsum", "cumprod", "argmax", "argmin", "argsort", "sort", "stack",
              "unstack", "cumulative_sum", "cumulative_prod", "array_equal", "array_split",
              "diag_indices", "tril_indices", "broadcast_to"]


def test_styles_and_words() -> None:
    assert [name_style(n) for n in ("cumulative_sum", "CubicSpline", "nanmax", "_private_x")] \
        == ["snake", "camel", "flat", "snake"]
    assert name_words("CubicSpline") == ["Cubic", "Spline"]
    assert name_words("cumulative_sum") == ["cumulative", "sum"]
    assert identifier_words("HTTPServer_mode") == ["http", "server", "mode"]


def test_a_word_that_fills_the_same_frames_comes_first() -> None:
    # ``max`` takes ``nan{}`` and stands alone like ``sum``; ``indices`` shares no frame
    ranked = invented_candidates("cumulative_sum", NUMPY_LIKE)
    assert ranked.index("cumulative_max") < ranked.index("cumulative_indices")
    assert all(name_style(c) == "snake" and len(name_words(c)) == 2 for c in ranked)
    assert all(set(name_words(c)) & {"cumulative", "sum"} for c in ranked)


def test_a_single_word_takes_a_productive_prefix() -> None:
    # ``nan`` and ``arg`` form three sibling names or more; ``un`` and ``cum`` fewer
    assert set(invented_candidates("unstack", NUMPY_LIKE)) == {"nanunstack", "argunstack"}


def test_classes_recombine_their_words() -> None:
    siblings = ["PageCanvas", "InkPalette", "TypeBlock", "PageGutter", "PrintAtelier"]
    made = invented_candidates("PrintAtelier", siblings)
    assert "InkAtelier" in made and "PrintCanvas" in made
    assert all(name_style(c) == "camel" for c in made)


def test_existing_names_are_never_invented() -> None:
    forbidden = forbidden_names(["numpy.cumulative_max", "numpy.cumulative_min"], ["list"])
    rng = random.Random(0)
    for _ in range(20):
        made = invented_leaf("cumulative_sum", NUMPY_LIKE, forbidden, rng)
        assert made is not None and made not in forbidden
    assert "len" in forbidden and "class" in forbidden  # builtins and keywords
    assert invented_leaf("solo", ["solo"], forbidden, rng) is None
