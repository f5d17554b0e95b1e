"""Train the weights of a parametric memory method (docs/parametric.md §1-4).

``ntp``, ``sft`` and ``cq`` run on transformers' ``Trainer`` over features built here
(:mod:`clstream.training.features`), not on trl's ``SFTTrainer``: the features must keep the
stream's order and render a pair's prompt exactly as the ``hf:`` backend asks it, while
``SFTTrainer`` packs by best fit (reordering sequences) and renders conversations its own way.
With the features made, the plain ``Trainer`` and a padding collator are all that is needed.
``sdft`` runs on trl's ``SDFTTrainer`` (:mod:`clstream.training.sdft`).

The recipe (App. C.2): AdamW (0.9, 0.999, 1e-8, the recipe's weight decay), cosine schedule
without warm-up, gradient clipping, gradient accumulation up to the effective batch, a
sequential sampler (stream order, no shuffling), the recipe's seed. Precision ``auto`` is
bfloat16 mixed precision on a CUDA device that has it (the trained weights stay float32;
LoRA loads the frozen base in bfloat16 there), float32 elsewhere. LoRA is peft's on every
linear layer but the output head. Nothing is downloaded (``local_files_only``), nothing is
reported, no progress bar or log line is printed (the CLI prints its own progress).

Tokens are counted exactly: the non-padding input tokens of every training forward over all
epochs (the trainer's ``num_input_tokens_seen``, which checkpoints carry across a resume);
SDFT adds its teacher forwards and the generated tokens.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clstream.core.types import Adapter
from clstream.training.artifacts import (
    artifact_name,
    base_identity,
    checkpoint_step,
    final_dir,
    last_checkpoint,
    partial_dir,
    publish,
    read_manifest,
)
from clstream.training.data import Example, PairExample, TextExample, examples_hash
from clstream.training.errors import TrainingError
from clstream.training.features import PadCollator, training_features
from clstream.training.recipe import Recipe
from clstream.training.sdft import TEACHER_TEMPLATE, sdft_rows, sdft_trainer_class

__all__ = ["TrainingRun", "adapter_name", "base_identity", "build_trainer", "train"]

EXTRA = "pip install 'clstream[train]'"
_QUIET_LOGGERS = ("transformers", "peft", "trl", "accelerate", "datasets", "torch")


@dataclass(frozen=True)
class TrainingRun:
    """What one call of :func:`train` did."""

    adapter: Adapter            # the weights after this update (name content-addressed)
    tokens: int                 # tokens the forward passes read, over all epochs (sdft: + generated)
    seconds: float              # wall time spent training now (0.0 when reused)
    reused: bool                # found complete in the store: nothing trained
    steps: int                  # optimizer steps
    losses: tuple[float, ...]   # training loss per logged step (empty when reused)
    resumed_from: int = 0       # optimizer step a killed training resumed at (0: fresh)


def train(base: Path, start: Adapter | None, examples: Sequence[Example], recipe: Recipe,
          store: Path, device: str = "auto") -> TrainingRun:
    """Train ``recipe`` on ``examples`` from ``base`` (plus ``start``, the previous update's
    weights), or reuse the weights a call with the same inputs stored before."""
    base, store = Path(base), Path(store)
    if not (base / "config.json").is_file():
        raise TrainingError(f"base model {base}: no config.json (a local model directory)")
    kind: Literal["lora", "full"] = "lora" if recipe.lora else "full"
    if start is not None and start.kind != kind:
        raise TrainingError(f"a {kind} training cannot start from {start.kind} weights "
                            f"{start.name}")
    identity = base_identity(base)
    data_hash = examples_hash(examples)
    name = adapter_name(base, start, examples, recipe)
    final, partial = final_dir(store, name), partial_dir(store, name)
    adapter = Adapter(name=name, path=str(final), kind=kind)
    reused = _complete(final, partial)
    if reused is not None:
        return TrainingRun(adapter=adapter, tokens=int(reused["tokens"]), seconds=0.0,
                           reused=True, steps=int(reused["steps"]), losses=())
    rows = _objective_examples(examples, recipe)
    began = time.perf_counter()
    try:
        with quiet():
            tokens, steps, losses, resumed = _fit(base, start, rows, recipe, partial, device)
            publish(partial, final, {
                "name": name, "kind": kind, "base": {"path": str(base), **identity},
                "start": start.name if start else None, "data_sha256": data_hash,
                "examples": len(examples), "recipe": recipe.identity(), "tokens": tokens,
                "steps": steps, "losses": list(losses),
            })
    except TrainingError:
        raise
    except Exception as exc:  # a trainer failure of any kind is reported in one line
        line = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        raise TrainingError(f"training {name} ({recipe.objective}) failed: {line}") from exc
    return TrainingRun(adapter=adapter, tokens=tokens, seconds=time.perf_counter() - began,
                       reused=False, steps=steps, losses=losses, resumed_from=resumed)


def adapter_name(base: Path, start: Adapter | None, examples: Sequence[Example],
                 recipe: Recipe) -> str:
    """The content-addressed name :func:`train` gives these inputs' weights (nothing trained)."""
    return artifact_name(base_identity(Path(base)), start.name if start else None,
                         examples_hash(examples), recipe.identity())


def _complete(final: Path, partial: Path) -> dict[str, Any] | None:
    """The manifest of finished weights, finishing a rename a kill interrupted."""
    manifest = read_manifest(final)
    if manifest is None and read_manifest(partial) is not None:
        publish(partial, final, read_manifest(partial) or {})
        manifest = read_manifest(final)
    return manifest


def _objective_examples(examples: Sequence[Example], recipe: Recipe) -> list[Example]:
    """The examples the objective trains on: texts (ntp), pairs (sft, sdft) or both (cq)."""
    wanted: tuple[type, ...] = {
        "ntp": (TextExample,), "sft": (PairExample,), "sdft": (PairExample,),
        "cq": (TextExample, PairExample),
    }[recipe.objective]
    rows = [e for e in examples if isinstance(e, wanted)]
    if not rows:
        raise TrainingError(f"{recipe.objective} training: none of the {len(examples)} "
                            "examples is of a kind it trains on")
    return rows


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No progress bars, log lines or warnings from the libraries while training."""
    levels = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
    for name in levels:
        logging.getLogger(name).setLevel(logging.ERROR)
    bars = os.environ.get("HF_DATASETS_DISABLE_PROGRESS_BARS")
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    hf_logging = _require("transformers").utils.logging
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        if bars is None:
            os.environ.pop("HF_DATASETS_DISABLE_PROGRESS_BARS", None)
        else:
            os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = bars


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TrainingError(f"{module} is not installed: {EXTRA} ({exc})") from None


def _placement(device: str, recipe: Recipe) -> tuple[bool, bool]:
    """(on CUDA, bfloat16 mixed precision) for ``device`` and the recipe's precision."""
    torch = _require("torch")
    if device not in ("auto", "cpu", "cuda"):
        raise TrainingError(f"training device {device!r}: give auto, cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise TrainingError("training device 'cuda' but CUDA is not available")
    cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if recipe.precision == "auto":
        return cuda, cuda and bool(torch.cuda.is_bf16_supported())
    return cuda, recipe.precision == "bfloat16"


def load_student(base: Path, start: Adapter | None, recipe: Recipe, bf16_base: bool) -> Any:
    """The model to train: the base (or a full start checkpoint) with a new or continued
    LoRA adapter when the recipe asks for one."""
    torch = _require("torch")
    transformers = _require("transformers")
    source = Path(start.path) if start is not None and not recipe.lora else base
    dtype = torch.bfloat16 if (recipe.lora and bf16_base) else torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(
        source, local_files_only=True, dtype=dtype)
    if not recipe.lora:
        return model
    peft = _require("peft")
    if start is not None:
        return peft.PeftModel.from_pretrained(model, start.path, is_trainable=True,
                                              local_files_only=True)
    config = peft.LoraConfig(r=recipe.r, lora_alpha=recipe.alpha, lora_dropout=recipe.dropout,
                             target_modules="all-linear", task_type="CAUSAL_LM")
    return peft.get_peft_model(model, config)


def training_arguments(recipe: Recipe, partial: Path, cuda: bool, bf16: bool) -> dict[str, Any]:
    """The keyword arguments of ``TrainingArguments`` (and ``SDFTConfig``) the recipe makes."""
    return {
        "output_dir": str(partial),
        "per_device_train_batch_size": recipe.micro_batch,
        "gradient_accumulation_steps": recipe.accumulation,
        "num_train_epochs": recipe.epochs,
        "learning_rate": recipe.lr,
        "optim": "adamw_torch",
        "adam_beta1": 0.9, "adam_beta2": 0.999, "adam_epsilon": 1e-8,
        "weight_decay": recipe.weight_decay,
        "max_grad_norm": recipe.clip,
        "lr_scheduler_type": "cosine",
        "warmup_steps": 0,
        "bf16": bf16,
        "use_cpu": not cuda,
        "seed": recipe.seed,
        "data_seed": recipe.seed,
        "train_sampling_strategy": "sequential",
        "logging_strategy": "steps", "logging_steps": 1,
        "save_strategy": "steps", "save_steps": recipe.save_every, "save_total_limit": 1,
        # Activations recomputed in the backward pass: identical gradients, far less memory
        # for a full fine-tune on a GPU; the CPU (tests, tiny models) does not need it.
        f"{_checkpointing()}": cuda,
        f"{_checkpointing()}_kwargs": {"use_reentrant": False},
        "report_to": "none", "push_to_hub": False, "disable_tqdm": True,
        "log_level": "error", "log_level_replica": "error",
        "remove_unused_columns": False,
        "dataloader_num_workers": 0,
    }


def _checkpointing() -> str:
    """The name transformers gives activation checkpointing (renamed in transformers 5)."""
    fields = _require("transformers").TrainingArguments.__dataclass_fields__
    return "activation_checkpointing" if "activation_checkpointing" in fields \
        else "gradient_checkpointing"


def build_trainer(base: Path, start: Adapter | None, examples: Sequence[Example],
                  recipe: Recipe, partial: Path, device: str = "auto") -> Any:
    """The configured trainer for ``recipe`` (its printer callback removed: nothing printed)."""
    with quiet():
        return _build_trainer(base, start, examples, recipe, partial, device)


def _build_trainer(base: Path, start: Adapter | None, examples: Sequence[Example],
                   recipe: Recipe, partial: Path, device: str) -> Any:
    transformers = _require("transformers")
    _require("peft")
    cuda, bf16 = _placement(device, recipe)
    transformers.set_seed(recipe.seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = load_student(base, start, recipe, bf16)
    arguments = training_arguments(recipe, partial, cuda, bf16)
    if recipe.objective == "sdft":
        trainer = _sdft_trainer(model, tokenizer, examples, recipe, arguments)
    else:
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        features = training_features(tokenizer, examples, recipe.block)
        trainer = transformers.Trainer(
            model=model,
            args=transformers.TrainingArguments(
                **arguments, include_num_input_tokens_seen="non_padding"),
            train_dataset=features,
            data_collator=PadCollator(tokenizer.pad_token_id),
            processing_class=tokenizer,
        )
    trainer.remove_callback(transformers.PrinterCallback)
    return trainer


def _sdft_trainer(model: Any, tokenizer: Any, pairs: Sequence[Example], recipe: Recipe,
                  arguments: dict[str, Any]) -> Any:
    datasets = _require("datasets")
    sdft_config = importlib.import_module("trl.experimental.sdft").SDFTConfig
    datasets.disable_progress_bars()
    config = sdft_config(
        **arguments,
        include_num_input_tokens_seen="no",  # counted by the trainer class itself
        num_generations=1, steps_per_generation=1, shuffle_dataset=False,
        max_prompt_length=None, max_completion_length=recipe.max_new,
        teacher_model_kind="base", teacher_prompt_template=TEACHER_TEMPLATE,
        # A vocabulary smaller than k (a test model) takes every token.
        distillation_mode="topk_logits",
        distillation_topk=min(recipe.topk, int(model.config.vocab_size)),
        distillation_alpha=1.0,
        model_init_kwargs={"local_files_only": True},
    )
    dataset = datasets.Dataset.from_list(
        sdft_rows([p for p in pairs if isinstance(p, PairExample)]))
    return sdft_trainer_class()(model=model, args=config, train_dataset=dataset,
                                processing_class=tokenizer)


def _fit(base: Path, start: Adapter | None, examples: Sequence[Example], recipe: Recipe,
         partial: Path, device: str) -> tuple[int, int, tuple[float, ...], int]:
    """Train (resuming from the partial folder's checkpoint) and save the final weights into
    the partial folder: (tokens, steps, losses, resumed-from step)."""
    checkpoint = last_checkpoint(partial)
    trainer = build_trainer(base, start, examples, recipe, partial, device)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    model = trainer.accelerator.unwrap_model(trainer.model)
    model.save_pretrained(partial)
    if not recipe.lora:
        trainer.processing_class.save_pretrained(partial)
    state = trainer.state
    losses = tuple(float(e["loss"]) for e in state.log_history if "loss" in e)
    resumed = checkpoint_step(checkpoint) if checkpoint else 0
    return int(state.num_input_tokens_seen), int(state.global_step), losses, resumed

