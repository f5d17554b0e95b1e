"""A ``run`` verb's flags as one typed, frozen value: what the driver plans a run from.

The command line (:mod:`clstream.arguments`) and spec files
(:mod:`clstream.commands.specfile`) both build a :class:`RunRequest`; the driver and
everything below it read only that value, so a flag walks down from the command to the store
and never back up (docs/design.md §11.1). A request is one seed's: ``--seeds`` gives one
request per seed, each as ``--seed N`` gives it (docs/design.md §11.6).

The values are kept as they were typed (a ``--base-url`` given once a string, given several
times a list): a run's spec, recorded flags and resume command read as they always did. The
checks that need several flags at once (sampling bounds, executor choice) are here, each
failing in one line that names its flag (exit 2), before anything is written.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from clstream.core.errors import SpecError
from clstream.driver.flags import (
    MOST_IN_FLIGHT,
    RAY_MISSING,
    REAL_SAMPLING,
    in_interval,
    interval,
    positive,
)

if TYPE_CHECKING:
    from clstream.core.types import SamplingParams

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class ExecutorChoice:
    """The ``--executor`` flags of a ``run`` verb: ``local`` (this process) or ``ray`` (the
    cluster at ``address``, or one started for the run with ``workers`` CPUs)."""

    kind: str = "local"
    address: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class SamplingFlags:
    """``--temperature``, ``--top-p``, ``--top-k``, ``--min-p``, ``--max-tokens``,
    ``--samples`` and ``--thinking`` (``on``, ``off`` or None): part of the run spec. The
    defaults are the OAKS paper's setup."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    min_p: float = 0.0
    max_tokens: int = 4096
    samples: int = 1
    thinking: str | None = None


@dataclass(frozen=True)
class BackendFlags:
    """The model backend's settings that are not part of the run spec: endpoint (one URL, or
    a list of replicas), API key variable, concurrency, timeout, retries, response cache."""

    base_url: str | list[str] | None = None
    api_key_env: str | None = None
    max_concurrency: int | None = None
    request_timeout: float | None = None
    max_retries: int | None = None
    cache: str | None = None

    def options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~clstream.driver.components.build_model`."""
        return {"base_url": self.base_url, "api_key_env": self.api_key_env,
                "max_concurrency": self.max_concurrency,
                "request_timeout": self.request_timeout, "max_retries": self.max_retries,
                "cache_path": self.cache}


@dataclass(frozen=True)
class ExecutorFlags:
    """``--executor``, ``--ray-address`` and ``--ray-workers``: where a run's cells are carried
    out, never what the run is (not in its spec nor its recorded flags)."""

    kind: str = "local"
    ray_address: str | None = None
    ray_workers: int | None = None


@dataclass(frozen=True)
class RunRequest(Generic[OptionsT]):
    """One seed's run of one protocol, as its ``run`` verb's flags ask for it.

    ``systems``: each ``--system`` as typed; ``model``: ``--model`` (None: not given, the
    builtin reader); ``options``: the protocol's own flags (its frozen options value, e.g.
    :class:`clstream.protocols.oaks.arguments.RunOptions`); ``recorded``: the flags stored
    with each run, that ``clstream runs DIR --spec`` turns back into a spec file; ``resume``:
    the command line that resumes the run.
    """

    systems: tuple[str, ...]
    out: str
    options: OptionsT
    model: str | None = None
    model_args: str | None = None
    seed: int = 0
    sampling: SamplingFlags = SamplingFlags()
    backend: BackendFlags = BackendFlags()
    executor: ExecutorFlags = ExecutorFlags()
    transcripts: str = "all"
    show_progress: bool = True
    recorded: Mapping[str, Any] = field(default_factory=dict)
    resume: str = ""

    @property
    def keeps_transcripts(self) -> bool:
        """Whether the run stores its model calls (``--transcripts``, the default ``all``)."""
        return self.transcripts != "none"


# SamplingParams fields whose flag has another name.
_SAMPLING_FLAGS = {"n": "samples"}


def sampling_params(sampling: SamplingFlags, seed: int) -> SamplingParams:
    """The sampling parameters of the flags, or a one-line error naming the flag."""
    # Imported here: building a request must not load pydantic.
    from pydantic import ValidationError

    from clstream.core.types import SamplingParams

    for dest, (least, most, above) in REAL_SAMPLING.items():
        value = getattr(sampling, dest)
        if not in_interval(value, least, most, above):
            raise SpecError(f"flag --{dest.replace('_', '-')}: must be a finite number in "
                            f"{interval(least, most, above)}, got {value}")
    try:
        return SamplingParams(
            temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k,
            min_p=sampling.min_p, max_tokens=sampling.max_tokens, n=sampling.samples,
            seed=seed,
            thinking=None if sampling.thinking is None else sampling.thinking == "on",
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0])
        flag = "--" + _SAMPLING_FLAGS.get(name, name.replace("_", "-"))
        raise SpecError(f"flag {flag}: {err['msg']}") from None


def executor_choice(flags: ExecutorFlags) -> ExecutorChoice:
    """The executor the flags choose; a one-line error (exit 2) for ``--executor ray`` where
    ray is not installed, or for Ray flags without it, before anything is written."""
    kind = flags.kind or "local"
    address, workers = flags.ray_address, flags.ray_workers
    positive("--ray-workers", workers, MOST_IN_FLIGHT)
    if kind != "ray":
        if address is not None or workers is not None:
            raise SpecError("flags --ray-address and --ray-workers need --executor ray")
        return ExecutorChoice()
    if importlib.util.find_spec("ray") is None:
        raise SpecError(RAY_MISSING)
    if address is not None and workers is not None:
        raise SpecError("flag --ray-workers sizes a local cluster; not with --ray-address")
    return ExecutorChoice("ray", address, workers)
