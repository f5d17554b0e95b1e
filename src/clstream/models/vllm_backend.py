"""``vllm:<path>``: vLLM's offline engine in-process, from a local model directory.

docs/design.md §3.2 recommends talking to model servers over the OpenAI-compatible API
(:mod:`clstream.models.openai_compat`) for scale; this backend is for one machine with a GPU
and no server: ``LLM.chat`` renders each request with the model's chat template and the
engine batches everything it is given, with prefix caching on so the questions of one interval
share the cost of their common context.

Each request carries its own ``SamplingParams(n, temperature, top_p, top_k, min_p,
max_tokens, seed, stop)``; the seed is the request's own (``params.seed``, else derived from its
key, :func:`clstream.models.wire.request_seed`), so sampling never depends on which requests
share a call. The engine's float arithmetic does depend on batch shape, which vLLM does not
pin down; that caveat applies to any vLLM run.

``thinking`` is passed as ``chat_template_kwargs={"enable_thinking": ...}``; requests are grouped
by that value because the engine takes one set of template arguments per call. Usage comes from
the request outputs: prompt tokens = the prompt's token ids, cached tokens = the engine's prefix
cache hits where it reports them, completion tokens = the generated token ids of all samples.

Trained weights (docs/parametric.md §3): with ``enable_lora`` the engine is started with LoRA
support (``max_lora_rank`` bounds the adapters' rank) and a request carrying a LoRA adapter is
sent with ``lora_request=LoRARequest(name, id, path)``, the id fixed per adapter name for the
life of the model object. Requests are grouped by adapter as well as by thinking, one
``LoRARequest`` per call. Without ``enable_lora`` a request with an adapter is an error result.

When a call fails (for example a prompt longer than ``max_model_len``), its requests are retried
one at a time so only the faulty one becomes an error result.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from clstream.core.errors import SpecError
from clstream.core.params import Param
from clstream.core.types import Adapter, GenerationRequest, GenerationResult, Sample, Usage
from clstream.models.adapters import unserved_adapter
from clstream.models.hf import (
    config_fingerprint,
    import_optional,
    local_model_dir,
    reject_unknown,
    split_reasoning,
)
from clstream.models.tokenizers import HFTokenizer
from clstream.models.wire import request_seed

BACKEND = "vllm"


def _number(name: str, value: Any, low: float, high: float | None, integer: bool) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise SpecError(f"model {BACKEND!r}: {name} must be a {'whole ' if integer else ''}number")
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise SpecError(f"model {BACKEND!r}: {name} must be {bound}, got {value}")


class VLLMModel:
    """``vllm:<path>``: ``vllm.LLM`` over a local directory, one engine per model object."""

    summary: ClassVar[str] = ("vllm:<path>: vLLM's offline engine with prefix caching, from a "
                              "local model directory (extra: vllm)")
    params: ClassVar[dict[str, Param]] = {
        "max_model_len": Param(None, "context length in tokens (default: the engine's)",
                               minimum=1, value_type=int),
        "gpu_memory_utilization": Param(0.9, "fraction of GPU memory the engine may take "
                                             "(at most 1)", minimum=0.01,
                                        maximum=1.0),
        "tensor_parallel_size": Param(1, "GPUs the model is split across", minimum=1),
        "dtype": Param("auto", "weights dtype, as vLLM names it (auto, bfloat16, float16, ...)"),
        "enable_prefix_caching": Param(True, "reuse the KV cache of shared prompt prefixes"),
        "enable_lora": Param(False, "start the engine with LoRA support, so requests can carry "
                                    "LoRA adapters", recorded_at_default=False),
        "max_lora_rank": Param(64, "largest LoRA rank served (with enable_lora)", minimum=1,
                               recorded_at_default=False),
    }

    def __init__(
        self,
        target: str,
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        enable_prefix_caching: bool = True,
        enable_lora: bool = False,
        max_lora_rank: int = 64,
        **unknown: Any,
    ):
        reject_unknown(BACKEND, unknown)
        self.path = local_model_dir(BACKEND, target)
        self.name = f"{BACKEND}:{target.strip()}"
        if max_model_len is not None:
            _number("max_model_len", max_model_len, 1, None, integer=True)
        _number("gpu_memory_utilization", gpu_memory_utilization, 0.01, 1.0, integer=False)
        _number("tensor_parallel_size", tensor_parallel_size, 1, None, integer=True)
        if not isinstance(dtype, str) or not dtype:
            raise SpecError(f"model {self.name!r}: dtype must be a name such as auto or bfloat16")
        if not isinstance(enable_lora, bool):
            raise SpecError(f"model {self.name!r}: enable_lora must be true or false")
        _number("max_lora_rank", max_lora_rank, 1, None, integer=True)
        vllm = import_optional("vllm", "vllm")
        self._vllm = vllm
        self.settings: dict[str, Any] = {
            "max_model_len": max_model_len,
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "tensor_parallel_size": tensor_parallel_size,
            "dtype": dtype,
            "enable_prefix_caching": bool(enable_prefix_caching),
        }
        if enable_lora:  # recorded only when on, so other runs describe themselves as before
            self.settings.update(enable_lora=True, max_lora_rank=max_lora_rank)
        self._lora_ids: dict[str, int] = {}
        # A local path needs nothing from the hub; make sure nothing is fetched either.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        engine_args = {k: v for k, v in self.settings.items() if v is not None}
        self._llm = vllm.LLM(model=str(self.path), tokenizer=str(self.path), **engine_args)
        # Own instance: vLLM templates prompts in the calling (worker) thread, while systems
        # count tokens on the event loop, and a fast tokenizer must not be shared across both.
        self.tokenizer = HFTokenizer(str(self.path))
        self._lock = threading.Lock()

    def adapter_kinds(self) -> tuple[str, ...]:
        """LoRA adapters when the engine was started with LoRA support."""
        return ("lora",) if self.settings.get("enable_lora") else ()

    def lora_request(self, adapter: Adapter) -> Any:
        """The engine's ``LoRARequest`` of ``adapter``: its integer id is the same for every
        request naming it, and new for every other name."""
        lora_id = self._lora_ids.setdefault(adapter.name, len(self._lora_ids) + 1)
        module = import_optional("vllm.lora.request", "vllm")
        return module.LoRARequest(adapter.name, lora_id, adapter.path)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": BACKEND,
            "name": self.name,
            "path": str(self.path),
            "config_sha256": config_fingerprint(self.path),
            **self.settings,
            "tokenizer": self.tokenizer.name,
            "vllm": getattr(self._vllm, "__version__", "unknown"),
        }

    def sampling_params(self, request: GenerationRequest) -> Any:
        """The engine's ``SamplingParams`` for ``request``."""
        p = request.params
        return self._vllm.SamplingParams(
            n=p.n,
            temperature=p.temperature,
            top_p=p.top_p,
            top_k=p.top_k if p.top_k > 0 else -1,  # -1 (all tokens) is accepted by every version
            min_p=p.min_p,
            max_tokens=p.max_tokens,
            seed=request_seed(request),
            stop=[s for s in p.stop if s] or None,
        )

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        batch = list(requests)
        if not batch:
            return []
        return await asyncio.to_thread(self.generate_sync, batch)

    def generate_sync(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Blocking generation; one engine call at a time."""
        results: list[GenerationResult | None] = [None] * len(requests)
        groups: dict[tuple[bool | None, Adapter | None], list[int]] = {}
        kinds = self.adapter_kinds()
        for i, request in enumerate(requests):
            results[i] = unserved_adapter(self.name, request, kinds)
            if results[i] is None:
                groups.setdefault((request.params.thinking, request.adapter), []).append(i)
        with self._lock:
            for (thinking, adapter), members in groups.items():
                answers = self._call(requests, members, thinking, adapter)
                for i, result in zip(members, answers, strict=True):
                    results[i] = result
        return [r for r in results if r is not None]

    def _call(
        self, requests: Sequence[GenerationRequest], members: list[int], thinking: bool | None,
        adapter: Adapter | None = None,
    ) -> list[GenerationResult]:
        chosen = [requests[i] for i in members]
        kwargs: dict[str, Any] = {"use_tqdm": False}
        if thinking is not None:
            kwargs["chat_template_kwargs"] = {"enable_thinking": thinking}
        if adapter is not None:
            kwargs["lora_request"] = self.lora_request(adapter)
        start = time.perf_counter()
        try:
            outputs = self._llm.chat(
                [[{"role": m.role, "content": m.content} for m in r.messages] for r in chosen],
                sampling_params=[self.sampling_params(r) for r in chosen],
                **kwargs,
            )
        except (RuntimeError, ValueError) as exc:
            if len(chosen) == 1:
                return [self._error(chosen[0], f"{type(exc).__name__}: {exc}")]
            return [r for i in members for r in self._call(requests, [i], thinking, adapter)]
        elapsed = (time.perf_counter() - start) / len(chosen)
        if len(outputs) != len(chosen):
            message = f"engine returned {len(outputs)} outputs for {len(chosen)} requests"
            return [self._error(r, message) for r in chosen]
        return [self._result(r, out, elapsed) for r, out in zip(chosen, outputs, strict=True)]

    def _result(self, request: GenerationRequest, output: Any, latency: float) -> GenerationResult:
        completions = sorted(output.outputs, key=lambda c: c.index)
        if len(completions) != request.params.n:
            message = f"expected {request.params.n} samples, got {len(completions)}"
            return self._error(request, message)
        samples = []
        for completion in completions:
            text, reasoning = split_reasoning(completion.text)
            samples.append(Sample(text=text, reasoning=reasoning,
                                  finish_reason=completion.finish_reason))
        prompt = len(output.prompt_token_ids or ())
        completion_tokens = sum(len(c.token_ids) for c in completions)
        reasoning_tokens = sum(self._count(s.reasoning) for s in samples if s.reasoning)
        cached = getattr(output, "num_cached_tokens", None)
        usage = Usage(
            prompt_tokens=prompt,
            cached_tokens=min(cached, prompt) if isinstance(cached, int) and cached > 0 else 0,
            completion_tokens=completion_tokens,
            reasoning_tokens=min(reasoning_tokens, completion_tokens),
            latency_s=latency,
        )
        return GenerationResult(key=request.key, samples=samples, usage=usage, stage=request.stage)

    def _count(self, text: str) -> int:
        """Tokens of ``text`` with the engine's tokenizer (used only under the lock)."""
        return len(self._llm.get_tokenizer().encode(text, add_special_tokens=False))

    def _error(self, request: GenerationRequest, message: str) -> GenerationResult:
        line = " ".join(message.split())[:500]
        return GenerationResult(key=request.key, error=f"{self.name}: {line}", stage=request.stage)
