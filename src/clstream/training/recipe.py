"""How a parametric method trains (docs/parametric.md §1): objective, weights and the
optimisation recipe, with the paper's defaults (App. C.2).

Every field is part of the artifact's name (:meth:`Recipe.identity`), so a change in any of
them trains new weights instead of reusing old ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

Objective = Literal["ntp", "sft", "cq", "sdft"]
Precision = Literal["auto", "float32", "bfloat16"]


@dataclass(frozen=True)
class Recipe:
    """One training recipe.

    ``batch`` is the effective batch in examples (ntp: blocks) per optimizer step and
    ``micro_batch`` the rows of one forward pass; gradient accumulation is
    ``ceil(batch / micro_batch)``. ``topk`` and ``max_new`` only matter to ``sdft``;
    ``save_every`` is the optimizer steps between checkpoints a killed training resumes from.
    """

    objective: Objective
    lora: bool
    lr: float
    epochs: int = 2
    batch: int = 64
    micro_batch: int = 8
    block: int = 512
    r: int = 16
    alpha: int = 32
    dropout: float = 0.1
    weight_decay: float = 0.0
    clip: float = 1.0
    precision: Precision = "auto"
    topk: int = 100
    max_new: int = 256
    save_every: int = 20
    seed: int = 0

    def __post_init__(self) -> None:
        if self.objective not in ("ntp", "sft", "cq", "sdft"):
            raise ValueError(f"unknown training objective {self.objective!r}")
        if self.precision not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"unknown precision {self.precision!r}")
        for name in ("epochs", "batch", "micro_batch", "block", "r", "alpha", "topk",
                     "max_new", "save_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"recipe {name} must be at least 1, not {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"recipe lr must be positive, not {self.lr}")

    @property
    def accumulation(self) -> int:
        """Forward passes per optimizer step."""
        return -(-self.batch // self.micro_batch)

    def identity(self) -> dict[str, Any]:
        """Every field, as artifact names hash them."""
        return dataclasses.asdict(self)
