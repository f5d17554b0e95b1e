"""Frozen, serializable run specs; a run's id is a hash of its spec (docs/design.md §4, after HELM).

Components (systems, models, judges) are written on the command line as ``NAME`` or
``NAME:key=value,...``; values are parsed as int, float, bool or string, in that order.
Model names keep everything after the first colon as the model path (``hf:/models/x``).

A parsed spec holds what was typed. Before it is hashed into a run id it is made canonical
(:func:`clstream.core.registry.canonical_component`): every parameter the component declares is
filled in with its default, so ``rag`` and ``rag:k=8`` are one spec and one run. A canonical
spec remembers those defaults (``defaults``, never serialized nor compared) only so that its
``label`` can show just the arguments that differ from them: both read ``rag``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clstream.core.errors import SpecError
from clstream.core.types import SamplingParams

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_+\-]*$")  # component names
_KEY = re.compile(r"^[a-z_][a-z0-9_]*$")


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in {"true", "false"}:
        return low == "true"
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


class ComponentSpec(BaseModel):
    """A named component with keyword arguments, e.g. ``rag:k=30`` -> (rag, {k: 30})."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    # The component's declared defaults, set by canonicalization; only ``label`` reads them.
    defaults: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)

    def __eq__(self, other: object) -> bool:
        """Specs are equal when they name the same component with the same arguments."""
        if not isinstance(other, ComponentSpec):
            return NotImplemented
        return (self.name, self.args) == (other.name, other.args)

    __hash__ = None  # type: ignore[assignment]  # args is a dict: not hashable

    @classmethod
    def parse(cls, text: str, what: str = "system") -> ComponentSpec:
        text = text.strip()
        name, _, rest = text.partition(":")
        if not NAME_PATTERN.match(name):
            raise SpecError(
                f"{what} {text!r}: name {name!r} must be lowercase letters, digits, _+-"
            )
        args: dict[str, Any] = {}
        if rest:
            for item in rest.split(","):
                key, eq, value = item.partition("=")
                key = key.strip()
                if not eq or not _KEY.match(key) or value.strip() == "":
                    raise SpecError(f"{what} {text!r}: expected key=value, got {item!r}")
                if key in args:
                    raise SpecError(f"{what} {text!r}: key {key!r} given twice")
                args[key] = _parse_value(value.strip())
        return cls(name=name, args=dict(sorted(args.items())))

    def differs_from_default(self, key: str) -> bool:
        """Whether argument ``key`` is not the component's declared default (when known)."""
        if key not in self.defaults:
            return True
        value, default = self.args[key], self.defaults[key]
        return type(value) is not type(default) or value != default

    @property
    def label(self) -> str:
        """``rag:k=2`` for systems; ``hf:/models/x [dtype=bfloat16]`` for model targets.

        Only arguments that differ from the declared defaults are shown (all of them when the
        spec is not canonical and its defaults are unknown), so ``rag`` and ``rag:k=8`` made
        canonical both read ``rag``.
        """
        rest = {k: v for k, v in sorted(self.args.items())
                if k != "target" and self.differs_from_default(k)}
        head = self.name + (f":{self.args['target']}" if "target" in self.args else "")
        if not rest:
            return head
        joined = ",".join(f"{k}={v}" for k, v in rest.items())
        return f"{head} [{joined}]" if "target" in self.args else f"{head}:{joined}"


def parse_model_spec(text: str, model_args: str | None = None) -> ComponentSpec:
    """``builtin``, ``openai:<model>``, ``hf:<path>``, ``vllm:<path>``: the rest is the target.

    ``model_args`` (``key=value,...``, from ``--model-args``) are backend settings that can change
    outputs (dtype, max_model_len, ...), so they are part of the spec and of the run id.
    """
    name, sep, target = text.strip().partition(":")
    if not NAME_PATTERN.match(name):
        raise SpecError(f"model {text!r}: backend {name!r} is not a valid name")
    if sep and not target:
        raise SpecError(f"model {text!r}: missing model name or path after ':'")
    args: dict[str, Any] = dict(ComponentSpec.parse(f"x:{model_args}", "--model-args").args) \
        if model_args else {}
    if "target" in args:
        raise SpecError("--model-args: 'target' is given by --model itself")
    if target:
        args["target"] = target
    return ComponentSpec(name=name, args=dict(sorted(args.items())))


class RunSpec(BaseModel):
    """Everything that determines a run's results. Same spec -> same run id -> resume."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protocol: str
    dataset_hash: str
    system: ComponentSpec
    model: ComponentSpec
    sampling: SamplingParams = SamplingParams()
    seed: int = 0
    params: dict[str, Any] = Field(default_factory=dict)

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def run_id(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]


def sha256_file(path: str, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()



def derive_seed(run_seed: int, key: str, sample: int = 0) -> int:
    """A per-request decoding seed from the run seed and the request identity (31 bits)."""
    digest = hashlib.sha256(f"{run_seed}\x00{key}\x00{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
