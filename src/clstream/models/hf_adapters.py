"""Trained weights attached to an ``hf:`` model (docs/parametric.md §3).

A LoRA adapter (peft's directory layout) is loaded onto the model's own weights once per
adapter name, and a few stay loaded (:data:`LORA_SLOTS`, the least recently used one is
dropped first), so a run that answers with the same adapter for many requests reads its files
once. Loading injects LoRA layers into the model's linear modules; from then on a request
without an adapter is decoded with every adapter disabled, so the base model answers it exactly
as before any was loaded.

A full checkpoint (a whole fine-tuned model directory) is a model of its own: it is loaded as
another :class:`~clstream.models.hf.HFModel` with the same settings and decodes with the same
code; :data:`CHECKPOINT_SLOTS` of them are kept, least recently used dropped first.

Peft is the ``train`` extra: without it the backend serves full checkpoints only.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from clstream.core.types import Adapter

LORA_SLOTS = 4
CHECKPOINT_SLOTS = 2


class AdapterLoadError(Exception):
    """An adapter whose files cannot be attached to the model (one line, for the result)."""


def peft_available() -> bool:
    return importlib.util.find_spec("peft") is not None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


class LoraAdapters:
    """The LoRA adapters loaded onto one base model, and which one the next pass uses."""

    def __init__(self, model: Any, device: Any, slots: int = LORA_SLOTS):
        self._base = model
        self._device = device
        self._slots = slots
        self._peft: Any = None  # the PeftModel around ``model``, once an adapter was loaded
        self._loaded: OrderedDict[str, str] = OrderedDict()  # name -> path, oldest use first

    @property
    def loaded(self) -> tuple[str, ...]:
        """Names of the adapters held, least recently used first."""
        return tuple(self._loaded)

    def base(self) -> contextlib.AbstractContextManager[None]:
        """Within it, the model's forward passes are the base model's (adapters disabled)."""
        if self._peft is None:
            return contextlib.nullcontext()
        return self._disabled()

    @contextlib.contextmanager
    def _disabled(self) -> Iterator[None]:
        with self._peft.disable_adapter():
            yield

    def activate(self, adapter: Adapter) -> None:
        """Make ``adapter`` the one the model's forward passes apply (loading it when not
        held); raises :class:`AdapterLoadError`."""
        if adapter.name in self._loaded:
            self._loaded.move_to_end(adapter.name)
        else:
            self._load(adapter)
        try:
            self._peft.set_adapter(adapter.name)
        except (ValueError, KeyError) as exc:
            raise AdapterLoadError(first_line(exc)) from None
        while len(self._loaded) > self._slots:
            oldest, _ = self._loaded.popitem(last=False)
            self._peft.delete_adapter(oldest)

    def _load(self, adapter: Adapter) -> None:
        peft = importlib.import_module("peft")
        try:
            with warnings.catch_warnings():  # library deprecation notes, not the run's news
                warnings.simplefilter("ignore", FutureWarning)
                self._attach(peft, adapter)
        except AdapterLoadError:
            raise
        except Exception as exc:  # missing files, a config for another model, bad tensors
            raise AdapterLoadError(first_line(exc)) from None
        self._peft.to(self._device).eval()
        self._loaded[adapter.name] = adapter.path

    def _attach(self, peft: Any, adapter: Adapter) -> None:
        """Load ``adapter``'s LoRA weights onto the model (the first one wraps it)."""
        config = peft.PeftConfig.from_pretrained(adapter.path)
        if str(getattr(config, "peft_type", "")).upper().rsplit(".", 1)[-1] != "LORA":
            raise AdapterLoadError(f"not a LoRA adapter (peft type {config.peft_type})")
        if self._peft is None:
            self._peft = peft.PeftModel.from_pretrained(
                self._base, adapter.path, adapter_name=adapter.name)
        else:
            self._peft.load_adapter(adapter.path, adapter_name=adapter.name)


class Checkpoints:
    """Full fine-tuned checkpoints, each loaded as a model of its own by ``load(path)``."""

    def __init__(self, load: Callable[[str], Any], slots: int = CHECKPOINT_SLOTS):
        self._load = load
        self._slots = slots
        self._models: OrderedDict[str, Any] = OrderedDict()  # adapter name -> model

    @property
    def loaded(self) -> tuple[str, ...]:
        return tuple(self._models)

    def model(self, adapter: Adapter) -> Any:
        """The model of ``adapter``'s checkpoint; raises :class:`AdapterLoadError`."""
        if adapter.name in self._models:
            self._models.move_to_end(adapter.name)
            return self._models[adapter.name]
        while len(self._models) >= self._slots:  # free the memory before the next load
            self._models.popitem(last=False)
        try:
            model = self._load(adapter.path)
        except Exception as exc:  # a SpecError naming the directory, or a loading failure
            raise AdapterLoadError(first_line(exc)) from None
        self._models[adapter.name] = model
        return model
