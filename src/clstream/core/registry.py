"""A lazy registry: names map to ``"module:object"`` strings, imported on first use.

Optional backends (torch, vllm, sentence-transformers) therefore cost nothing at import time
(the lesson of lm-evaluation-harness's registry, DESIGN.md).
"""

from __future__ import annotations

import importlib
from typing import Any

from clstream.core.errors import SpecError

_REGISTRY: dict[str, dict[str, str]] = {
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
    },
    "model": {
        "builtin": "clstream.models.builtin:BuiltinReader",
        "openai": "clstream.models.openai_compat:OpenAICompatModel",
        "hf": "clstream.models.hf:HFModel",
        "vllm": "clstream.models.vllm_backend:VLLMModel",
    },
    "benchmark": {
        "oaks": "clstream.protocols.oaks.loader:load_oaks",
    },
    "judge": {
        "code": "clstream.judges.evaluators:CodeEvaluator",
        "math": "clstream.judges.evaluators:MathEvaluator",
        "mc": "clstream.judges.evaluators:ChoiceEvaluator",
        "api": "clstream.judges.evaluators:ApiCallEvaluator",
        "synthetic": "clstream.judges.evaluators:SyntheticEvaluator",
    },
}


def register(kind: str, name: str, target: str) -> None:
    """Add or replace an entry; ``target`` is ``"package.module:Object"``."""
    if ":" not in target:
        raise ValueError(f"registry target {target!r} must be 'module:object'")
    _REGISTRY.setdefault(kind, {})[name] = target


def names(kind: str) -> list[str]:
    return sorted(_REGISTRY.get(kind, {}))


def resolve(kind: str, name: str) -> Any:
    """Import and return the object registered as ``name`` of ``kind``."""
    table = _REGISTRY.get(kind, {})
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise SpecError(f"unknown {kind} {name!r} (known: {known})")
    module_name, _, attr = table[name].partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr)
