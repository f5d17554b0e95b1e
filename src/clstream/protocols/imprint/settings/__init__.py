"""ImprintBench's three settings (docs/imprint.md §4), one package each: ``news`` (a seeded invented
world, or the user's own articles), ``code`` (two versions of a library, seeded or the user's
own wheels) and ``persona`` (seeded conversations, or PersonaMem and HorizonBench exports).
Each writes a :class:`~clstream.protocols.imprint.schema.Dataset`.
"""
