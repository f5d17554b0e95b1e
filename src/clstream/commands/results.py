"""The verbs that read a results directory, whatever protocols it holds: ``summary``,
``report`` and ``export`` (``summary`` and ``report`` also several directories read as one). Each dispatches per run to the run's protocol (docs/formats.md §3 formats,
protocol-specific metrics and report sections); a protocol this release does not know still
gets a plain summary and report section, never a failure.

The store, summary and report are imported when a verb runs, not when the command line is
built: every other verb would pay for them otherwise."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clstream.core.errors import ClstreamError, StoreError
from clstream.core.jsonio import dumps_finite
from clstream.core.outputs import add_force_flag
from clstream.core.registry import names, resolve


def _prices(path: str | None) -> dict[str, dict[str, float]] | None:
    from clstream.models.pricing import load_prices

    return None if path is None else load_prices(path)


def _summarize(args: argparse.Namespace) -> dict[str, Any]:
    """The summary of every run in ``args.dir`` (one directory or several read as one) of
    ``--protocol`` over ``--dataset`` of ``--system`` (what ``summary --json`` prints).

    Several directories are read as the directory ``clstream merge`` would make of them
    (docs/design.md §11.6), built in a temporary folder: the same runs, the same refusal of a
    run whose records disagree, and so the same summary."""
    from clstream.report.store_summary import summarize
    from clstream.store.db import ResultsStore
    from clstream.store.merge import build_merged

    dirs = [str(d) for d in args.dir]
    with contextlib.ExitStack() as stack:
        where = dirs[0]
        if len(dirs) > 1:
            for d in dirs:
                ResultsStore(d).close()  # a directory without results: its own error first
            where = str(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "merged")
            build_merged(Path(where), [Path(d) for d in dirs], artifacts=False)
        with ResultsStore(where) as store:
            result = summarize(store, _prices(args.prices), protocol=args.protocol,
                               dataset=args.dataset, system=args.system,
                               where=", ".join(dirs))
            if not result["runs"] and args.system is not None:
                from clstream.store.export import no_run_error, select_runs

                raise no_run_error(store, select_runs(store, args.protocol, args.dataset),
                                   args.system, args.protocol, args.dataset,
                                   where=", ".join(dirs))
    if len(dirs) > 1:
        result["dir"] = ", ".join(dirs)
    if not result["runs"] and (args.protocol or args.dataset):
        scope = " ".join(x for x in (args.protocol, args.dataset) if x)
        raise StoreError(f"{', '.join(dirs)}: no run matches {scope}")
    return result


# -- export ----------------------------------------------------------------------------------
def export(args: argparse.Namespace) -> int:
    from clstream.core.outputs import claim_file, note_written
    from clstream.store.db import ResultsStore
    from clstream.store.export import select_run

    with ResultsStore(args.dir) as store:
        run = select_run(store, args.system, args.model, protocol=args.protocol,
                         dataset=args.dataset)
        claim_file(args.out, protected=store.dataset_paths())
        if getattr(args, "transcripts", False):
            return _export_transcripts(store, run.run_id, args)
        if run.protocol not in names("protocol"):
            raise StoreError(f"{args.dir}: run {run.run_id} is a {run.protocol!r} run, which "
                             "this clstream cannot export")
        try:
            n = resolve("protocol", run.protocol).export_run(store, run, Path(args.out))
        except (ClstreamError, OSError):
            raise
        except Exception as error:  # a damaged run: its reason in one line, not a traceback
            from clstream.report.store_summary import broken_reason

            raise StoreError(f"{args.dir}: run {run.run_id} cannot be exported: "
                             f"{broken_reason(error)}") from None
    note_written(args.out)
    print(f"wrote {n} records to {args.out}", file=sys.stderr)
    return 0


def _export_transcripts(store: Any, run_id: str, args: argparse.Namespace) -> int:
    """``export --transcripts``: the run's model calls as JSON Lines, one call a line
    (:func:`clstream.store.transcripts.export_row`)."""
    from clstream.core.jsonio import write_jsonl
    from clstream.core.outputs import note_written
    from clstream.store.transcripts import export_row

    if not store.calls_count(run_id):
        raise StoreError(f"{args.dir}: run {run_id} has no stored transcripts (run with "
                         "--transcripts none, or stored before clstream kept them)")
    n = write_jsonl(args.out, (export_row(c) for c in store.calls(run_id)))
    note_written(args.out)
    print(f"wrote {n} calls to {args.out}", file=sys.stderr)
    return 0


# -- summary ---------------------------------------------------------------------------------
def _generic_lines(runs: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'system':<22}{'model':<16}{'errors':>8}{'tokens':>12}{'wall s':>9}"]
    for run in runs:
        tokens = run["tokens"]["prompt"] + run["tokens"]["completion"]
        errors = (run.get("status") or {}).get("errors", 0)
        lines.append(f"{run['system']:<22}{run['model']:<16}{errors:>8}{tokens:>12}"
                     f"{run['wall_s']:>9.1f}")
    return lines


def _training_text(system: str, training: dict[str, Any]) -> str:
    """A parametric run's updates, those found already trained, tokens read and seconds."""
    updates, reused = int(training["updates"]), int(training["reused"])
    found = f" ({reused} reused)" if reused else ""
    return (f"{system} {updates} update{'' if updates == 1 else 's'}{found}, "
            f"{int(training['tokens']):,} tokens, {float(training['seconds']):.1f} s")


def _dataset_label(run: dict[str, Any]) -> str:
    """Which dataset a summary row belongs to: its file name (or what the protocol says of
    it) and the first 8 hex digits of its hash."""
    found = run.get("dataset")
    dataset: dict[str, Any] = found if isinstance(found, dict) else {}
    digest = str((run.get("meta") or {}).get("spec", {}).get("dataset_hash") or "")[:8]
    name = dataset.get("path") or dataset.get("setting")
    if isinstance(name, str) and "/" in name and not name.startswith("clbench:"):
        name = Path(name).name
    return f"{name} (dataset {digest})" if name else f"dataset {digest}"


def _write_cross_csv(result: dict[str, Any], path: str) -> None:
    """``summary --cross-csv FILE``: the cross-protocol view as CSV (one protocol's runs give
    a view with that protocol's columns only)."""
    from clstream.core.outputs import write_output
    from clstream.report.cross_protocol import cross_protocol, csv_text

    view = result.get("cross_protocol") or cross_protocol(result["runs"])
    write_output(path, csv_text(view))
    print(f"wrote the cross-protocol table ({len(view['methods'])} methods, "
          f"{len(view['columns'])} metric columns) to {path}", file=sys.stderr)


def summary(args: argparse.Namespace) -> int:
    if args.cross_csv is not None:  # refused before any reading when it cannot be written
        _claim_outputs(args.dir, [args.cross_csv])
    result = _summarize(args)
    if args.cross_csv is not None:
        _write_cross_csv(result, args.cross_csv)
    if args.json:
        print(dumps_finite(result, indent=2))
        return 0
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in result["runs"]:
        if "broken" not in run:
            groups.setdefault((run["protocol"], _dataset_label(run)), []).append(run)
    known = names("protocol")
    order = sorted(groups, key=lambda k: (known.index(k[0]) if k[0] in known else len(known),
                                          k[0]))
    for n, (protocol, dataset) in enumerate(order):
        print(("\n" if n else "") + f"[{protocol}] {dataset}")
        runs = groups[(protocol, dataset)]
        lines = resolve("protocol", protocol).summary_lines(runs) if protocol in known \
            else _generic_lines(runs)
        print("\n".join(lines))
        capped = [(r.get("system"), (r.get("status") or {}).get("hit_token_cap")) for r in runs]
        capped = [(s, n) for s, n in capped if isinstance(n, int) and n > 0]
        if capped:  # a model looping to the cap shows up at once
            print("answers cut at the token cap: "
                  + ", ".join(f"{system} {n}" for system, n in capped))
        trained = [(r.get("system"), r["training"]) for r in runs
                   if isinstance(r.get("training"), dict)]
        if trained:  # parametric methods: what their weight updates cost
            print("training: " + "; ".join(_training_text(str(system), t)
                                           for system, t in trained))
    if "cross_protocol" in result:
        from clstream.report.cross_protocol import text_lines

        print(("\n" if groups else "") + "\n".join(text_lines(result["cross_protocol"])))
    _print_statistics(result, bool(groups))
    broken = [run for run in result["runs"] if "broken" in run]
    if broken:
        print(("\n" if groups else "") + "[runs that could not be summarized]")
        for run in broken:
            print(f"{run['protocol']} {run['system']} ({run['run_id']}): {run['broken']}")
    return 0


def _print_statistics(result: dict[str, Any], after: bool) -> None:
    """The groups over seeds and the paired differences, where the summary has them
    (docs/statistics.md §1, §2)."""
    from clstream.report import paired, seed_groups

    if "seeds" in result:
        print(("\n" if after else "") + "\n".join(seed_groups.text_lines(result["seeds"])))
    if "paired" in result:
        print(("\n" if after else "") + "\n".join(paired.text_lines(result["paired"])))


def _claim_outputs(dirs: Sequence[str], files: Sequence[str | Path],
                   directories: Sequence[str | Path] = ()) -> None:
    """Refuse, before anything is read or written, output paths that are part of a results
    store, a dataset the runs in ``dirs`` were made from, or a file clstream did not write
    (:mod:`clstream.core.outputs`)."""
    from clstream.core.outputs import claim_directory, claim_file
    from clstream.store.db import ResultsStore

    protected: list[str] = []
    for d in dirs:
        with ResultsStore(d) as store:
            protected += store.dataset_paths()
    for f in files:
        claim_file(f, protected=protected)
    for directory in directories:
        claim_directory(directory, protected=protected)


# -- report ----------------------------------------------------------------------------------
def report(args: argparse.Namespace) -> int:
    from clstream.core.outputs import note_written
    from clstream.report.html import render_report

    if len(args.dir) > 1 and not args.out:
        raise StoreError("report: reading several directories, give --out FILE for the report")
    out = Path(args.out) if args.out else Path(args.dir[0]) / "report.html"
    _claim_outputs(args.dir, [out], [args.export] if args.export is not None else [])
    result = _summarize(args)
    path = render_report(result, out)
    note_written(path)
    print(path.resolve())
    if args.export is not None:
        from clstream.report.export import export_report

        written = export_report(result, args.export)
        note_written(args.export)
        figures = sum(1 for e in written if e.kind == "figure")
        print(f"exported {figures} figures and {len(written) - figures} tables to "
              f"{args.export} (index.md lists them)", file=sys.stderr)
    return 0


def add_selection(p: argparse.ArgumentParser, *, system: bool = True) -> None:
    """``--protocol``, ``--dataset`` and (unless the verb has its own) ``--system``: which
    runs a reading verb shows (:func:`clstream.store.export.select_runs`)."""
    if system:
        p.add_argument("--system", default=None, metavar="SPEC|LABEL|RUN_ID",
                       help="only runs of this system: as given to run (mem0), as labelled "
                            "(mem0:retriever=bm25), or a run id")
    p.add_argument("--protocol", default=None, help="only runs of this protocol")
    p.add_argument("--dataset", default=None, metavar="PATH|SHA256",
                   help="only runs over this dataset: the path it was read from, its file "
                        "name, a file of the same content, or the first 6+ hex digits of its "
                        "hash")


def add_parsers(sub: Any) -> None:
    """``export``, ``summary`` and ``report`` on the top-level sub-parsers."""
    exp = sub.add_parser("export", help="write a run's predictions or records file (docs/formats.md §3)")
    exp.add_argument("dir")
    exp.add_argument("--system", required=True, metavar="SPEC|LABEL|RUN_ID",
                     help="the run's system: as given to run (mem0), as labelled "
                          "(mem0:retriever=bm25), or a run id")
    exp.add_argument("--model", default=None, help="model label, when a system ran with several")
    exp.add_argument("--out", required=True)
    exp.add_argument("--transcripts", action="store_true",
                     help="write the run's model calls (messages, parameters, replies, tokens) "
                          "as JSON Lines instead of its predictions")
    add_force_flag(exp)
    add_selection(exp, system=False)
    exp.set_defaults(handler=export)

    summ = sub.add_parser("summary", help="metrics, counts, tokens and time per run")
    summ.add_argument("dir", nargs="+", help="results directories, read as one")
    summ.add_argument("--json", action="store_true")
    summ.add_argument("--prices", default=None, help="JSON: dollars per million tokens per model")
    summ.add_argument("--cross-csv", default=None, metavar="FILE",
                      help="also write the cross-protocol table (methods x headline metrics, "
                           "with intervals, ranks and cost) as CSV")
    add_force_flag(summ)
    add_selection(summ)
    summ.set_defaults(handler=summary)

    rep = sub.add_parser("report", help="write a self-contained HTML report")
    rep.add_argument("dir", nargs="+", help="results directories, read as one")
    rep.add_argument("--out", default=None,
                     help="HTML file (default: DIR/report.html; required with several DIRs)")
    rep.add_argument("--export", default=None, metavar="OUT",
                     help="also write every figure (SVG, PDF) and table (LaTeX, CSV, "
                          "Markdown) of the report into folder OUT, listed in OUT/index.md")
    rep.add_argument("--prices", default=None)
    add_force_flag(rep)
    add_selection(rep)
    rep.set_defaults(handler=report)
