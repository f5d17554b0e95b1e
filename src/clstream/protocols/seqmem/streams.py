"""Task streams by name: the dataset loaders of :mod:`clstream.protocols.seqmem.tasks` and the
synthetic stream of :mod:`clstream.protocols.seqmem.synthetic` behind one entry point."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clstream.core.errors import SpecError
from clstream.protocols.seqmem.synthetic import load_seqmem_synthetic
from clstream.protocols.seqmem.tasks import (
    SeqStream,
    load_apibench_hf,
    load_humaneval,
    load_math500,
    load_mmlu_pro,
)


def load_seqmem_stream(benchmark: str, path: str | Path, **options: Any) -> SeqStream:
    """Dispatch by name: humaneval, math500, mmlu-pro, apibench-hf, synthetic."""
    if benchmark == "synthetic":
        return load_seqmem_synthetic(path, **options)
    loaders: dict[str, Callable[..., SeqStream]] = {
        "humaneval": load_humaneval,
        "math500": load_math500,
        "mmlu-pro": load_mmlu_pro,
        "apibench-hf": load_apibench_hf,
    }
    if benchmark not in loaders:
        raise SpecError(
            f"unknown SeqMem benchmark {benchmark!r} "
            f"(known: {', '.join(sorted([*loaders, 'synthetic']))})"
        )
    try:
        return loaders[benchmark](path, **options)
    except TypeError as exc:
        raise SpecError(f"{benchmark}: {exc}") from None
