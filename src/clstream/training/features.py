"""Token features the trainers read (docs/parametric.md §1): NTP blocks, SFT pairs, and both
interleaved in stream order.

A pair's prompt is rendered exactly as the ``hf:`` backend renders a request (the tokenizer's
chat template with the generation prompt when it has one, else
:func:`clstream.models.hf.render_plain`), so the weights learn to answer the very tokens they
are asked with. The answer is tokenized on its own, as the model generates it after the
prompt, and followed by the end-of-sequence token; those are the only labelled tokens.

NTP text is tokenized per example (special tokens as the tokenizer adds them, then the
end-of-sequence token), concatenated in order and cut into blocks of ``block`` tokens; the
last block of a run may be shorter (a short stream keeps all of its tokens). In ``cq`` each
maximal run of consecutive texts is packed on its own, so a document's blocks come before the
pairs that follow it, as the stream showed them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clstream.core.types import Message
from clstream.models.hf import render_plain
from clstream.training.data import Example, PairExample, TextExample

IGNORE = -100  # the label transformers' causal-LM loss skips

Features = dict[str, list[int]]


def prompt_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """The prompt's token ids as ``hf:`` feeds them (``HFModel.prompt_ids``, no thinking flag)."""
    if not getattr(tokenizer, "chat_template", None):
        return list(tokenizer.encode(render_plain(messages), add_special_tokens=True))
    text = tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages],
        tokenize=False, add_generation_prompt=True,
    )
    # The template writes its own special tokens; encoding must not add them again.
    return list(tokenizer.encode(text, add_special_tokens=False))


def eos_id(tokenizer: Any) -> int:
    eos = tokenizer.eos_token_id
    if not isinstance(eos, int):
        raise ValueError("the tokenizer has no end-of-sequence token")
    return eos


def pair_features(tokenizer: Any, pair: PairExample) -> Features:
    """Prompt + answer + EOS, labelled on the answer and EOS only."""
    prompt = prompt_ids(tokenizer, pair.messages)
    answer = [*tokenizer.encode(pair.answer, add_special_tokens=False), eos_id(tokenizer)]
    return {"input_ids": prompt + answer, "labels": [IGNORE] * len(prompt) + answer}


def text_blocks(tokenizer: Any, texts: Sequence[TextExample], block: int) -> list[Features]:
    """The texts' tokens, concatenated in order, in blocks of ``block`` (the last may be shorter)."""
    stream: list[int] = []
    for example in texts:
        stream += [*tokenizer.encode(example.text, add_special_tokens=True), eos_id(tokenizer)]
    return [
        {"input_ids": stream[at: at + block], "labels": stream[at: at + block]}
        for at in range(0, len(stream), block)
    ]


def training_features(tokenizer: Any, examples: Sequence[Example], block: int) -> list[Features]:
    """Features of ``examples`` in order: runs of texts packed into blocks, pairs one row each."""
    rows: list[Features] = []
    run: list[TextExample] = []
    for example in examples:
        if isinstance(example, TextExample):
            run.append(example)
            continue
        rows += text_blocks(tokenizer, run, block)
        run = []
        rows.append(pair_features(tokenizer, example))
    rows += text_blocks(tokenizer, run, block)
    return rows


class PadCollator:
    """Right-pads a micro-batch of features: pad ids, attention mask 0 and label -100 on padding."""

    def __init__(self, pad_id: int) -> None:
        self.pad_id = pad_id

    def __call__(self, rows: Sequence[Features]) -> dict[str, Any]:
        import torch

        width = max(len(row["input_ids"]) for row in rows)
        ids, mask, labels = [], [], []
        for row in rows:
            fill = width - len(row["input_ids"])
            ids.append(row["input_ids"] + [self.pad_id] * fill)
            mask.append([1] * len(row["input_ids"]) + [0] * fill)
            labels.append(row["labels"] + [IGNORE] * fill)
        return {
            "input_ids": torch.tensor(ids, dtype=torch.long),
            "attention_mask": torch.tensor(mask, dtype=torch.long),
            "labels": torch.tensor(labels, dtype=torch.long),
        }
