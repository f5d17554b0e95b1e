"""``clstream runs DIR`` lists the runs of a results directory; ``clstream runs rm DIR RUN_ID``
deletes one.

The two forms share one sub-command with positional words rather than nested sub-commands:
with argparse sub-commands, ``runs DIR`` would read DIR as an unknown sub-command name. A
directory that happens to be called ``rm`` is still listed by ``runs rm``, since deletion
always takes three words.

Listing opens the database read-only (no lock, works while a run is writing, reads any older
schema). Deleting takes the writer lock, so it fails in one line instead of racing a run that
is writing to the same directory. The store is imported when the verb runs, not when the
command line is built.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.errors import SpecError, StoreError
from clstream.core.jsonio import dumps_finite

if TYPE_CHECKING:
    from clstream.store.db import ResultsStore

_USAGE = "%(prog)s DIR [--json]\n       %(prog)s rm DIR RUN_ID"


class _RunsWords(argparse.Action):
    """Reads ``DIR`` or ``rm DIR RUN_ID`` and picks the handler that goes with it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        words = [str(v) for v in (values or [])]
        if len(words) == 1:
            namespace.dir, namespace.run_id, namespace.handler = words[0], None, cmd_runs_list
        elif len(words) == 3 and words[0] == "rm":
            namespace.dir, namespace.run_id, namespace.handler = words[1], words[2], cmd_runs_rm
        elif words[0] == "rm":
            parser.error("rm takes a results directory and a run id: runs rm DIR RUN_ID")
        else:
            parser.error(f"expected DIR or rm DIR RUN_ID, got {' '.join(words)!r}")


def add_parser(subparsers: Any) -> None:
    """Add the ``runs`` sub-command to the top-level sub-parsers (their parser class, the
    CLI's one-line-error parser, is inherited)."""
    p = subparsers.add_parser(
        "runs", help="list the runs of a results directory, or delete one (runs rm DIR RUN_ID)",
        usage=_USAGE,
        description="List the runs stored in DIR, or delete one run with `rm DIR RUN_ID`.",
    )
    p.add_argument("words", nargs="+", metavar="DIR", action=_RunsWords,
                   help="results directory; or: rm DIR RUN_ID")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    p.add_argument("--spec", action="store_true",
                   help="print a run spec file (TOML) that reruns every run of DIR "
                        "(clstream run --spec FILE)")
    p.set_defaults(handler=cmd_runs_list)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _listing(store: ResultsStore) -> list[dict[str, Any]]:
    out = []
    for run in store.runs():
        status = store.run_status(run.run_id)
        out.append({
            "run_id": run.run_id, "protocol": run.protocol, "system": run.system,
            "model": run.model, "seed": run.spec.get("seed"), "ok": status.total_ok, "errors": status.total_errors,
            "records": {k: {"ok": status.ok[k], "errors": status.errors[k]} for k in status.ok},
            "states": status.states, "wall_s": round(run.wall_s, 3),
            "created": _iso(run.created_at), "first_record": _iso(status.first_record_at),
            "last_record": _iso(status.last_record_at),
        })
    return out


def cmd_runs_list(args: argparse.Namespace) -> int:
    from clstream.store.db import ResultsStore

    if args.spec:
        if args.json:
            raise SpecError("flags --json and --spec: give one of them")
        from clstream.commands.specfile import spec_text

        with ResultsStore(args.dir) as store:
            sys.stdout.write(spec_text(store, str(Path(args.dir).resolve())))
        return 0
    with ResultsStore(args.dir) as store:
        runs = _listing(store)
    if args.json:
        print(dumps_finite({"dir": str(args.dir), "runs": runs}, indent=2))
        return 0
    if not runs:
        print(f"{args.dir}: no runs", file=sys.stderr)
        return 0
    # The seed tells apart runs that differ only in it (same protocol, system and model).
    header = ("run id", "protocol", "system", "model", "seed", "ok", "errors", "wall s",
              "created")
    rows = [(r["run_id"], r["protocol"], r["system"], r["model"],
             "-" if r["seed"] is None else str(r["seed"]), str(r["ok"]), str(r["errors"]),
             f"{r['wall_s']:.1f}", str(r["created"])) for r in runs]
    from clstream.render.text_columns import aligned_lines

    print("\n".join(aligned_lines(header, rows, [False] * 4 + [True] * 4 + [False])))
    return 0


def cmd_runs_rm(args: argparse.Namespace) -> int:
    if args.json or args.spec:
        raise SpecError(f"flag {'--json' if args.json else '--spec'}: only the listing "
                        "(runs DIR) takes it")
    from clstream.store.db import DB_NAME, ResultsStore, results_db_exists

    if not results_db_exists(args.dir):
        raise StoreError(f"{args.dir}: no results database ({DB_NAME}) in this directory")
    with ResultsStore(args.dir, writer=True) as store:
        deleted = store.delete_run(args.run_id)
    print(f"deleted run {args.run_id}: {deleted['records']} records,"
          f" {deleted['states']} memory snapshots", file=sys.stderr)
    return 0
