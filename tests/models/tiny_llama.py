"""A tiny random-weight Llama the tests build themselves (no download): two layers, 32 wide,
with a word-level tokenizer, in a folder as ``save_pretrained`` writes it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

SENTENCES = [
    "Mary went to the kitchen . John picked up the apple .",
    "Where is Mary ? ## Answer : kitchen",
    "Sandra journeyed to the garden and dropped the football there .",
    "Who holds the apple ? Unknown Same one two three four",
    "Daniel gave the milk to Mary in the hallway .",
]
TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }} : {{ m['content'] }}</s>{% endfor %}"
    "{% if enable_thinking is defined and not enable_thinking %}<s>quiet</s>{% endif %}"
    "{% if add_generation_prompt %}<s>assistant :{% endif %}"
)


def build_tiny_model(folder: Path, chat_template: bool = True,
                     texts: Sequence[str] = (), hidden: int = 32, layers: int = 2) -> Path:
    """A ``layers``-layer, ``hidden``-wide Llama (2 and 32 unless asked) and a word-level
    tokenizer trained on :data:`SENTENCES` and ``texts`` (words of neither are ``<unk>``)."""
    torch = pytest.importorskip("torch", reason="needs the hf extra: pip install 'clstream[hf]'")
    transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install 'clstream[hf]'")
    tokenizers = pytest.importorskip("tokenizers", reason="needs the hf extra: pip install 'clstream[hf]'")
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["<pad>", "<s>", "</s>", "<unk>"])
    tok.train_from_iterator([*SENTENCES, *texts], trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>",
    )
    if chat_template:
        fast.chat_template = TEMPLATE
    config = transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
