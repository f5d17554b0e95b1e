"""``clstream view``: a local, read-only web viewer of results directories (docs/viewer.md).

:mod:`~clstream.view.catalog` names and reads the runs, :mod:`~clstream.view.items` and
:mod:`~clstream.view.detail` lay out their items, :mod:`~clstream.view.api` builds the JSON
documents, :mod:`~clstream.view.server` serves them with the packaged page (``assets/``) and
:mod:`~clstream.view.static_site` writes them as static files.
"""
