"""Pieces every protocol runner shares: canonical specs from the command line, registering a
run (adopting one stored under a pre-canonical id), building systems and models from specs, run
metadata, progress display.

Run ids are hashes of canonical specs (every declared parameter filled in, see
:func:`clstream.core.registry.canonical_component`). Runs written before specs were canonical
have ids hashed from the specs as typed; :func:`register_run` finds such a run when its spec
canonicalises to the new run's spec and renames it to the new id, so resume finds its work.

Progress: a bar with ETA on a terminal; where stderr is a file or a pipe (nohup, a job
scheduler, CI) one plain line every :data:`PROGRESS_INTERVAL_S` seconds instead, so a batch job
shows signs of life: done/total, errors, requests/s, output tokens/s and the current concurrency
of the remote backends in use (:func:`clstream.models.concurrency.live_limits`), ETA. The
runners' ``--no-progress`` silences both.

Answers cut by the token cap: a record keeps the finish reason of each of its samples
(:func:`finish_reasons`, payload field ``finish_reasons``) and a protocol's summary counts the
run's ``"length"`` finishes with :func:`cut_by_cap`, so a small model that loops until the cap
shows up at once.

Transport: a remote backend's in-flight limit changes during a run; :class:`TransportLog`
keeps what changed during one session of a run (the limit's history, requests, errors, output
tokens) as a state of the run (stream :data:`TRANSPORT_STREAM`, one step per session), and
:func:`transport_history` reads them back for ``summary --json``.
"""

from __future__ import annotations

import inspect
import json
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from tqdm import tqdm

import clstream
from clstream.core.contracts import Model, System
from clstream.core.errors import SpecError
from clstream.core.registry import canonical_component, canonical_run_spec, resolve
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.core.types import GenerationResult
from clstream.models.concurrency import ConcurrencyLimit, live_limits
from clstream.models.middleware import wrap
from clstream.store.db import Record, ResultsStore


def parse_components(
    model: str, model_args: str | None, systems: Sequence[str]
) -> tuple[ComponentSpec, list[ComponentSpec]]:
    """The canonical model spec and system specs of a ``run`` command line (``--model``,
    ``--model-args``, each ``--system``). Unknown names, arguments or values are a
    :class:`SpecError` here, before anything is opened or written."""
    model_spec = canonical_component("model", parse_model_spec(model, model_args))
    return model_spec, [canonical_component("system", ComponentSpec.parse(s, "system"))
                        for s in systems]


def _canonical_json(spec_json: Mapping[str, Any] | str) -> str | None:
    """The canonical JSON of a stored spec, or None when it no longer describes a valid run
    (a component since removed, an argument since renamed, a field RunSpec no longer has)."""
    try:
        raw = json.loads(spec_json) if isinstance(spec_json, str) else dict(spec_json)
        return canonical_run_spec(RunSpec.model_validate(raw)).canonical_json()
    except (SpecError, ValidationError, ValueError, TypeError):
        return None


def adopt_legacy_run(store: ResultsStore, run_id: str, spec_json: Mapping[str, Any] | str
                     ) -> str | None:
    """Rename to ``run_id`` a stored run whose spec canonicalises to ``spec_json`` under another
    id (a run written when ids were hashed from specs as typed); returns its old id, or None.

    ``spec_json`` is the new run's spec (``RunSpec.model_dump(mode="json")``). Nothing happens
    when ``run_id`` is already stored. Among several matches the earliest created is adopted;
    the others stay as they are. The adopted run's stored spec becomes ``spec_json``.
    """
    if any(r.run_id == run_id for r in store.runs()):
        return None
    want = _canonical_json(spec_json)
    if want is None:
        return None
    protocol = json.loads(want)["protocol"]
    for run in store.runs(protocol):
        if _canonical_json(run.spec) == want:
            spec = json.loads(spec_json) if isinstance(spec_json, str) else dict(spec_json)
            store.rename_run(run.run_id, run_id, spec=spec)
            return run.run_id
    return None


def register_run(store: ResultsStore, spec: RunSpec, dataset_sha256: str,
                 info: dict[str, Any]) -> bool:
    """Record the run of ``spec`` (idempotent), first adopting a stored run of the same
    canonical spec under an older id; returns True when this is a resume."""
    spec_json = spec.model_dump(mode="json")
    adopt_legacy_run(store, spec.run_id, spec_json)
    return store.ensure_run(spec.run_id, spec.protocol, spec.system.label, spec.model.label,
                            dataset_sha256, spec_json, info)


def build_model(spec: ComponentSpec, **options: Any) -> Model:
    """Instantiate a model backend; ``options`` are backend settings from CLI flags, and
    ``cache_path`` the response cache every backend answers through
    (:func:`clstream.models.middleware.wrap`)."""
    cls = resolve("model", spec.name)
    cache_path = options.pop("cache_path", None)
    kwargs = dict(spec.args)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    for key, value in options.items():
        if value is not None and (takes_any or key in accepted):
            kwargs[key] = value
    try:
        return wrap(cls(**kwargs), cache_path=cache_path)
    except TypeError as exc:
        raise SpecError(f"model {spec.label!r}: {exc}") from None


def system_factory(run: RunSpec, model: Model) -> Callable[[], System]:
    """A zero-argument constructor of fresh system instances for one run."""
    cls = resolve("system", run.system.name)

    def make() -> System:
        return cls(model=model, sampling=run.sampling, seed=run.seed, **run.system.args)

    make()  # fail early on bad system arguments, before anything is stored
    return make


def run_info(model: Model, system: System, extra: dict[str, Any]) -> dict[str, Any]:
    """What every run records so numbers can be compared later (DESIGN.md, "Lessons")."""
    tok = model.tokenizer
    return {
        "clstream_version": clstream.__version__,
        "python": sys.version.split()[0],
        "model_info": model.describe(),
        "system_info": system.describe(),
        "tokenizer": {"name": tok.name, "exact": tok.exact},
        **extra,
    }


def call_records(
    results: Sequence[GenerationResult], stream: str, t: int, prefix: str
) -> list[Record]:
    """Records for model calls made while updating memory (their usage counts toward cost)."""
    return [
        Record(
            kind="call", key=f"{prefix}#{i}", stream=stream, t=t,
            payload={"texts": [s.text for s in r.samples]}, error=r.error, stage=r.stage,
            usage=r.usage, cache_hit=r.cache_hit,
        )
        for i, r in enumerate(results)
    ]


PROGRESS_INTERVAL_S = 30.0  # between plain progress lines


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def _counts(limit: ConcurrencyLimit) -> tuple[int, int, int]:
    return limit.stats.requests, limit.stats.errors, limit.stats.output_tokens


class PlainProgress:
    """Progress for a stderr that is not a terminal: one line every ``interval`` seconds (from
    a daemon thread, so a run stuck on one slow answer still reports) and one at the end."""

    def __init__(self, total: int, initial: int, desc: str,
                 interval: float | None = None) -> None:
        self.total, self.n, self.desc = total, initial, desc
        self._initial = initial
        self._start = time.monotonic()
        # Counters at the start, per backend: a backend made later (a new event loop) starts
        # from zero, and one dropped since no longer counts.
        self._baseline: weakref.WeakKeyDictionary[ConcurrencyLimit, tuple[int, int, int]] = (
            weakref.WeakKeyDictionary({x: _counts(x) for x in live_limits()}))
        self._stop = threading.Event()
        self._interval = PROGRESS_INTERVAL_S if interval is None else interval
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _since_start(self) -> tuple[int, int, int]:
        """Requests, errors and output tokens of the live backends since the start."""
        totals = [0, 0, 0]
        for limit in live_limits():
            before = self._baseline.get(limit, (0, 0, 0))
            for i, (now, then) in enumerate(zip(_counts(limit), before, strict=True)):
                totals[i] += now - then
        return totals[0], totals[1], totals[2]

    def update(self, n: int = 1) -> None:
        self.n += n

    def line(self) -> str:
        """The progress line as it reads now."""
        elapsed = max(time.monotonic() - self._start, 1e-9)
        requests, errors, tokens = self._since_start()
        done = self.n - self._initial
        eta = (f"ETA {_duration((self.total - self.n) * elapsed / done)}"
               if done > 0 and self.n < self.total else "ETA ?" if self.n < self.total
               else "done")
        limits = sorted({x.current for x in live_limits()})
        concurrency = ("" if not limits else
                       f", concurrency {'/'.join(str(v) for v in limits)}")
        return (f"clstream: progress {self.desc}: {self.n}/{self.total}, {errors} errors, "
                f"{requests / elapsed:.2f} requests/s, {tokens / elapsed:.1f} output tokens/s"
                f"{concurrency}, {eta} ({_duration(elapsed)} elapsed)")

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            print(self.line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            print(self.line(), file=sys.stderr, flush=True)


def timing_fields(results: Sequence[GenerationResult]) -> dict[str, float]:
    """Time to first token and output tokens per second of the last of ``results`` (the
    answering call), for a record's payload; {} where the backend does not measure them."""
    last = results[-1] if results else None
    if last is None or last.first_token_s is None:
        return {}
    out = {"first_token_s": round(last.first_token_s, 4)}
    generating = last.usage.latency_s - last.first_token_s
    if generating > 0 and last.usage.completion_tokens > 0:
        out["output_tokens_per_s"] = round(last.usage.completion_tokens / generating, 2)
    return out


def finish_reasons(results: Sequence[GenerationResult]) -> list[str | None]:
    """The finish reason of every sample of ``results``, in order (None where not reported)."""
    return [s.finish_reason for r in results for s in r.samples]


def cut_by_cap(store: ResultsStore, run_id: str, kinds: Sequence[str]) -> int:
    """Samples of the run's successful records of ``kinds`` that stopped at the token cap."""
    total = 0
    for kind in kinds:
        for row in store.iter_records(run_id, kind, errors=False):
            if '"length"' in row["payload"]:
                reasons = json.loads(row["payload"]).get("finish_reasons") or ()
                total += sum(reason == "length" for reason in reasons)
    return total


TRANSPORT_STREAM = "~transport"  # never a document, task or memory stream name
_COUNTERS = ("requests", "errors", "resent", "output_tokens")


def _transport_of(model: Model | None) -> dict[str, Any] | None:
    describe = getattr(model, "transport", None)
    return describe() if callable(describe) else None


class TransportLog:
    """What a remote model's transport did during one session of a run: open it when the
    session starts, :meth:`save` it when the session ends (models without a ``transport()``,
    such as local ones, save nothing)."""

    def __init__(self, model: Model | None) -> None:
        self._model = model
        self._start = _transport_of(model)

    def session(self) -> dict[str, Any] | None:
        """The limit's history and counters since the log was opened."""
        end = _transport_of(self._model)
        if end is None:
            return None
        start = self._start
        if start is None or start.get("instance") != end.get("instance"):
            start = {"history": [], **{k: 0 for k in _COUNTERS}}
        out = {k: v for k, v in end.items() if k not in ("instance", "history")}
        out["history"] = end["history"][len(start["history"]):]
        out.update({k: (end.get(k) or 0) - (start.get(k) or 0) for k in _COUNTERS})
        return out

    def save(self, store: ResultsStore, run_id: str) -> None:
        session = self.session()
        if session is None:
            return
        steps = store.state_steps(run_id, TRANSPORT_STREAM)
        store.save_state(run_id, TRANSPORT_STREAM, steps[-1] + 1 if steps else 0, session)


def transport_history(store: ResultsStore, run_id: str) -> list[dict[str, Any]]:
    """The saved transport sessions of a run, oldest first (none for local models)."""
    sessions = []
    for step in store.state_steps(run_id, TRANSPORT_STREAM):
        loaded = store.load_state(run_id, TRANSPORT_STREAM, step)
        if loaded is not None:
            sessions.append(loaded[1])
    return sessions


ProgressBar = tqdm | PlainProgress | None
"""A progress display, or None where none is shown."""


def progress_bar(total: int, initial: int, desc: str) -> tqdm | PlainProgress:
    """A progress bar with ETA on a terminal; plain lines every 30 s elsewhere."""
    if not sys.stderr.isatty():
        return PlainProgress(total, initial, desc)
    return tqdm(
        total=total, initial=initial, desc=desc, unit="probe", dynamic_ncols=True, leave=False,
    )
