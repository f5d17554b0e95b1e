"""The one driver every ``run`` goes through (docs/design.md §11.1).

A protocol's ``run`` command turns its parsed flags into one
:class:`~clstream.driver.request.RunRequest` per seed (at the command layer,
:mod:`clstream.arguments`), plans a :class:`~clstream.driver.plan.RunJob` from each
(:mod:`clstream.driver.assemble`) and calls :func:`~clstream.driver.execute.drive`; nothing
here sees a parser. The modules: ``request`` (what a run asks for, and its sampling and
executor checks), ``assemble`` (a request to a run job), ``plan`` (cells, planned runs,
results), ``execute`` (the driver), ``cells`` (the executors and one captured cell),
``ray_executor`` and ``shard_worker`` (cells carried out on a Ray cluster), ``components``
(models and systems built from specs, run registration), ``flags`` (the bounds of the flags
every ``run`` verb shares), ``preflight`` (the endpoint and context checks), ``progress``,
``transport``, ``failures`` (the failure line and exit status 3) and ``record_fields`` (fields
every protocol's records share).
"""
