"""ImprintBench's code setting (docs/imprint.md §4.3, §4.4): ``wheels`` reads the public API of two wheels of a
package and diffs them, ``dataset`` turns the new API into documents, training pairs and items,
and ``synthetic`` writes the two wheels of a seeded fictional library to feed it.
"""
