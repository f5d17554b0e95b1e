"""``clstream view DIR [DIR...]``: browse results directories in a local web page, or write
the same page as static files with ``--static OUT`` (docs/viewer.md).

The viewer is imported when the verb runs, not when the command line is built."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from clstream.commands.results import add_selection
from clstream.core.errors import SpecError
from clstream.core.outputs import add_force_flag


def view(args: argparse.Namespace) -> int:
    from clstream.view.catalog import Catalog, Selection

    if not 0 <= args.port <= 65535:
        raise SpecError(f"--port: expected 0..65535, got {args.port}")
    if args.shard_rows < 1:
        raise SpecError(f"--shard-rows: expected a positive integer, got {args.shard_rows}")
    if args.no_calls and args.static is None:
        raise SpecError("--no-calls: only with --static OUT (the local viewer reads calls "
                        "as they are asked for)")
    catalog = Catalog(list(args.dir), Selection(args.protocol, args.dataset, args.system))
    if args.static is not None:
        from clstream.core.outputs import OutputRefused, claim_directory, note_written
        from clstream.view.static_site import write_static

        target = Path(args.static).resolve()
        for d in catalog.dirs:  # the viewer writes nothing into what it shows
            if d.resolve() in (target, *target.parents):
                raise OutputRefused(args.static, f"is inside the results directory {d}; "
                                                 "write the static viewer elsewhere")
        protected: list[str] = []
        for index in range(len(catalog.dirs)):
            with catalog.store(index) as store:
                protected += store.dataset_paths()
        out = claim_directory(args.static, protected=protected)
        marker = write_static(catalog, out, args.shard_rows, with_calls=not args.no_calls)
        note_written(args.static)
        print(f"wrote the viewer of {len(marker['runs'])} runs to {args.static} (serve it "
              f"with any web server, e.g. python -m http.server -d {args.static})",
              file=sys.stderr)
        print(Path(args.static).resolve())
        return 0
    from clstream.view.server import serve

    return serve(catalog, args.port, open_browser=not args.no_browser)


def add_parser(sub: Any) -> None:
    """``view`` on the top-level sub-parsers."""
    p = sub.add_parser("view", help="browse results directories in a local, read-only web "
                                    "page (or write it as static files with --static)")
    p.add_argument("dir", nargs="+", help="results directories")
    p.add_argument("--port", type=int, default=0,
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the URL, open no browser")
    p.add_argument("--static", default=None, metavar="OUT",
                   help="write the viewer as static files into folder OUT instead of serving")
    p.add_argument("--shard-rows", type=int, default=200, metavar="N",
                   help="with --static: item rows per shard file (default: 200)")
    p.add_argument("--no-calls", action="store_true",
                   help="with --static: leave the model calls out (most of a copy's bytes)")
    add_force_flag(p)
    add_selection(p)
    p.set_defaults(handler=view)
