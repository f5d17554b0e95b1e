"""SDFT (docs/parametric.md §1): the teacher reads the source and the reference answer, the
student only the question; the distillation trains the weights."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("peft", reason="needs the train extra: pip install 'clstream[train]'")
pytest.importorskip("trl", reason="needs the train extra: pip install 'clstream[train]'")
from tiny_llama import build_tiny_model

from clstream.core.types import Message
from clstream.training.data import Example, PairExample
from clstream.training.features import prompt_ids
from clstream.training.recipe import Recipe
from clstream.training.sdft import sdft_rows
from clstream.training.train import build_trainer, train

SOURCE = "Mary went to the kitchen . John picked up the apple ."
PAIRS: list[Example] = [
    PairExample((Message(role="user", content="Where is Mary ?"),), "kitchen", SOURCE),
    PairExample((Message(role="user", content="Who holds the apple ?"),), "John", SOURCE),
]
RECIPE = Recipe(objective="sdft", lora=True, lr=5e-2, epochs=2, batch=2, micro_batch=2,
                topk=8, max_new=6, save_every=1000)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "base",
                            texts=["Source document : Reference answer : John"])


@pytest.mark.filterwarnings("ignore::FutureWarning")  # generation reads a renamed flag
def test_teacher_sees_the_context_and_the_student_does_not(base: Path, tmp_path: Path) -> None:
    trainer = build_trainer(base, None, PAIRS, RECIPE, tmp_path / "partial")
    trainer.model.train()
    batch = trainer._prepare_training_batch(sdft_rows([p for p in PAIRS
                                                       if isinstance(p, PairExample)]))
    tok = trainer.processing_class
    pad = tok.pad_token_id
    for row, pair in enumerate(PAIRS):
        assert isinstance(pair, PairExample)
        student = [t for t in batch["prompt_ids"][row].tolist() if t != pad]
        assert student == prompt_ids(tok, pair.messages)
        width = batch["completion_ids"].shape[1]
        teacher = [t for t in batch["teacher_input_ids"][row, :-width].tolist() if t != pad]
        student_text, teacher_text = tok.decode(student), tok.decode(teacher)
        assert "kitchen" not in student_text and "apple ." not in student_text
        assert "Mary went to the kitchen" in teacher_text
        assert f"Reference answer : {pair.answer}" in teacher_text
        assert pair.messages[-1].content in teacher_text
    # The teacher scores the student's own answer tokens.
    assert batch["teacher_input_ids"][:, -width:].tolist() == batch["completion_ids"].tolist()


def test_sdft_loss_is_finite_and_the_weights_change(base: Path, tmp_path: Path) -> None:
    import math

    import safetensors.torch

    run = train(base, None, PAIRS, RECIPE, tmp_path / "store")
    assert run.steps == 2 and len(run.losses) == 2
    assert all(math.isfinite(loss) for loss in run.losses)
    weights = safetensors.torch.load_file(str(Path(run.adapter.path)
                                              / "adapter_model.safetensors"))
    lora_b = [v for k, v in weights.items() if "lora_B" in k]
    # lora_B starts at zero: any non-zero entry is a trained change of the model.
    assert lora_b and any(bool(v.abs().max() > 0) for v in lora_b)
    # Each step: the student's prompt and answer, the teacher's longer prompt and the same
    # answer, and the generated answer: more than twice the student's prompts.
    assert run.tokens > 2 * 2 * sum(len(prompt_ids_of(base, p)) for p in PAIRS)


def prompt_ids_of(base: Path, pair: Example) -> list[int]:
    import transformers

    assert isinstance(pair, PairExample)
    tok = transformers.AutoTokenizer.from_pretrained(base, local_files_only=True)
    return prompt_ids(tok, pair.messages)
