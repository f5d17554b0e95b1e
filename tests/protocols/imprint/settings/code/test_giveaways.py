"""What gives a hidden identifier away (docs/imprint.md §4.4): the snippet-quality check and
the descriptions."""

from __future__ import annotations

from clstream.protocols.imprint.settings.code.giveaways import (
    code_giveaway,
    is_whole_sentence,
    plain_description,
    prose_sentences,
    without_comments,
)

MASK = "<MASK>"
# numpy's own example for cumulative_sum, masked as the paper masks it
CUMULATIVE_SUM_EXAMPLE = f"""import numpy as np
b = np.array([[1, 2, 3], [4, 5, 6]])
np.{MASK}(b, axis=0)  # sum over rows for each of the 3 columns
"""


def test_comments_strings_names_and_neighbours_give_the_leaf_away() -> None:
    leaf = "cumulative_sum"
    assert (code_giveaway(CUMULATIVE_SUM_EXAMPLE, MASK, leaf) or "").startswith("comment")
    assert code_giveaway(without_comments(CUMULATIVE_SUM_EXAMPLE), MASK, leaf) is None
    assert code_giveaway(f"import numpy as np\nrunning_sum = np.{MASK}(x)\n", MASK, leaf)
    assert (code_giveaway(f'import numpy as np\nnp.{MASK}(x)\nprint("running sum")\n', MASK,
                          leaf) or "").startswith("string")
    # a neighbouring API call spells a word of the leaf
    assert code_giveaway(f"import numpy as np\nnp.{MASK}(x)\nnp.cumulative_prod(x)\n", MASK,
                         leaf)
    # longer and shorter forms of a word: product / prod, stack / unstack
    assert code_giveaway(f"np.{MASK}(a)  # total product\n", MASK, "cumulative_prod")
    assert code_giveaway(f"np.stack(np.{MASK}(a))\n", MASK, "unstack")
    # the call itself is allowed, function words give nothing away
    assert code_giveaway(f"import numpy as np\nnp.linalg.{MASK}(a)\n", MASK, "matrix_norm",
                         allowed={"np", "linalg"}) is None
    assert code_giveaway(f"f(a, {MASK}='raise')  # on failure\n", MASK, "on_error",
                         parameter=True) is None


def test_a_counterpart_keyword_gives_a_parameter_away() -> None:
    code = f"d.clip({MASK}=-2, max=10)"
    assert code_giveaway(code, MASK, "min", parameter=True) == "name 'max'"
    assert code_giveaway(code, MASK, "min", parameter=False) is None


def test_descriptions_are_whole_sentences_without_the_leaf() -> None:
    doc = """Return the cumulative sum of the elements along a given axis.

    This function is an Array API compatible alternative to :func:`numpy.cumsum`.

    Parameters
    ----------
    x : array_like
        Input array.
    """
    assert prose_sentences(doc) == [
        "Return the cumulative sum of the elements along a given axis.",
        "This function is an Array API compatible alternative to `numpy.cumsum`."]
    assert plain_description(doc, "cumulative_sum") == (
        "This function is an Array API compatible alternative to `numpy.cumsum`.", 1)
    assert plain_description("Return the running sum.\n\nExamples\n--------\n", "cumsum") == (
        "Return the running sum.", 0)
    assert plain_description("Sum the values.", "sum_values") is None
    # lost words and fragments are never quoted
    assert not is_whole_sentence("Return the [...] [...] of the elements.")
    assert not is_whole_sentence("Remove values along a dimension which are zero along all other.")
    assert not is_whole_sentence("Return the values of")
    assert is_whole_sentence("Split an array into a sequence of arrays along the given axis.")
