"""The results store: one SQLite database per results directory (see :mod:`clstream.store.db`)."""
