"""Training (docs/parametric.md §1-4) on a tiny random Llama: the loss falls, a LoRA adapter
round-trips through peft, names are content-addressed and reused, and an update continues from
the previous weights."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft", reason="needs the train extra: pip install 'clstream[train]'")
pytest.importorskip("trl", reason="needs the train extra: pip install 'clstream[train]'")
from tiny_llama import build_tiny_model

from clstream.core.types import Adapter
from clstream.training.data import Example, TextExample
from clstream.training.recipe import Recipe
from clstream.training.train import (
    TrainingRun,
    adapter_name,
    build_trainer,
    train,
)

CORPUS = [
    "the red fox jumps over the lazy dog near the river bank .",
    "a small bird sings in the tall tree every morning at dawn .",
    "the old man walks his dog along the river bank each evening .",
    "children play in the park while the sun sets over the hills .",
]
TEXTS: list[Example] = [TextExample(t) for t in CORPUS]
NTP = Recipe(objective="ntp", lora=False, lr=3e-3, epochs=4, batch=2, micro_batch=2, block=16,
             save_every=1000)
LORA = dataclasses.replace(NTP, lora=True, lr=1e-2)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "base", texts=CORPUS)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def lora_run(base: Path, store: Path) -> TrainingRun:
    return train(base, None, TEXTS, LORA, store)


def _logits(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits


@pytest.mark.parametrize("lora", [False, True])
def test_ntp_loss_decreases(base: Path, store: Path, lora_run: TrainingRun, lora: bool) -> None:
    run = lora_run if lora else train(base, None, TEXTS, NTP, store)
    assert not run.reused and run.steps == 8 and len(run.losses) == 8
    assert run.losses[-1] < run.losses[0] - 0.2
    assert run.adapter.kind == ("lora" if lora else "full")
    # Every block is full but the last of the stream: the exact non-padding tokens, 4 epochs.
    assert run.tokens == 4 * sum(len(t.split()) + 1 for t in CORPUS)
    assert (Path(run.adapter.path) / "clstream-artifact.json").is_file()
    assert not Path(run.adapter.path + ".partial").exists()


@pytest.mark.filterwarnings("ignore::FutureWarning")  # peft reads a renamed transformers flag
def test_lora_adapter_round_trips_and_merges(base: Path, lora_run: TrainingRun) -> None:
    peft = pytest.importorskip("peft")
    import torch
    import transformers

    def load() -> Any:
        return transformers.AutoModelForCausalLM.from_pretrained(
            base, local_files_only=True, dtype=torch.float32)

    ids = [1, 5, 6, 7, 8, 9, 10]
    adapted = peft.PeftModel.from_pretrained(load(), lora_run.adapter.path).eval()
    with_adapter = _logits(adapted, ids)
    assert not torch.allclose(with_adapter, _logits(load().eval(), ids), atol=1e-3)
    merged = adapted.merge_and_unload()
    assert not isinstance(merged, peft.PeftModel)
    # Merging adds B·A into each weight: the same sums in another order, so float32 rounding.
    torch.testing.assert_close(_logits(merged, ids), with_adapter, atol=1e-5, rtol=1e-5)


def test_same_inputs_reuse_and_any_change_renames(base: Path, store: Path,
                                                  lora_run: TrainingRun) -> None:
    again = train(base, None, TEXTS, LORA, store)
    assert again.reused and again.adapter == lora_run.adapter
    assert again.seconds == 0.0 and again.losses == () and again.steps == lora_run.steps
    assert again.tokens == lora_run.tokens
    name = lora_run.adapter.name
    assert name == adapter_name(base, None, TEXTS, LORA)
    assert name.startswith("clstream-") and len(name) == len("clstream-") + 16
    changed: dict[str, Any] = {"objective": "cq", "lora": False, "lr": 2e-2, "epochs": 5, "batch": 3,
               "micro_batch": 1, "block": 17, "r": 8, "alpha": 16, "dropout": 0.0,
               "weight_decay": 0.1, "clip": 0.5, "precision": "float32", "topk": 5,
               "max_new": 9, "save_every": 3, "seed": 1}
    assert set(changed) == set(LORA.identity())
    names = {adapter_name(base, None, TEXTS, dataclasses.replace(LORA, **{k: v}))
             for k, v in changed.items()}
    names.add(adapter_name(base, None, TEXTS[:3], LORA))
    names.add(adapter_name(base, None, [TextExample(CORPUS[0] + " !"), *TEXTS[1:]], LORA))
    names.add(adapter_name(base, lora_run.adapter, TEXTS, LORA))
    names.add(adapter_name(base, Adapter(name="clstream-0000000000000000", path="x"), TEXTS,
                           LORA))
    assert len(names) == len(changed) + 4 and name not in names


def _trainable(model: Any) -> dict[str, Any]:
    return {k.replace(".default", ""): v.detach().clone()
            for k, v in model.named_parameters() if v.requires_grad}


def test_an_update_starts_from_the_previous_weights(base: Path, store: Path,
                                                    lora_run: TrainingRun) -> None:
    import safetensors.torch
    import torch

    later = [TextExample("the fox and the bird play by the river .")]
    trainer = build_trainer(base, lora_run.adapter, later, LORA, store / "scratch")
    saved = safetensors.torch.load_file(str(Path(lora_run.adapter.path)
                                             / "adapter_model.safetensors"))
    start = _trainable(trainer.model)
    assert start and {k.removeprefix("base_model.model.") for k in start} == {
        k.removeprefix("base_model.model.") for k in saved}
    for key, value in saved.items():
        assert torch.equal(start[key], value), key
    fresh = _trainable(build_trainer(base, None, later, LORA, store / "scratch").model)
    assert any(not torch.equal(fresh[k], start[k]) for k in start)  # lora_B starts at zero

    update = train(base, lora_run.adapter, later, LORA, store)
    assert update.adapter.name not in (lora_run.adapter.name,
                                       adapter_name(base, None, later, LORA))
    full = train(base, None, TEXTS, NTP, store)
    model = build_trainer(base, full.adapter, later, NTP, store / "scratch").model
    import transformers

    trained = transformers.AutoModelForCausalLM.from_pretrained(full.adapter.path,
                                                                local_files_only=True)
    for (key, value), (_, expected) in zip(model.state_dict().items(),
                                           trained.state_dict().items(), strict=True):
        assert torch.equal(value, expected), key
