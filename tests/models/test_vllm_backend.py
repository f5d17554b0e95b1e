"""VLLMModel: the missing-package error, and the mapping to and from a stand-in ``vllm`` module.

vLLM needs a CUDA GPU, so the engine is replaced by a small fake with the same call surface
(``LLM(model=...)``, ``LLM.chat(conversations, sampling_params=[...], ...)``, ``RequestOutput``
with ``prompt_token_ids``, ``num_cached_tokens`` and ``outputs[i].token_ids``, and
``vllm.lora.request.LoRARequest(name, id, path)``).
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
from clstream.core.types import Adapter, GenerationRequest, Message, SamplingParams
from clstream.models.vllm_backend import VLLMModel


class FakeSamplingParams:
    def __init__(self, **kwargs: Any):
        self.__dict__.update(kwargs)


class FakeLoRARequest:
    def __init__(self, lora_name: str, lora_int_id: int, lora_path: str):
        self.lora_name, self.lora_int_id, self.lora_path = lora_name, lora_int_id, lora_path


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
    lora, request = types.ModuleType("vllm.lora"), types.ModuleType("vllm.lora.request")
    request.LoRARequest = FakeLoRARequest  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm.lora", lora)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)
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


def test_lora_requests_go_one_adapter_per_call(fake_vllm: types.ModuleType,
                                               model_dir: Path) -> None:
    model = VLLMModel(str(model_dir), enable_lora=True, max_lora_rank=32)
    llm = FakeLLM.instances[-1]
    assert llm.kwargs["enable_lora"] is True and llm.kwargs["max_lora_rank"] == 32
    assert model.adapter_kinds() == ("lora",) and model.describe()["enable_lora"] is True
    one = Adapter(name="clstream-one", path="/store/one", kind="lora")
    two = Adapter(name="clstream-two", path="/store/two", kind="lora")
    full = Adapter(name="clstream-full", path="/store/full", kind="full")
    requests = [req("a").model_copy(update={"adapter": one}), req("b"),
                req("c").model_copy(update={"adapter": two}),
                req("d").model_copy(update={"adapter": one}),
                req("e").model_copy(update={"adapter": full})]
    results = model.generate_sync(requests)
    assert [r.ok for r in results] == [True, True, True, True, False]
    assert "cannot answer with full adapter 'clstream-full'" in (results[4].error or "")
    sent = {(c["lora_request"].lora_name if "lora_request" in c else None):
            (c["lora_request"].lora_int_id if "lora_request" in c else None,
             len(c["conversations"])) for c in llm.calls}
    assert sent == {"clstream-one": (1, 2), None: (None, 1), "clstream-two": (2, 1)}
    assert len(llm.calls) == 3
    model.generate_sync([req("f").model_copy(update={"adapter": two})])
    again = llm.calls[-1]["lora_request"]
    assert (again.lora_int_id, again.lora_path) == (2, "/store/two")  # the id stays per name


def test_without_enable_lora_an_adapter_is_an_error(fake_vllm: types.ModuleType,
                                                    model_dir: Path) -> None:
    model = VLLMModel(str(model_dir))
    llm = FakeLLM.instances[-1]
    assert "enable_lora" not in llm.kwargs and "enable_lora" not in model.describe()
    assert model.adapter_kinds() == ()
    lora = Adapter(name="clstream-one", path="/store/one")
    bad, good = model.generate_sync([req("a").model_copy(update={"adapter": lora}), req("b")])
    assert not bad.ok and (bad.error or "").startswith(f"vllm:{model_dir}: cannot answer with "
                                                       "lora adapter 'clstream-one'")
    assert good.ok and len(llm.calls) == 1 and "lora_request" not in llm.calls[0]


def test_lora_settings_leave_the_spec_as_it_was_at_their_defaults() -> None:
    from clstream.core.registry import canonical_component
    from clstream.core.specs import parse_model_spec

    def args(model_args: str | None) -> dict[str, Any]:
        return dict(canonical_component("model", parse_model_spec("vllm:/m", model_args)).args)

    before = args(None)
    assert "enable_lora" not in before and "max_lora_rank" not in before
    assert args("enable_lora=false,max_lora_rank=64") == before
    assert args("enable_lora=true") == {**before, "enable_lora": True}
    with pytest.raises(SpecError, match="max_lora_rank"):
        args("max_lora_rank=0")
