"""VLLMModel: the missing-package error, and the mapping to and from a stand-in ``vllm`` module.

vLLM needs a CUDA GPU, so the engine is replaced by a small fake with the same call surface
(``LLM(model=...)``, ``LLM.chat(conversations, sampling_params=[...], ...)``, ``RequestOutput``
with ``prompt_token_ids``, ``num_cached_tokens`` and ``outputs[i].token_ids``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import SpecError
from clstream.core.specs import derive_seed
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.vllm_backend import VLLMModel


class FakeSamplingParams:
    def __init__(self, **kwargs: Any):
        self.__dict__.update(kwargs)


class FakeLLM:
    """Echoes: sample i of a request is '<think>r</think>answer-i' with i+1 token ids."""

    instances: list[FakeLLM] = []

    def __init__(self, model: str, **kwargs: Any):
        from transformers import AutoTokenizer

        self.model, self.kwargs = model, kwargs
        self.calls: list[dict[str, Any]] = []
        self._tok = AutoTokenizer.from_pretrained(model, local_files_only=True)
        FakeLLM.instances.append(self)

    def get_tokenizer(self) -> Any:
        return self._tok

    def chat(self, conversations: list[list[dict[str, str]]], sampling_params: list[Any],
             **kwargs: Any) -> list[Any]:
        self.calls.append({"conversations": conversations, "params": sampling_params, **kwargs})
        if any("TOO LONG" in m["content"] for c in conversations for m in c):
            raise ValueError("prompt is longer than max_model_len")
        outputs = []
        for conversation, params in zip(conversations, sampling_params, strict=True):
            samples = [
                types.SimpleNamespace(index=i, text=f"<think>mary went</think>answer-{i}",
                                      token_ids=list(range(i + 1)), finish_reason="stop")
                for i in range(params.n)
            ]
            outputs.append(types.SimpleNamespace(
                prompt_token_ids=list(range(10 * len(conversation))),
                num_cached_tokens=4,
                outputs=list(reversed(samples)),  # the engine's order is not guaranteed
            ))
        return outputs


@pytest.fixture()
def model_dir(tmp_path: Path) -> Path:
    transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install 'clstream[hf]'")
    tokenizers = pytest.importorskip("tokenizers", reason="needs the hf extra: pip install 'clstream[hf]'")
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["mary went to the garden"],
                            trainers.WordLevelTrainer(special_tokens=["<unk>"]))
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(
        tmp_path
    )
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    return tmp_path


@pytest.fixture()
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM  # type: ignore[attr-defined]
    module.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    module.__version__ = "0.0-fake"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the backend sets it; restored after the test
    FakeLLM.instances.clear()
    return module


def req(key: str, text: str = "where is mary", **params: Any) -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=text),),
                             params=SamplingParams(**params))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_names_the_extra(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SpecError, match=r"vllm is not installed: pip install 'clstream\[vllm\]'"):
        VLLMModel(str(tmp_path))


def test_path_and_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="missing-dir.*not a local directory"):
        VLLMModel(str(tmp_path / "missing-dir"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SpecError, match="unknown argument.*max_concurrency"):
        VLLMModel(str(tmp_path), max_concurrency=3)
    with pytest.raises(SpecError, match="gpu_memory_utilization"):
        VLLMModel(str(tmp_path), gpu_memory_utilization=1.5)
    with pytest.raises(SpecError, match="tensor_parallel_size"):
        VLLMModel(str(tmp_path), tensor_parallel_size=0)


def test_engine_settings_and_sampling_params(fake_vllm: types.ModuleType, model_dir: Path) -> None:
    model = VLLMModel(str(model_dir), max_model_len=2048, gpu_memory_utilization=0.5)
    llm = FakeLLM.instances[-1]
    assert llm.model == str(model_dir.resolve())
    assert llm.kwargs["enable_prefix_caching"] is True and llm.kwargs["max_model_len"] == 2048
    assert llm.kwargs["gpu_memory_utilization"] == 0.5
    seeded = model.sampling_params(req("a", seed=11, top_k=0, stop=("", "##"), n=3))
    assert (seeded.seed, seeded.top_k, seeded.stop, seeded.n) == (11, -1, ["##"], 3)
    unseeded = model.sampling_params(req("b", seed=None, top_k=20, max_tokens=7))
    assert unseeded.seed == derive_seed(0, "b") and unseeded.top_k == 20
    assert unseeded.max_tokens == 7 and unseeded.stop is None
    assert (unseeded.temperature, unseeded.top_p, unseeded.min_p) == (0.7, 0.8, 0.0)
    info = model.describe()
    assert info["backend"] == "vllm" and info["vllm"] == "0.0-fake"
    assert model.tokenizer.exact and model.tokenizer.count("mary went") == 2


def test_results_usage_and_thinking_groups(fake_vllm: types.ModuleType, model_dir: Path) -> None:
    model = VLLMModel(str(model_dir))
    requests = [req("a", n=2), req("b", thinking=False), req("c", n=1), req("d", thinking=True)]
    results = asyncio.run(model.generate(requests))
    assert [r.key for r in results] == ["a", "b", "c", "d"]
    a = results[0]
    assert [s.text for s in a.samples] == ["answer-0", "answer-1"]
    assert all(s.reasoning == "mary went" for s in a.samples)
    assert a.usage.prompt_tokens == 10 and a.usage.cached_tokens == 4
    assert a.usage.completion_tokens == 1 + 2 and a.usage.reasoning_tokens == 3
    calls = FakeLLM.instances[-1].calls
    assert len(calls) == 3  # one engine call per thinking setting
    by_kwargs = {str(c.get("chat_template_kwargs")): len(c["conversations"]) for c in calls}
    assert by_kwargs == {"None": 2, "{'enable_thinking': False}": 1,
                         "{'enable_thinking': True}": 1}
    assert all(c["use_tqdm"] is False for c in calls)


def test_a_failing_request_fails_alone(fake_vllm: types.ModuleType, model_dir: Path) -> None:
    model = VLLMModel(str(model_dir))
    results = model.generate_sync([req("ok1"), req("bad", text="TOO LONG"), req("ok2")])
    assert [r.ok for r in results] == [True, False, True]
    error = results[1].error
    assert error is not None and error.startswith(f"vllm:{model_dir}") and "max_model_len" in error
    assert results[0].samples[0].text == "answer-0"
