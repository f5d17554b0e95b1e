"""Content-addressed training artifacts (docs/parametric.md §4).

An artifact's name hashes what made it: the base model's identity, the weights it started
from, the training data and the recipe. ``store/<name>/`` holds the finished weights and
``clstream-artifact.json`` (written last, inside the folder before it is renamed into place),
so a folder with that file is complete and is reused as it is. Training writes in
``store/<name>.partial/``, whose ``checkpoint-<step>`` folder (the trainer's, only the last
kept) is what a killed training resumes from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from clstream.core.files import write_atomic
from clstream.core.jsonio import load_json_file

MANIFEST = "clstream-artifact.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def base_identity(base: Path) -> dict[str, Any]:
    """What identifies a base model without reading its weights: the sha256 of config.json and
    the weight files' names and sizes."""
    base = Path(base)
    weights = sorted(
        p for p in base.iterdir()
        if p.is_file() and (p.name.endswith(WEIGHT_SUFFIXES) or p.name in WEIGHT_INDEXES)
    )
    return {
        "config_sha256": hashlib.sha256((base / "config.json").read_bytes()).hexdigest(),
        "weights": [[p.name, p.stat().st_size] for p in weights],
    }


def artifact_name(base: dict[str, Any], start: str | None, data_hash: str,
                  recipe: dict[str, Any]) -> str:
    """``clstream-`` and 16 hex digits of the sha256 of everything that made the weights."""
    text = json.dumps({"base": base, "start": start, "data": data_hash, "recipe": recipe},
                      sort_keys=True, separators=(",", ":"))
    return "clstream-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def final_dir(store: Path, name: str) -> Path:
    return store / name


def partial_dir(store: Path, name: str) -> Path:
    return store / f"{name}.partial"


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none (an unfinished folder)."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    value = load_json_file(path)
    return value if isinstance(value, dict) else None


def last_checkpoint(partial: Path) -> Path | None:
    """The latest ``checkpoint-<step>`` folder the trainer saved whole (its state file last)."""
    found = []
    for child in partial.glob("checkpoint-*") if partial.is_dir() else ():
        step = child.name.removeprefix("checkpoint-")
        if step.isdigit() and (child / "trainer_state.json").is_file():
            found.append((int(step), child))
    return max(found)[1] if found else None


def checkpoint_step(checkpoint: Path) -> int:
    return int(checkpoint.name.removeprefix("checkpoint-"))


def publish(partial: Path, final: Path, manifest: dict[str, Any]) -> None:
    """Drop the checkpoints, write the manifest and rename ``partial`` to ``final`` (atomic)."""
    for child in partial.glob("checkpoint-*"):
        shutil.rmtree(child)
    write_atomic(partial / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if final.exists():  # an incomplete folder of an older layout: it has no manifest
        shutil.rmtree(final)
    os.replace(partial, final)
