"""The one driver every ``run`` goes through (docs/design.md §11.1).

A protocol's ``run`` command turns its flags into a :class:`~clstream.driver.plan.RunJob`
(:mod:`clstream.driver.plan`) and calls :func:`~clstream.driver.execute.drive`. The modules:
``plan`` (cells, planned runs, results), ``execute`` (the driver and the executors),
``components`` (models and systems built from specs, run registration), ``flags`` (the flags
every ``run`` verb shares), ``preflight`` (the endpoint and context checks), ``progress``,
``transport``, ``failures`` (the failure line and exit status 3) and ``record_fields`` (fields
every protocol's records share).
"""
