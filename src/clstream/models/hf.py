"""``hf:<path>``: a causal language model run in-process with transformers, from local files only.

docs/design.md §8 asks that results never change with batch size or concurrency ("decoding seeds per
request"). ``model.generate`` draws every row from the global torch RNG, so a sample would depend
on what else shared its batch; this backend therefore runs its own decoding loop, in which
every sample owns a ``torch.Generator`` seeded from the request seed and the sample index.

Batching: one forward pass holds the samples of ONE request (at most ``batch_size`` rows). They
share the prompt, so it is prefilled once and its key/value cache copied per row, with no
padding. Float reductions depend on tensor shapes, so putting other requests' rows into the
same pass could flip a sampled token; keeping passes to one request makes a request's text
independent of its companions. ``mix_requests=True`` packs rows of several requests into one
left-padded pass (positions from the attention mask): faster on a GPU, but then a request's
text may change with its batch companions, so it is off by default.

Prompt: the tokenizer's chat template when it has one (``enable_thinking`` is passed to it when a
request sets ``thinking``), else :func:`render_plain`. Sampling (docs/oaks.md §2.3 parameters): a
temperature of 0 is greedy (the lowest token id wins a tie); otherwise logits / temperature,
then top-k, top-p (always keeping the best token), min-p (relative to the best probability),
and a draw from the sample's generator on the CPU. A sample ends with "stop" at an
end-of-sequence token or once its text contains a stop string (the text is cut before the
earliest one), with "length" after ``max_tokens`` or when ``max_model_len`` is reached.

Trained weights (docs/parametric.md §3): a request whose ``adapter`` is set is decoded with a
LoRA adapter attached to the model (peft, the ``train`` extra) or with a fine-tuned checkpoint
loaded as a model of its own (:mod:`clstream.models.hf_adapters`); the requests of one call are
split by adapter first, so weights never share a forward pass, and a request without one is
decoded by the base model, adapters disabled.

Usage is exact: prompt tokens are the rendered prompt's ids, counted once per request as
OpenAI-compatible servers do; completion tokens are all tokens generated over the samples (a
final end-of-sequence token included); reasoning tokens are those of a leading
``<think>...</think>`` block, which is moved out of the answer text.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from clstream.core.errors import SpecError
from clstream.core.params import Param
from clstream.core.specs import derive_seed
from clstream.core.types import (
    Adapter,
    GenerationRequest,
    GenerationResult,
    Message,
    Sample,
    SamplingParams,
    Usage,
)
from clstream.models.adapters import unserved_adapter
from clstream.models.hf_adapters import (
    AdapterLoadError,
    Checkpoints,
    LoraAdapters,
    peft_available,
)
from clstream.models.tokenizers import HFTokenizer
from clstream.models.wire import request_seed

BACKEND = "hf"
DTYPES = ("auto", "float32", "float16", "bfloat16")
_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


# -- helpers shared with the vLLM backend ------------------------------------------------------


def import_optional(module: str, extra: str) -> Any:
    """Import an optional dependency, or say which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SpecError(
            f"{module} is not installed: pip install 'clstream[{extra}]' ({exc})"
        ) from None


def reject_unknown(backend: str, unknown: dict[str, Any]) -> None:
    if unknown:
        raise SpecError(f"model {backend!r}: unknown argument(s) {', '.join(sorted(unknown))}")


def local_model_dir(backend: str, target: str) -> Path:
    """The model directory named by ``target``; never a hub id (nothing is downloaded)."""
    if not isinstance(target, str) or not target.strip():
        raise SpecError(f"model {backend!r}: give a local model directory, e.g. {backend}:/models/x")
    path = Path(target.strip()).expanduser()
    if not path.is_dir():
        raise SpecError(
            f"model '{backend}:{target}': {path} is not a local directory "
            "(models load from local files only, never from the hub)"
        )
    if not (path / "config.json").is_file():
        raise SpecError(f"model '{backend}:{target}': {path} has no config.json")
    return path.resolve()


@contextmanager
def quiet_loading(transformers: Any) -> Iterator[None]:
    """No progress bar while weights load: the command line prints its own progress."""
    logging = transformers.utils.logging
    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            logging.enable_progress_bar()


def config_fingerprint(path: Path) -> str:
    return hashlib.sha256((path / "config.json").read_bytes()).hexdigest()[:16]


def split_reasoning(text: str) -> tuple[str, str]:
    """(answer, reasoning): a leading ``<think>...</think>`` block is the reasoning."""
    m = _THINK.match(text)
    if m is None:
        return text, ""
    return text[m.end():], m.group(1).strip()


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` cut before the earliest stop string, and whether one was found."""
    hits = [at for at in (text.find(s) for s in stops if s) if at >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def render_plain(messages: Sequence[Message]) -> str:
    """The prompt for a tokenizer with no chat template: ``role: content`` blocks separated by
    blank lines, ending with ``assistant:`` for the model to continue."""
    return "".join(f"{m.role}: {m.content}\n\n" for m in messages) + "assistant:"


# -- decoding ----------------------------------------------------------------------------------


@dataclass
class _Row:
    """One sample being decoded."""

    request: int
    prompt: list[int]
    params: SamplingParams
    seed: int
    max_new: int
    tokens: list[int] = field(default_factory=list)
    finish: str | None = None


def choose_token(torch: Any, logits: Any, params: SamplingParams, generator: Any) -> int:
    """The next token of one row from its last-position logits (see module docstring)."""
    if params.temperature == 0:
        return int(torch.argmax(logits).item())
    x = logits.float().cpu() / params.temperature
    if 0 < params.top_k < x.shape[-1]:
        kth = torch.topk(x, params.top_k).values[-1]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if params.top_p < 1.0:
        ranked, order = torch.sort(probs, descending=True, stable=True)
        mass_before = torch.cumsum(ranked, dim=0) - ranked
        drop = mass_before >= params.top_p
        drop[0] = False
        probs[order[drop]] = 0.0
    if params.min_p > 0.0:
        probs = probs.masked_fill(probs < params.min_p * probs.max(), 0.0)
    return int(torch.multinomial(probs, 1, generator=generator).item())


class HFModel:
    """``hf:<path>``: transformers causal LM from a local directory, CPU or GPU."""

    summary: ClassVar[str] = ("hf:<path>: transformers from a local model directory, CPU or GPU "
                              "(extra: hf)")
    params: ClassVar[dict[str, Param]] = {
        "device": Param("auto", "torch device: auto (cuda when available), cpu, cuda, cuda:1, ..."),
        "dtype": Param("auto", "weights dtype (auto: float32 on CPU, the checkpoint's on GPU)",
                       choices=DTYPES),
        "batch_size": Param(8, "rows (samples of one request) per forward pass", minimum=1),
        "max_model_len": Param(None, "context length in tokens (default: from config.json)",
                               minimum=1, value_type=int),
        "mix_requests": Param(False, "pack several requests per pass: faster, but a text may "
                                     "then depend on its batch companions"),
    }

    def __init__(
        self,
        target: str,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        max_model_len: int | None = None,
        mix_requests: bool = False,
        **unknown: Any,
    ):
        reject_unknown(BACKEND, unknown)
        self.path = local_model_dir(BACKEND, target)
        self.name = f"{BACKEND}:{target.strip()}"
        if dtype not in DTYPES:
            raise SpecError(f"model {self.name!r}: dtype must be one of {', '.join(DTYPES)}")
        for key, value in (("batch_size", batch_size), ("max_model_len", max_model_len)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise SpecError(f"model {self.name!r}: {key} must be a whole number >= 1")
        if not isinstance(mix_requests, bool):
            raise SpecError(f"model {self.name!r}: mix_requests must be true or false")
        torch = self._torch = import_optional("torch", "hf")
        transformers = import_optional("transformers", "hf")
        self.device = self._pick_device(device)
        on_cpu = self.device.type == "cpu"
        load_dtype = "auto" if dtype == "auto" and not on_cpu else getattr(
            torch, "float32" if dtype == "auto" else dtype
        )
        try:
            self._tok = transformers.AutoTokenizer.from_pretrained(
                str(self.path), local_files_only=True
            )
            with quiet_loading(transformers):
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    str(self.path), local_files_only=True, dtype=load_dtype
                )
        except (OSError, ValueError, KeyError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SpecError(f"model {self.name!r}: cannot load {self.path}: {first}") from None
        self._model = model.to(self.device).eval()
        forward = inspect.signature(self._model.forward).parameters
        self._cache_argument = "cache" if "cache" in forward else "past_key_values"
        # The public tokenizer is a separate instance: systems count tokens on the event loop
        # while decoding runs in a worker thread, and a fast tokenizer must not be shared so.
        self.tokenizer = HFTokenizer(str(self.path))
        self.batch_size = batch_size
        self.mix_requests = mix_requests
        self.max_model_len = max_model_len or self._config_length()
        self.chat_template = bool(getattr(self._tok, "chat_template", None))
        self._eos = self._eos_ids()
        pad = self._tok.pad_token_id
        self._pad = pad if pad is not None else min(self._eos, default=0)
        self._lock = threading.Lock()
        # What a fine-tuned checkpoint is loaded with: this model's own settings.
        self._settings: dict[str, Any] = {
            "device": str(self.device), "dtype": dtype, "batch_size": batch_size,
            "max_model_len": max_model_len, "mix_requests": mix_requests,
        }
        self._lora = LoraAdapters(self._model, self.device)
        self._checkpoints = Checkpoints(self._load_checkpoint)

    def _load_checkpoint(self, path: str) -> HFModel:
        model = HFModel(path, **self._settings)
        model.name = self.name  # its errors speak for this model
        return model

    def adapter_kinds(self) -> tuple[str, ...]:
        """LoRA adapters where peft is installed (the ``train`` extra), full checkpoints
        always (docs/parametric.md §3)."""
        return ("lora", "full") if peft_available() else ("full",)

    def _pick_device(self, device: str) -> Any:
        torch = self._torch
        if device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            chosen = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise SpecError(f"model {self.name!r}: device {device!r}: {exc}") from None
        if chosen.type == "cuda" and not torch.cuda.is_available():
            raise SpecError(f"model {self.name!r}: device {device!r} but CUDA is not available")
        return chosen

    def _config_length(self) -> int | None:
        config = self._model.config
        for key in _LENGTH_KEYS:
            value = getattr(config, key, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def _eos_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        gen_config = getattr(self._model, "generation_config", None)
        for value in (getattr(gen_config, "eos_token_id", None), self._tok.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, list | tuple):
                ids.update(v for v in value if isinstance(v, int))
        return frozenset(ids)

    def describe(self) -> dict[str, Any]:
        transformers = importlib.import_module("transformers")
        return {
            "backend": BACKEND,
            "name": self.name,
            "path": str(self.path),
            "config_sha256": config_fingerprint(self.path),
            "device": str(self.device),
            "dtype": str(self._model.dtype).removeprefix("torch."),
            "batch_size": self.batch_size,
            "mix_requests": self.mix_requests,
            "max_model_len": self.max_model_len,
            "chat_template": self.chat_template,
            "tokenizer": self.tokenizer.name,
            "torch": self._torch.__version__,
            "transformers": transformers.__version__,
        }

    # -- prompts -------------------------------------------------------------------------------

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Prompt tokens of ``messages`` as usage counts them (chat template included), so a
        protocol can compare a prompt with the same question asked bare."""
        return len(self.prompt_ids(GenerationRequest(key="count", messages=tuple(messages))))

    def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """The token ids the model is fed for ``request``."""
        if not self.chat_template:
            text = render_plain(request.messages)
            return list(self._tok.encode(text, add_special_tokens=True, verbose=False))
        extra = {} if request.params.thinking is None else {
            "enable_thinking": request.params.thinking
        }
        text = self._tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in request.messages],
            tokenize=False, add_generation_prompt=True, **extra,
        )
        # The template already wrote any special tokens; encoding must not add them again.
        return list(self._tok.encode(text, add_special_tokens=False, verbose=False))

    # -- generation ----------------------------------------------------------------------------

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        batch = list(requests)
        if not batch:
            return []
        return await asyncio.to_thread(self.generate_sync, batch)

    def generate_sync(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Blocking generation; one model call at a time (a lock serializes callers)."""
        with self._lock, self._torch.inference_mode():
            return self._generate_locked(requests)

    def _rows(self, index: int, request: GenerationRequest) -> list[_Row]:
        prompt = self.prompt_ids(request)
        room = request.params.max_tokens
        if self.max_model_len is not None:
            room = min(room, self.max_model_len - len(prompt))
            if room < 1:
                raise ValueError(
                    f"prompt has {len(prompt)} tokens, no room under max_model_len "
                    f"{self.max_model_len}"
                )
        base = request_seed(request)
        return [
            _Row(index, prompt, request.params, derive_seed(base, "hf-sample", s), room)
            for s in range(request.params.n)
        ]

    def _generate_locked(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Results of ``requests``, decoded in groups of one adapter each (none: the base)."""
        groups: dict[Adapter | None, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(request.adapter, []).append(i)
        if list(groups) == [None]:
            with self._lora.base():
                return self._decode_requests(requests)
        results: list[GenerationResult | None] = [None] * len(requests)
        for adapter, members in groups.items():
            chosen = [requests[i] for i in members]
            for i, result in zip(members, self._with_adapter(adapter, chosen), strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    def _with_adapter(self, adapter: Adapter | None, requests: list[GenerationRequest]
                      ) -> list[GenerationResult]:
        """Results of ``requests``, which all carry ``adapter``."""
        if adapter is None:
            with self._lora.base():
                return self._decode_requests(requests)
        kinds = self.adapter_kinds()
        refused = [unserved_adapter(self.name, r, kinds) for r in requests]
        if refused[0] is not None:
            return [r for r in refused if r is not None]
        try:
            # Loading makes tensors that must be ordinary ones, not inference tensors.
            with self._torch.inference_mode(False):
                if adapter.kind == "full":
                    checkpoint: HFModel = self._checkpoints.model(adapter)
                else:
                    self._lora.activate(adapter)
        except AdapterLoadError as exc:
            why = f"cannot load {adapter.kind} adapter {adapter.name!r} from {adapter.path}: {exc}"
            return [self._error(r, why) for r in requests]
        if adapter.kind == "full":
            return checkpoint._decode_requests(requests)
        return self._decode_requests(requests)

    def _decode_requests(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Results of ``requests`` with the weights the model has in place now."""
        errors: dict[int, str] = {}
        rows: dict[int, list[_Row]] = {}
        for i, request in enumerate(requests):
            try:
                rows[i] = self._rows(i, request)
            except Exception as exc:  # a template or length problem fails this request only
                errors[i] = f"cannot build the prompt: {type(exc).__name__}: {exc}"
        latency = dict.fromkeys(rows, 0.0)
        for group in self._groups(rows):
            members = {row.request for row in group}
            start = time.perf_counter()
            try:
                self._decode(group)
            except (RuntimeError, ValueError) as exc:
                for i in members:
                    errors.setdefault(i, f"generation failed: {type(exc).__name__}: {exc}")
            for i in members:
                latency[i] += time.perf_counter() - start
        return [
            self._error(request, errors[i]) if i in errors
            else self._result(request, rows[i], latency[i])
            for i, request in enumerate(requests)
        ]

    def _groups(self, rows: dict[int, list[_Row]]) -> list[list[_Row]]:
        """Rows decoded together: slices of one request's samples, or of all rows when mixing."""
        size = self.batch_size
        runs = [[row for i in sorted(rows) for row in rows[i]]] if self.mix_requests else [
            rows[i] for i in sorted(rows)
        ]
        return [run[at: at + size] for run in runs for at in range(0, len(run), size)]

    def _forward(self, ids: Any, mask: Any, positions: Any, cache: Any = None) -> tuple[Any, Any]:
        # transformers 5 names the key/value cache ``cache`` (``past_key_values`` before).
        name = self._cache_argument
        out = self._model(input_ids=ids, attention_mask=mask, position_ids=positions,
                          use_cache=True, **{name: cache})
        return out.logits[:, -1, :], getattr(out, name)

    def _prefill(self, rows: list[_Row]) -> tuple[Any, Any, Any, Any]:
        """Last logits, cache, attention mask and next positions for ``rows``."""
        torch, device, n = self._torch, self.device, len(rows)
        if all(row.prompt == rows[0].prompt for row in rows):
            ids = torch.tensor([rows[0].prompt], device=device)
            mask = torch.ones_like(ids)
            positions = torch.arange(ids.shape[1], device=device)[None, :]
            logits, cache = self._forward(ids, mask, positions)
            if n > 1:
                cache.batch_repeat_interleave(n)
                logits, mask = logits.expand(n, -1), mask.expand(n, -1)
            return logits, cache, mask, torch.full((n, 1), ids.shape[1], device=device)
        width = max(len(row.prompt) for row in rows)
        ids = torch.tensor(
            [[self._pad] * (width - len(r.prompt)) + r.prompt for r in rows], device=device
        )
        mask = torch.tensor(
            [[0] * (width - len(r.prompt)) + [1] * len(r.prompt) for r in rows], device=device
        )
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits, cache = self._forward(ids, mask, positions)
        lengths = torch.tensor([[len(r.prompt)] for r in rows], device=device)
        return logits, cache, mask, lengths

    def _decode(self, rows: list[_Row]) -> None:
        """Decode ``rows`` together until each has finished; fills their tokens and finish."""
        torch = self._torch
        generators = [torch.Generator().manual_seed(row.seed) for row in rows]
        logits, cache, mask, positions = self._prefill(rows)
        active = list(range(len(rows)))
        while active:
            keep, feed = [], []
            for b, r in enumerate(active):
                row = rows[r]
                token = choose_token(torch, logits[b], row.params, generators[r])
                row.tokens.append(token)
                if token in self._eos or self._stopped(row):
                    row.finish = "stop"
                elif len(row.tokens) >= row.max_new:
                    row.finish = "length"
                else:
                    keep.append(b)
                    feed.append(token)
            if not keep:
                return
            if len(keep) < len(active):
                index = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(index)
                mask, positions = mask[index], positions[index]
                active = [active[b] for b in keep]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            ids = torch.tensor(feed, device=self.device)[:, None]
            logits, cache = self._forward(ids, mask, positions, cache)
            positions = positions + 1

    def _stopped(self, row: _Row) -> bool:
        """Whether the end of the row's text holds a stop string (checked on a short tail)."""
        stops = [s for s in row.params.stop if s]
        if not stops:
            return False
        # Every token adds at least one byte, and a character is at most 4 bytes.
        tail = row.tokens[-(4 * max(len(s) for s in stops) + 4):]
        text = self._tok.decode(tail, skip_special_tokens=True)
        return any(s in text for s in stops)

    def _count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False, verbose=False))

    def _sample(self, row: _Row) -> Sample:
        tokens = row.tokens
        if row.finish == "stop" and tokens and tokens[-1] in self._eos:
            tokens = tokens[:-1]
        text = self._tok.decode(tokens, skip_special_tokens=True)
        text, _ = cut_at_stop(text, row.params.stop)
        answer, reasoning = split_reasoning(text)
        return Sample(text=answer, reasoning=reasoning, finish_reason=row.finish)

    def _result(
        self, request: GenerationRequest, rows: list[_Row], latency: float
    ) -> GenerationResult:
        samples = [self._sample(row) for row in rows]
        completion = sum(len(row.tokens) for row in rows)
        reasoning = sum(self._count(s.reasoning) for s in samples if s.reasoning)
        usage = Usage(
            prompt_tokens=len(rows[0].prompt) if rows else 0,
            completion_tokens=completion,
            reasoning_tokens=min(reasoning, completion),
            latency_s=latency,
        )
        return GenerationResult(key=request.key, samples=samples, usage=usage, stage=request.stage)

    def _error(self, request: GenerationRequest, message: str) -> GenerationResult:
        line = " ".join(message.split())[:500]
        return GenerationResult(key=request.key, error=f"{self.name}: {line}", stage=request.stage)
