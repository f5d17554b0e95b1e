"""HFModel answering with trained weights attached: LoRA adapters made with peft here (random,
non-zero weights) and a full checkpoint, over the tiny random Llama (docs/parametric.md §3)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tiny_llama import build_tiny_model

from clstream.core.contracts import adapter_kinds_of
from clstream.core.types import (
    Adapter,
    GenerationRequest,
    GenerationResult,
    Message,
    SamplingParams,
)
from clstream.models.hf import HFModel
from clstream.models.middleware import wrap

TRAIN = "needs the train extra: pip install 'clstream[train]'"
QUESTIONS = ["Where is Mary ?", "Who holds the apple ?", "Where is Sandra ? garden milk",
             "Daniel gave the milk to Mary ."]


@pytest.fixture(scope="module", autouse=True)
def offline_hub() -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


def make_lora(base: Path, folder: Path, seed: int) -> Adapter:
    """A LoRA adapter on every linear layer, its weights random and non-zero."""
    peft = pytest.importorskip("peft", reason=TRAIN)
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True)
    torch.manual_seed(seed)
    config = peft.LoraConfig(r=4, lora_alpha=32, target_modules="all-linear",
                             init_lora_weights=False)
    peft.get_peft_model(model, config).save_pretrained(str(folder))
    return Adapter(name=f"clstream-lora{seed}", path=str(folder), kind="lora")


def merged_copy(base: Path, adapter: Adapter, folder: Path) -> Path:
    """The base with ``adapter`` merged into its weights, saved as a model of its own."""
    peft = pytest.importorskip("peft", reason=TRAIN)
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True)
    peft.PeftModel.from_pretrained(model, adapter.path).merge_and_unload().save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(str(base)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def loras(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Adapter]:
    return [make_lora(tiny_dir, tmp_path_factory.mktemp(f"lora{s}"), s) for s in (1, 2)]


def req(key: str, text: str, adapter: Adapter | None = None, **params: Any
        ) -> GenerationRequest:
    return GenerationRequest(
        key=key, messages=(Message(role="user", content=text),),
        params=SamplingParams(**{"temperature": 0.0, "max_tokens": 10, **params}),
        adapter=adapter,
    )


def run(model: Any, requests: list[GenerationRequest]) -> list[GenerationResult]:
    return asyncio.run(model.generate(requests))


def texts(results: list[GenerationResult]) -> list[list[str]]:
    assert all(r.ok for r in results), [r.error for r in results]
    return [[s.text for s in r.samples] for r in results]


def test_lora_answers_equal_the_merged_model_and_differ_from_the_base(
    tiny_dir: Path, loras: list[Adapter], tmp_path: Path
) -> None:
    model = HFModel(str(tiny_dir), device="cpu")
    assert model.adapter_kinds() == ("lora", "full")
    lora = loras[0]
    merged = HFModel(str(merged_copy(tiny_dir, lora, tmp_path / "merged")), device="cpu")
    base = texts(run(model, [req(f"b{i}", q) for i, q in enumerate(QUESTIONS)]))
    with_lora = texts(run(model, [req(f"a{i}", q, lora) for i, q in enumerate(QUESTIONS)]))
    assert with_lora == texts(run(merged, [req(f"m{i}", q) for i, q in enumerate(QUESTIONS)]))
    assert with_lora != base
    # Loading an adapter leaves the base model's answers as they were.
    assert texts(run(model, [req(f"b{i}", q) for i, q in enumerate(QUESTIONS)])) == base
    sampled: dict[str, Any] = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "n": 2, "seed": 5}
    assert texts(run(model, [req("s", QUESTIONS[0], lora, **sampled)])) == \
        texts(run(merged, [req("s", QUESTIONS[0], **sampled)]))


def test_a_mixed_batch_answers_each_request_as_alone(tiny_dir: Path,
                                                     loras: list[Adapter]) -> None:
    for mix in (False, True):
        model = HFModel(str(tiny_dir), device="cpu", mix_requests=mix)
        batch = [req(f"k{i}", q, [None, loras[0], loras[1]][i % 3])
                 for i, q in enumerate(QUESTIONS * 2)]
        alone = [texts(run(model, [r]))[0] for r in batch]
        together = run(model, batch)
        assert [r.key for r in together] == [r.key for r in batch]
        assert texts(together) == alone
        assert len({tuple(t) for t in alone[:3]}) > 1  # the weights made a difference


def test_adapters_stay_bounded_least_recently_used_dropped(
    tiny_dir: Path, loras: list[Adapter]
) -> None:
    from clstream.models.hf_adapters import LoraAdapters

    model = HFModel(str(tiny_dir), device="cpu")
    model._lora = LoraAdapters(model._model, model.device, slots=1)
    first = texts(run(model, [req("x", QUESTIONS[1], loras[0])]))
    run(model, [req("y", QUESTIONS[1], loras[1])])
    assert model._lora.loaded == (loras[1].name,)
    assert texts(run(model, [req("x", QUESTIONS[1], loras[0])])) == first  # loaded again


def test_a_full_checkpoint_answers_as_that_model(tiny_dir: Path, loras: list[Adapter],
                                                 tmp_path: Path) -> None:
    folder = merged_copy(tiny_dir, loras[1], tmp_path / "checkpoint")
    full = Adapter(name="clstream-full", path=str(folder), kind="full")
    model = HFModel(str(tiny_dir), device="cpu")
    own = HFModel(str(folder), device="cpu")
    requests = [req(f"f{i}", q, full) for i, q in enumerate(QUESTIONS)]
    answers = run(model, [*requests, req("base", QUESTIONS[0])])
    expected = run(own, [r.model_copy(update={"adapter": None}) for r in requests])
    assert texts(answers[:-1]) == texts(expected)
    assert [a.usage.completion_tokens for a in answers[:-1]] == \
        [e.usage.completion_tokens for e in expected]
    assert texts(answers[-1:]) == texts(run(model, [req("base", QUESTIONS[0])]))


def test_unloadable_adapters_fail_their_requests_only(tiny_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("peft", reason=TRAIN)
    model = HFModel(str(tiny_dir), device="cpu")
    missing = Adapter(name="clstream-missing", path=str(tmp_path / "none"), kind="lora")
    gone = Adapter(name="clstream-gone", path=str(tmp_path / "none"), kind="full")
    bad, worse, fine = run(model, [req("a", QUESTIONS[0], missing), req("b", QUESTIONS[0], gone),
                                   req("c", QUESTIONS[0])])
    assert not bad.ok and not worse.ok and fine.ok
    assert (bad.error or "").startswith(f"hf:{tiny_dir}: cannot load lora adapter "
                                        "'clstream-missing'")
    assert "cannot load full adapter 'clstream-gone'" in (worse.error or "")


def test_kinds_reach_through_the_wrapper_and_the_key_names_the_adapter(
    tiny_dir: Path, loras: list[Adapter], tmp_path: Path
) -> None:
    model = HFModel(str(tiny_dir), device="cpu")
    wrapped = wrap(model, cache_path=tmp_path / "cache.sqlite")
    assert adapter_kinds_of(wrapped) == model.adapter_kinds()
    plain = req("k", QUESTIONS[0])
    keys = {wrapped.cache_key(plain.model_copy(update={"adapter": a}))
            for a in (None, *loras)}
    assert len(keys) == 3
    moved = loras[0].model_copy(update={"path": str(tmp_path / "elsewhere")})
    assert wrapped.cache_key(plain.model_copy(update={"adapter": moved})) == \
        wrapped.cache_key(plain.model_copy(update={"adapter": loras[0]}))
