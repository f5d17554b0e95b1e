"""ImprintBench's news setting (docs/imprint.md §4.1): ``generate`` assembles a dataset from
a seeded invented world (``world``, ``ledger``, ``events``, ``articles``, ``items``,
``training``); ``from_articles`` builds one from the user's own dated articles with a model writing
the questions.
"""
