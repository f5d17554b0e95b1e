"""A training killed part-way resumes from its last checkpoint (docs/parametric.md §4) and
ends with the weights of a training never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("peft", reason="needs the train extra: pip install 'clstream[train]'")
pytest.importorskip("trl", reason="needs the train extra: pip install 'clstream[train]'")
from tiny_llama import build_tiny_model

from clstream.training.artifacts import last_checkpoint
from clstream.training.data import TextExample
from clstream.training.recipe import Recipe
from clstream.training.train import adapter_name, train

WORDS = "the fox and the bird play by the river while the sun sets over the hills".split()
TEXTS = [TextExample(" ".join(WORDS[i:] + WORDS[:i])) for i in range(0, len(WORDS), 4)]
# One block per optimizer step, a checkpoint after each: 2 epochs of 5 blocks, 10 steps.
RECIPE = Recipe(objective="ntp", lora=True, lr=1e-2, epochs=2, batch=1, micro_batch=1,
                block=16, save_every=1)
STEPS = 10
CHILD = """
import sys
from pathlib import Path
from clstream.training.data import TextExample
from clstream.training.recipe import Recipe
from clstream.training.train import train
texts = [TextExample(line) for line in sys.argv[3].split("|")]
recipe = eval(sys.argv[4])
train(Path(sys.argv[1]), None, texts, recipe, Path(sys.argv[2]), device="cpu")
"""


def _weights(folder: str) -> dict[str, object]:
    import safetensors.torch

    return dict(safetensors.torch.load_file(str(Path(folder) / "adapter_model.safetensors")))


def test_killed_training_resumes_and_ends_with_the_uninterrupted_weights(tmp_path: Path) -> None:
    import torch

    base = build_tiny_model(tmp_path / "base", texts=WORDS)
    store = tmp_path / "store"
    partial = store / f"{adapter_name(base, None, TEXTS, RECIPE)}.partial"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(base), str(store), "|".join(t.text for t in TEXTS),
         repr(RECIPE)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while last_checkpoint(partial) is None and child.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.02)
    assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert last_checkpoint(partial) is not None

    resumed = train(base, None, TEXTS, RECIPE, store, device="cpu")
    assert 0 < resumed.resumed_from < STEPS and resumed.steps == STEPS and not resumed.reused
    assert len(resumed.losses) == STEPS  # the log history before the kill travels in the checkpoint
    whole = train(base, None, TEXTS, RECIPE, tmp_path / "other", device="cpu")
    assert whole.resumed_from == 0 and whole.adapter.name == resumed.adapter.name
    assert resumed.tokens == whole.tokens
    got, expected = _weights(resumed.adapter.path), _weights(whole.adapter.path)
    assert got.keys() == expected.keys()
    # The checkpoint restores the optimizer, scheduler, data position and RNG states (LoRA
    # dropout draws), and on one CPU thread layout the arithmetic is the same, so the
    # weights are equal bit for bit.
    for key, value in expected.items():
        assert torch.equal(got[key], value), key  # type: ignore[arg-type]
