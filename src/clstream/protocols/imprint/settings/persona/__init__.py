"""ImprintBench's persona setting (docs/imprint.md §4.5, §4.6): ``synthetic`` generates seeded conversations
whose persona facts change over time, ``from_exports`` reads PersonaMem and HorizonBench exports.
"""
