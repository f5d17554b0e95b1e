"""The contract a measurement protocol fulfils (docs/design.md §3.3).

A protocol (OAKS, SeqMem-Eval, CL-Bench, ImprintBench) is one package under
``clstream/protocols/`` that exposes one object satisfying :class:`StreamProtocol`, registered
under kind ``"protocol"`` in :mod:`clstream.core.registry`. Everything that differs between
protocols goes through it, so the shared shell (command line, summary, report, export) holds no
per-protocol branch and adding a protocol edits no shared file except one registry line:

* its command-line verbs: ``clstream run NAME``, ``clstream score NAME`` and any
  ``clstream generate GENERATOR`` (:class:`Command`: arguments and handler);
* how it summarizes a stored run (metrics from records, never from callbacks), the text rows of
  ``clstream summary`` and its section of the HTML report;
* how it exports a run to its public file format (docs/formats.md §3);
* a brief demonstration run, so ``make demo`` shows every protocol.

A results store is passed as a :class:`~clstream.core.reader.ResultsReader`, the reading
interface ``core`` defines because it imports nothing else of clstream: summaries and exports
read a run, never write one. Report sections are passed as opaque objects (``Any``); each
protocol package knows their concrete type.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from clstream.core.reader import ResultsReader
    from clstream.core.records import RunRow

Handler = Callable[[argparse.Namespace], int]
AddArguments = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """One sub-command: ``name`` (``oaks``, ``oaks-babi``), one line of help, a function adding
    its arguments to an argparse parser, and the handler that runs it (returns the exit status).

    Either function may be given as a ``"package.module:name"`` target, imported only when the
    command's parser is built (:meth:`add_to`) or the command runs (:meth:`run`). The builtin
    protocols name theirs this way, so that ``clstream --help`` lists every verb and
    ``clstream run NAME --help`` shows its flags without importing any protocol's runner,
    models or numeric libraries (docs/design.md §2.2: a lazy registry).
    """

    name: str
    help: str
    add_arguments: AddArguments | str
    handler: Handler | str
    plan: Callable[[Any], Any] | str | None = None
    """For a ``run`` verb: a request of its (a ``clstream.driver.request.RunRequest``, one
    seed's) to a run job (a ``clstream.driver.plan.RunJob``), so that a spec file can gather
    runs of several protocols into one driver, and a worker plan a run again."""
    options: type | str | None = None
    """For a ``run`` verb: the frozen dataclass of its own flags (those no other ``run`` verb
    has), each field named as the flag's destination: the ``options`` of its requests."""

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add this command's arguments to ``parser``."""
        self.arguments()(parser)

    def arguments(self) -> AddArguments:
        """The function that adds this command's arguments to a parser."""
        add: AddArguments = (load_target(self.add_arguments)
                             if isinstance(self.add_arguments, str) else self.add_arguments)
        return add

    def options_type(self) -> type:
        """The dataclass of this ``run`` verb's own flags (only for commands that have one)."""
        options = load_target(self.options) if isinstance(self.options, str) else self.options
        if not isinstance(options, type):
            raise TypeError(f"command {self.name!r} has no options type")
        return options

    def planned(self, request: Any) -> Any:
        """The run job of ``request`` (only for commands that have a ``plan``)."""
        plan = load_target(self.plan) if isinstance(self.plan, str) else self.plan
        if plan is None:
            raise TypeError(f"command {self.name!r} has no run plan")
        return plan(request)

    def run(self, args: argparse.Namespace) -> int:
        """Run the command on parsed ``args``; returns the exit status."""
        handler: Handler = (load_target(self.handler) if isinstance(self.handler, str)
                            else self.handler)
        return handler(args)


@runtime_checkable
class StreamProtocol(Protocol):
    """What the shell needs of a protocol. ``name`` is the value stored in each run's
    ``protocol`` column; ``title`` heads its report section; ``summary`` is one line for
    ``clstream list``."""

    name: str
    title: str
    summary: str

    @property
    def run_command(self) -> Command:
        """``clstream run NAME``: run systems over a stream into a results directory."""
        ...

    @property
    def score_command(self) -> Command:
        """``clstream score NAME``: score a user's own file in the format docs/formats.md §3 points to."""
        ...

    @property
    def generators(self) -> tuple[Command, ...]:
        """``clstream generate ...``: procedural streams this protocol can write."""
        ...

    def summarize_run(self, store: ResultsReader, run: RunRow) -> dict[str, Any]:
        """The protocol's part of one run's summary (dataset, status, metrics), from records."""
        ...

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        """The text table of ``clstream summary`` for this protocol's runs."""
        ...

    def export_run(self, store: ResultsReader, run: RunRow, out: Path) -> int:
        """Write the run's records in the protocol's public format; returns lines written."""
        ...

    def report_section(self, runs: list[dict[str, Any]], labels: list[str], source: object) -> Any:
        """The report section (a ``clstream.render.base.Section``) for these runs."""
        ...

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        """Command lines (argv after ``clstream``) that generate a small stream in ``workdir``
        and run a few systems on it with the builtin model into ``results``: ``make demo``
        runs them for every registered protocol."""
        ...


@dataclass(frozen=True)
class MatrixData:
    """A protocol's small default dataset for ``clstream run matrix`` (docs/design.md §11.3).

    ``name`` is the file or directory the data is, under the matrix's ``data/PROTOCOL``;
    ``generate(path)`` gives the command lines (argv after ``clstream``) that write it at
    ``path``, deterministically; ``run(path)`` the arguments of ``clstream run PROTOCOL``
    over it, other than systems, model, results directory and seed, which the matrix gives.
    A protocol offers one through a ``matrix_data(seed)`` method."""

    name: str
    generate: Callable[[Path], list[list[str]]]
    run: Callable[[Path], list[str]]


@dataclass(frozen=True)
class HeadlineMetric:
    """One headline number of a run for the cross-protocol view (docs/summary-json.md,
    "Cross-protocol view"): ``key`` names it within its protocol, ``label`` heads its column,
    ``better`` is ``"higher"`` or ``"lower"``, ``interval`` is ``[low, high]`` where the
    protocol gives one and ``interval_kind`` says what kind it is. A protocol offers these
    through a ``headline_metrics(run)`` method over a run's summary."""

    key: str
    label: str
    better: str
    value: float | None
    interval: tuple[float, float] | None = None
    interval_kind: str = ""


def load_target(target: str) -> Any:
    """The object named by ``"package.module:name"``, imported on first use.

    Report sections draw with matplotlib, which costs half a second to import; a protocol
    names its renderer this way so that ``run`` and ``score`` never pay for it, and its verbs,
    summary and export likewise, so that building the command line imports none of them.
    """
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class ProtocolPackage:
    """Where a protocol package keeps its parts, each a ``"module:name"`` target imported on
    first use (:func:`load_target`): the stored-run summary and its text rows, the export and
    the report section."""

    summarize_run: str
    summary_lines: str
    export_run: str
    report_section: str
    headline_metrics: str | None = None
    item_scores: str | None = None


MANIFEST = "protocol.toml"
"""The file beside a packaged protocol's ``__init__`` that declares it."""


class PackagedProtocol:
    """A :class:`StreamProtocol` declared by a ``protocol.toml`` in its package, its parts
    named there and loaded when used, so building the command line (every ``--help``,
    ``--version``) costs nothing of the protocol's code (docs/design.md §2.2: a lazy
    registry).

    The manifest gives ``name``, ``title``, ``summary``, ``run_help`` and ``score_help``, a
    ``[generators]`` table (generator name -> help), a ``[parts]`` table (the targets of
    :class:`ProtocolPackage`, relative to the package) and, optionally, ``[policies]`` (task ->
    its environment's builtin policy) and ``[builtin_replies]`` (name -> the builtin model's
    replies to requests of the protocol's own formats), each target relative to the package. The
    verbs follow the package's layout: flags in ``arguments`` (``add_run_NAME_arguments``,
    ``add_score_arguments``, ``add_generate_arguments``), handlers and the run plan in
    ``commands`` (``run``, ``plan_run``, ``score``, ``generate``); the ``run`` verb's own flags as
    a frozen dataclass ``RunOptions`` in ``arguments``. A subclass adds
    :meth:`demo`; :meth:`declared` builds the object from the package's manifest.
    """

    name: str
    title: str
    summary: str
    run_command: Command
    score_command: Command
    generators: tuple[Command, ...]
    parts: ProtocolPackage
    policies: dict[str, str]
    builtin_replies: dict[str, str]

    @classmethod
    def declared(cls, package: str) -> Self:
        """The protocol that the manifest of ``package`` (a module name) declares."""
        import tomllib

        spec = importlib.util.find_spec(package)
        origin = spec.origin if spec is not None else None
        if origin is None:
            raise ImportError(f"protocol package {package!r} not found")
        with open(Path(origin).with_name(MANIFEST), "rb") as handle:
            manifest = tomllib.load(handle)
        arguments, commands = f"{package}.arguments", f"{package}.commands"
        name = str(manifest["name"])
        self = cls()
        self.name, self.title, self.summary = name, manifest["title"], manifest["summary"]
        self.run_command = Command(name, manifest["run_help"],
                                   f"{arguments}:add_run_{name}_arguments", f"{commands}:run",
                                   plan=f"{commands}:plan_run",
                                   options=f"{arguments}:RunOptions")
        self.score_command = Command(name, manifest["score_help"],
                                     f"{arguments}:add_score_arguments", f"{commands}:score")
        self.generators = tuple(
            Command(generator, help, f"{arguments}:add_generate_arguments",
                    f"{commands}:generate")
            for generator, help in manifest.get("generators", {}).items())
        self.parts = ProtocolPackage(**{part: f"{package}.{target}"
                                        for part, target in manifest["parts"].items()})
        self.policies = {task: f"{package}.{target}"
                         for task, target in manifest.get("policies", {}).items()}
        self.builtin_replies = {name: f"{package}.{target}"
                                for name, target in manifest.get("builtin_replies", {}).items()}
        return self

    def summarize_run(self, store: ResultsReader, run: RunRow) -> dict[str, Any]:
        result: dict[str, Any] = load_target(self.parts.summarize_run)(store, run)
        return result

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        lines: list[str] = load_target(self.parts.summary_lines)(runs)
        return lines

    def export_run(self, store: ResultsReader, run: RunRow, out: Path) -> int:
        return int(load_target(self.parts.export_run)(store, run, out))

    def report_section(self, runs: list[dict[str, Any]], labels: list[str], source: object) -> Any:
        return load_target(self.parts.report_section)(runs, labels, source)

    def headline_metrics(self, run: dict[str, Any]) -> list[HeadlineMetric]:
        """The run's headline numbers for the cross-protocol view; none when the package
        names no ``headline_metrics`` part."""
        if self.parts.headline_metrics is None:
            return []
        metrics: list[HeadlineMetric] = load_target(self.parts.headline_metrics)(run)
        return metrics

    def item_scores(self, store: ResultsReader, run: RunRow) -> dict[str, dict[str, float]]:
        """Per-item scores of a stored run, ``{headline metric key: {item id: score}}``, for
        the headline metrics that are a mean over items (docs/statistics.md §2); none when
        the package names no ``item_scores`` part."""
        if self.parts.item_scores is None:
            return {}
        scores: dict[str, dict[str, float]] = load_target(self.parts.item_scores)(store, run)
        return scores
