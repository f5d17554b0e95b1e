"""Self-distillation fine-tuning (docs/parametric.md §1, ``sdft``) on trl's ``SDFTTrainer``.

The student answers each question without context (sampled, at most ``recipe.max_new``
tokens, from the question exactly as the method asks it); the teacher, the frozen weights the
training starts from, reads the same answer tokens after a prompt whose user turn adds the
privileged context: the source document and the reference answer. The loss is the reverse KL
``KL(student || teacher)`` at each answer position over ``recipe.topk`` tokens, renormalised
(trl's ``distillation_alpha=1.0``: ``loss_utils.compute_divergence`` then takes
``kl_div(teacher, student)``, i.e. the expectation under the student).

Differences from the paper's description (App. C.2, as docs/parametric.md §1 reads it), all
trl's:

- the top-k support is the *student's* top-k tokens at each position (the teacher's
  log-probabilities are gathered on it), where the paper reads the teacher's top-100;
- trl corrects the loss by a clipped importance ratio when a rollout serves several optimizer
  steps; here every micro-batch samples its own rollout just before its step, so none applies;
- LoRA: the teacher is the base model with the adapter disabled (trl's ``"base"`` teacher for a
  peft model), so an incremental LoRA update distils from the base weights, while a full
  fine-tune distils from the weights it starts from (trl reloads them from their folder).

Two things are changed on the trainer: prompts are tokenized as the ``hf:`` backend renders
them (:func:`clstream.training.features.prompt_ids`, the same rendering SFT trains on), and the
sampler keeps the stream order and every example (trl's sampler drops a last partial batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clstream.core.types import Message
from clstream.training.data import PairExample
from clstream.training.features import prompt_ids

TEACHER_TEMPLATE = "{prompt}\n\n{privileged_context}"


def privileged_context(pair: PairExample) -> str:
    """What the teacher reads besides the question: the source document and the answer."""
    parts = [f"Source document:\n{pair.context}"] if pair.context.strip() else []
    parts.append(f"Reference answer: {pair.answer}")
    return "\n\n".join(parts)


def sdft_rows(pairs: Sequence[PairExample]) -> list[dict[str, Any]]:
    """The trainer's dataset rows: the student's prompt as chat messages and the context."""
    return [
        {
            "prompt": [{"role": m.role, "content": m.content} for m in pair.messages],
            "privileged_context": privileged_context(pair),
        }
        for pair in pairs
    ]


def sdft_trainer_class() -> type:
    """trl's SDFTTrainer with the clstream prompt rendering, stream order and token counting."""
    from torch.utils.data import SequentialSampler
    from trl.experimental.sdft import SDFTTrainer

    class StreamSDFTTrainer(SDFTTrainer):
        def _tokenize_prompts(self, prompts: list[Any]) -> list[list[int]]:
            return [
                prompt_ids(self._tokenizer, [Message(role=m["role"], content=m["content"])
                                             for m in prompt])
                for prompt in prompts
            ]

        def _get_train_sampler(self, dataset: Any = None) -> Any:
            source: Any = self.train_dataset if dataset is None else dataset
            return SequentialSampler(source)

        def _prepare_training_batch(self, inputs: list[dict[str, Any]]) -> Any:
            """The batch, counted: the student and teacher forwards' tokens and the generated
            ones (docs/parametric.md §4: tokens of every training forward)."""
            batch = super()._prepare_training_batch(inputs)
            if self.model is not None and self.model.training:
                completion = int(batch["completion_mask"].sum())
                student = int(batch["prompt_mask"].sum()) + completion
                teacher = int(batch["teacher_attention_mask"].sum())
                self.state.num_input_tokens_seen += student + teacher + completion
            return batch

    return StreamSDFTTrainer
