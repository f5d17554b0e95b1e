"""What every backend does with a request's ``adapter`` (docs/parametric.md §3).

A request that names trained weights must be answered with them or not at all: a backend that
cannot attach them (the builtin model, a ``vllm:`` engine started without LoRA, a server not
declared able to load adapters, a kind the backend does not serve) returns an error result
naming itself, never the base model's answer under the adapter's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from clstream.core.types import GenerationRequest, GenerationResult


def unserved_adapter(backend: str, request: GenerationRequest,
                     kinds: Sequence[str]) -> GenerationResult | None:
    """The error result of ``request`` when its adapter is not among the ``kinds`` the model
    ``backend`` serves; None when it carries none or one that is served."""
    adapter = request.adapter
    if adapter is None or adapter.kind in kinds:
        return None
    served = ", ".join(kinds) if kinds else "none"
    return GenerationResult(
        key=request.key, stage=request.stage,
        error=(f"{backend}: cannot answer with {adapter.kind} adapter {adapter.name!r} "
               f"(adapter kinds served: {served})"),
    )
