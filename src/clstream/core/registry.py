"""A lazy, typed registry: names map to ``"module:object"`` strings, imported on first use.

Optional backends (torch, vllm, sentence-transformers) therefore cost nothing at import time
(the lesson of lm-evaluation-harness's registry, docs/design.md §2.2), and ``core`` imports nothing else
of clstream: everything it names is reached through those strings.

Kinds are a closed set (:data:`KINDS`). The registry refuses mistakes instead of hiding them:
a name registered twice for one kind with another target, an unknown kind, a target that is
not ``"module:object"``, an object of the wrong sort (a system or model that is not a class)
and an unknown name (the error lists the known ones) are all errors.

Components declare ``summary`` (one line) and ``params`` (:class:`~clstream.core.params.Param`
by name) as class attributes. :func:`describe` reads them without instantiating anything, and
:func:`canonical_component` fills a spec with every declared default, so that ``rag`` and
``rag:k=8`` are the same spec and the same run id.

Importing this module imports no pydantic model (:mod:`clstream.core.specs` is imported where a
spec is made or a name checked): the command line reads the registry to build its parser, and
that must stay cheap.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, overload

from clstream.core.errors import SpecError
from clstream.core.params import Param, check_args

if TYPE_CHECKING:
    from clstream.core.contracts import Model, System
    from clstream.core.environment import Policy
    from clstream.core.protocol import StreamProtocol
    from clstream.core.specs import ComponentSpec, RunSpec
    from clstream.core.types import Message, SamplingParams

Kind = Literal["protocol", "system", "model", "judge", "policy", "builtin_reply"]
KINDS: tuple[Kind, ...] = get_args(Kind)

# Optional dependency (top-level module) -> the extra of pyproject.toml that installs it.
EXTRAS: dict[str, str] = {
    "torch": "hf", "transformers": "hf", "tokenizers": "hf", "vllm": "vllm",
    "sentence_transformers": "embed", "sympy": "math", "pyarrow": "parquet", "ray": "ray",
    "peft": "train", "trl": "train", "accelerate": "train", "datasets": "train",
}


class RegistryError(SpecError, ValueError):
    """A registration or lookup mistake (one line, like every :class:`SpecError`)."""


class SystemClass(Protocol):
    """What ``resolve("system", name)`` returns: a class building a :class:`System`."""

    def __call__(self, model: Model, sampling: SamplingParams | None = ..., seed: int = ...,
                 **args: Any) -> System: ...


class ModelClass(Protocol):
    """What ``resolve("model", name)`` returns: a class building a :class:`Model` from the
    spec's ``target`` and arguments plus backend options."""

    def __call__(self, *args: Any, **kwargs: Any) -> Model: ...


PolicyLookup = Callable[[str], "Policy | None"]
"""The builtin model's lookup of a task's builtin policy (None: the task has none)."""
BuiltinReply = Callable[[Sequence["Message"]], "str | None"]
"""A method's replies for the builtin model: the reply to a request the method sent, None
for any other request."""


class BuiltinReplier(Protocol):
    """What ``resolve("builtin_reply", name)`` returns: given the builtin model's policy
    lookup, the method's :data:`BuiltinReply` (called once per model, so it may keep state)."""

    def __call__(self, policy_of: PolicyLookup) -> BuiltinReply: ...


@dataclass(frozen=True)
class Entry:
    """One registered component: its kind, name and ``"module:object"`` target. ``summary``
    is used only when the object itself cannot be imported or declares none."""

    kind: Kind
    name: str
    target: str
    summary: str = ""


def _builtin_entries() -> dict[Kind, dict[str, Entry]]:
    table: dict[Kind, dict[str, str]] = {
        "protocol": {
            "oaks": "clstream.protocols.oaks:PROTOCOL",
            "seqmem": "clstream.protocols.seqmem:PROTOCOL",
            "clbench": "clstream.protocols.clbench:PROTOCOL",
            "imprint": "clstream.protocols.imprint:PROTOCOL",
        },
        "system": {
            "full": "clstream.systems.context:FullContext",
            "window": "clstream.systems.context:RollingWindow",
            "rag": "clstream.systems.context:RagSystem",
            "rag+window": "clstream.systems.context:RagWindow",
            "memory-free": "clstream.systems.experience:MemoryFree",
            "exp-recent": "clstream.systems.experience:ExpRecent",
            "exp-rag": "clstream.systems.experience:ExpRag",
            "dc-rs": "clstream.systems.curated:DcRs",
            "awm": "clstream.systems.curated:Awm",
            "expel-st": "clstream.systems.expel:ExpelSt",
            "expel-mt": "clstream.systems.expel:ExpelMt",
            "g-memory": "clstream.systems.gmemory:GMemory",
            "icl": "clstream.systems.icl:Icl",
            "notepad": "clstream.systems.notepad:Notepad",
            "mem0": "clstream.systems.mem0:Mem0",
            "amem": "clstream.systems.amem:AMem",
            "memagent": "clstream.systems.memagent:MemAgent",
            "hipporag": "clstream.systems.hipporag:HippoRag",
            "ace": "clstream.systems.ace:Ace",
            "oracle": "clstream.systems.oracle:Oracle",
            "agentic-rag": "clstream.systems.agentic_rag:AgenticRag",
            "summary": "clstream.systems.chunked_summary:ChunkedSummary",
            "scaffold": "clstream.systems.scaffold:MemoryScaffold",
            "ntp": "clstream.systems.parametric:Ntp",
            "sft": "clstream.systems.parametric:Sft",
            "cq": "clstream.systems.parametric:Cq",
            "sdft": "clstream.systems.parametric:Sdft",
            "lora-ntp": "clstream.systems.parametric:LoraNtp",
            "lora-sft": "clstream.systems.parametric:LoraSft",
            "lora-cq": "clstream.systems.parametric:LoraCq",
            "lora-sdft": "clstream.systems.parametric:LoraSdft",
        },
        "model": {
            "builtin": "clstream.models.builtin:BuiltinReader",
            "openai": "clstream.models.openai_compat:OpenAICompatModel",
            "hf": "clstream.models.hf:HFModel",
            "vllm": "clstream.models.vllm_backend:VLLMModel",
        },
        "judge": {
            "code": "clstream.judges.evaluators:CodeEvaluator",
            "math": "clstream.judges.evaluators:MathEvaluator",
            "mc": "clstream.judges.evaluators:ChoiceEvaluator",
            "api": "clstream.judges.evaluators:ApiCallEvaluator",
            "synthetic": "clstream.judges.evaluators:SyntheticEvaluator",
        },
        # Builtin (non-LLM) policies, by task name, come from the protocols that own the
        # environments (:func:`_take_declared_policies`); none is written here.
        "policy": {},
        # The builtin model's replies to the update calls of the memory methods that make
        # them, each beside its method (a :class:`BuiltinReplier`), by method; protocols add
        # the replies to their own formats (:func:`_take_declared`). The model asks each in
        # name order; each claims only its own requests.
        "builtin_reply": {
            "ace": "clstream.systems.ace:builtin_replier",
            "amem": "clstream.systems.amem.builtin_replies:replier",
            "hipporag": "clstream.systems.hipporag.builtin_replies:replier",
            "mem0": "clstream.systems.mem0:builtin_replier",
            "memagent": "clstream.systems.memagent.builtin_replies:replier",
            "notepad": "clstream.systems.notepad:builtin_replier",
        },
    }
    return {kind: {name: Entry(kind, name, target) for name, target in entries.items()}
            for kind, entries in table.items()}


_REGISTRY: dict[Kind, dict[str, Entry]] = _builtin_entries()

# Other names a component is known by on the command line. A spec naming an alias is made
# canonical under the entry's own name, so both spellings are one run.
ALIASES: dict[str, dict[str, str]] = {
    # ImprintBench's "Base Model" row (docs/imprint.md §8) is the memory-free baseline.
    "system": {"base": "memory-free"},
}


def _kind(kind: str) -> Kind:
    if kind not in KINDS:
        raise RegistryError(f"unknown registry kind {kind!r} (kinds: {', '.join(KINDS)})")
    return kind


def register(kind: str, name: str, target: str, summary: str = "", *,
             replace: bool = False) -> Entry:
    """Add an entry; ``target`` is ``"package.module:Object"``.

    Registering a name again with the same target is a no-op; with another target it is an
    error unless ``replace=True`` (meant for tests).
    """
    from clstream.core.specs import NAME_PATTERN  # pydantic: not on the command line's path

    k = _kind(kind)
    module, sep, attr = target.partition(":") if isinstance(target, str) else ("", "", "")
    if not sep or not module.strip() or not attr.strip() or ":" in attr:
        raise RegistryError(f"registry target {target!r} for {kind} {name!r} "
                            "must be 'module:object'")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise RegistryError(f"registry name {name!r} for {kind} must be lowercase letters, "
                            "digits, _+- (as typed on the command line)")
    table = _REGISTRY[k]
    old = table.get(name)
    if old is not None and old.target != target and not replace:
        raise RegistryError(f"{kind} {name!r} is already registered as {old.target!r}; "
                            f"refusing to replace it with {target!r}")
    new = Entry(k, name, target, summary or (old.summary if old is not None else ""))
    table[name] = new
    return new


def unregister(kind: str, name: str) -> None:
    """Remove an entry (tests use it to clean up after themselves)."""
    _REGISTRY[_kind(kind)].pop(name, None)


# What a protocol object may declare, by kind: the attribute naming its entries.
_DECLARED_BY_PROTOCOLS: dict[Kind, str] = {"policy": "policies",
                                           "builtin_reply": "builtin_replies"}
# Protocol entries whose declared entries of a kind are already in the table.
_CONSULTED: dict[Kind, set[Entry]] = {kind: set() for kind in _DECLARED_BY_PROTOCOLS}


def _take_declared(kind: Kind) -> None:
    """Fill ``kind`` from the protocols: a protocol object may declare ``policies``, ``{task:
    "module:object"}``, the builtin policy of each environment it plays, and
    ``builtin_replies``, ``{name: "module:object"}``, the builtin model's replies to requests
    in the protocol's own formats (a :class:`BuiltinReplier`).

    The builtin model asks this registry for the policy of the task an action prompt names and
    for every replier; the protocol says which exist. So the model names no protocol and this
    module no policy (docs/design.md §2.1: each layer imports only from the layers below it).
    Protocols are consulted once each per kind, the first time the kind is read after they
    were registered.
    """
    attribute = _DECLARED_BY_PROTOCOLS[kind]
    for e in list(_REGISTRY["protocol"].values()):
        if e in _CONSULTED[kind]:
            continue
        declared = getattr(_load(e), attribute, {})
        for name, target in declared.items():
            register(kind, name, target)
        _CONSULTED[kind].add(e)


def _table(kind: str) -> dict[str, Entry]:
    k = _kind(kind)
    if k in _DECLARED_BY_PROTOCOLS:
        _take_declared(k)
    return _REGISTRY[k]


def names(kind: str) -> list[str]:
    """The names registered for ``kind``, sorted."""
    return sorted(_table(kind))


def entries(kind: str) -> list[Entry]:
    """The entries registered for ``kind``, sorted by name."""
    table = _table(kind)
    return [table[n] for n in sorted(table)]


def entry(kind: str, name: str) -> Entry:
    """The entry of ``name``; an unknown name is a :class:`SpecError` listing the known ones."""
    table = _table(kind)
    name = ALIASES.get(kind, {}).get(name, name) if name not in table else name
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise RegistryError(f"unknown {kind} {name!r} (known: {known})")
    return table[name]


def missing_extra(exc: ImportError) -> str | None:
    """The pyproject extra that would install the module ``exc`` found missing, if known."""
    top = (exc.name or "").split(".")[0]
    return EXTRAS.get(top)


def _load(e: Entry) -> Any:
    module_name, _, attr = e.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = missing_extra(exc)
        if extra is not None:
            raise RegistryError(f"{e.kind} {e.name!r} needs {exc.name}: "
                                f"pip install 'clstream[{extra}]'") from None
        raise RegistryError(f"{e.kind} {e.name!r}: cannot import {module_name} ({exc})") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise RegistryError(f"{e.kind} {e.name!r}: {module_name} has no {attr!r}") from None
    if e.kind in ("system", "model") and not inspect.isclass(obj):
        raise RegistryError(f"{e.kind} {e.name!r}: {e.target} is not a class")
    if e.kind in ("judge", "policy", "builtin_reply") and not callable(obj):
        raise RegistryError(f"{e.kind} {e.name!r}: {e.target} is not callable")
    return obj


@overload
def resolve(kind: Literal["system"], name: str) -> SystemClass: ...
@overload
def resolve(kind: Literal["model"], name: str) -> ModelClass: ...
@overload
def resolve(kind: Literal["protocol"], name: str) -> StreamProtocol: ...
@overload
def resolve(kind: Literal["judge"], name: str) -> Callable[..., Any]: ...
@overload
def resolve(kind: Literal["builtin_reply"], name: str) -> BuiltinReplier: ...
@overload
def resolve(kind: str, name: str) -> Any: ...
def resolve(kind: str, name: str) -> Any:
    """Import and return the object registered as ``name`` of ``kind``."""
    return _load(entry(kind, name))


def resolve_system(name: str) -> SystemClass:
    return resolve("system", name)


def resolve_model(name: str) -> ModelClass:
    return resolve("model", name)


def resolve_protocol(name: str) -> StreamProtocol:
    return resolve("protocol", name)


# --- declarations: summary and params ----------------------------------------------------------


def params_of(obj: Any) -> dict[str, Param] | None:
    """The parameters ``obj`` declares, or None when it declares none (not even ``{}``)."""
    params = getattr(obj, "params", None)
    if params is None:
        return None
    if not isinstance(params, Mapping) or not all(
        isinstance(k, str) and isinstance(p, Param) for k, p in params.items()
    ):
        raise RegistryError(f"{getattr(obj, '__name__', obj)!r}: params must map names to Param")
    return dict(params)


def summary_of(obj: Any) -> str:
    """The one-line ``summary`` of ``obj``, else the first line of its docstring."""
    summary = getattr(obj, "summary", None)
    if isinstance(summary, str) and summary.strip():
        return summary.strip().splitlines()[0]
    doc = inspect.getdoc(obj) if inspect.isclass(obj) else None
    return doc.strip().splitlines()[0] if doc else ""


@dataclass(frozen=True)
class Description:
    """What ``clstream list`` shows of one entry. ``params`` is None when the component
    declares none; ``note`` says why it could not be imported (e.g. a missing extra)."""

    entry: Entry
    summary: str
    params: Mapping[str, Param] | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.entry.name,
            "target": self.entry.target,
            "summary": self.summary,
            "params": None if self.params is None else [
                {"name": key, "type": p.type_name, "default": p.default, "help": p.help,
                 "minimum": p.minimum, "maximum": p.maximum, "choices": list(p.choices) if p.choices else None}
                for key, p in sorted(self.params.items())
            ],
            "note": self.note,
        }


def describe(kind: str, name: str) -> Description:
    """Summary and parameters of an entry, read from its class without instantiating it.

    An entry whose module cannot be imported (a missing optional extra) is described by a
    ``note`` instead of raising; an unknown name still raises.
    """
    e = entry(kind, name)
    try:
        obj = _load(e)
    except RegistryError as exc:
        return Description(e, e.summary, None, note=str(exc))
    return Description(e, summary_of(obj) or e.summary, params_of(obj))


# --- canonical specs ---------------------------------------------------------------------------


def _target_rule(kind: str, obj: Any) -> bool | None:
    """For models: True when the constructor requires ``target``, False when it takes none,
    None when optional or unknown."""
    if kind != "model":
        return None
    try:
        accepted = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return None
    if "target" not in accepted:
        return None if any(p.kind is p.VAR_KEYWORD for p in accepted.values()) else False
    return accepted["target"].default is inspect.Parameter.empty


def canonical_component(kind: str, spec: ComponentSpec) -> ComponentSpec:
    """``spec`` with every parameter its component declares, defaults filled in and values
    checked (:func:`~clstream.core.params.check_args`), so that equal settings give equal specs.

    A model's ``target`` (its name or path) is kept as given. A component that declares no
    ``params`` is returned unchanged (its constructor checks its arguments). An unknown name,
    argument, type or value is a :class:`SpecError` naming the component.
    """
    from clstream.core.specs import ComponentSpec

    e = entry(kind, spec.name)
    obj = _load(e)
    owner = f"{kind} {spec.name!r}"
    args = dict(spec.args)
    target = args.pop("target", None) if kind == "model" else None
    rule = _target_rule(kind, obj)
    if rule is True and target is None:
        raise SpecError(f"{owner} needs a model name or path: {spec.name}:<name or path>")
    if rule is False and target is not None:
        raise SpecError(f"{owner} takes no model name or path, got {target!r}")
    params = params_of(obj)
    if params is None:
        return spec if e.name == spec.name else spec.model_copy(update={"name": e.name})
    checked = check_args(owner, params, args)
    if target is not None:
        checked["target"] = target
    return ComponentSpec(name=e.name, args=dict(sorted(checked.items())),
                         defaults={k: p.default for k, p in params.items()})


def canonical_run_spec(spec: RunSpec) -> RunSpec:
    """``spec`` with its system and model canonical (:func:`canonical_component`)."""
    return spec.model_copy(update={
        "system": canonical_component("system", spec.system),
        "model": canonical_component("model", spec.model),
    })
