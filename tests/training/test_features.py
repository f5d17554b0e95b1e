"""Training features (docs/parametric.md §1): a pair's prompt is what ``hf:`` asks, only its
answer and end-of-sequence token are labelled; texts are packed into blocks in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_llama import build_tiny_model

from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.training.data import PairExample, TextExample
from clstream.training.features import (
    IGNORE,
    PadCollator,
    pair_features,
    text_blocks,
    training_features,
)

ASK = (Message(role="system", content="Answer briefly ."),
       Message(role="user", content="Where is Mary ?"))
PAIR = PairExample(ASK, "kitchen", "Mary went to the kitchen .")


@pytest.mark.parametrize("chat_template", [True, False])
def test_sft_labels_only_the_answer_and_eos_of_the_prompt_hf_renders(
    tmp_path: Path, chat_template: bool
) -> None:
    transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install 'clstream[hf]'")
    from clstream.models.hf import HFModel

    folder = build_tiny_model(tmp_path / "tiny", chat_template=chat_template)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    served = HFModel(str(folder), device="cpu").prompt_ids(
        GenerationRequest(key="q", messages=ASK, params=SamplingParams()))
    features = pair_features(tokenizer, PAIR)
    n = len(served)
    assert features["input_ids"][:n] == served
    assert features["labels"][:n] == [IGNORE] * n
    answer = tokenizer.encode("kitchen", add_special_tokens=False)
    assert features["input_ids"][n:] == [*answer, tokenizer.eos_token_id]
    assert features["labels"][n:] == features["input_ids"][n:]


class WordTokenizer:
    """Just enough of a tokenizer for packing: one id per word, EOS 0."""

    eos_token_id = 0

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [len(word) for word in text.split()]


def test_texts_pack_in_order_into_blocks_and_pairs_keep_their_place() -> None:
    tok = WordTokenizer()
    blocks = text_blocks(tok, [TextExample("a bb ccc"), TextExample("dddd e")], block=4)
    assert [b["input_ids"] for b in blocks] == [[1, 2, 3, 0], [4, 1, 0]]
    assert all(b["labels"] == b["input_ids"] for b in blocks)
    rows = training_features(tok, [TextExample("a bb"), PAIR, TextExample("ccc")], block=8)
    assert [r["input_ids"] for r in rows][::2] == [[1, 2, 0], [3, 0]]
    assert IGNORE in rows[1]["labels"]


def test_padding_is_masked_and_unlabelled() -> None:
    pytest.importorskip("torch", reason="needs the hf extra: pip install 'clstream[hf]'")
    batch = PadCollator(pad_id=9)([{"input_ids": [1, 2, 3], "labels": [IGNORE, 2, 3]},
                                   {"input_ids": [4], "labels": [4]}])
    assert batch["input_ids"].tolist() == [[1, 2, 3], [4, 9, 9]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[IGNORE, 2, 3], [4, IGNORE, IGNORE]]
