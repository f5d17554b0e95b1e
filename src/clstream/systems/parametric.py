"""Parametric memory: what the stream showed is trained into the weights, and questions are
answered with those weights and nothing in the prompt (docs/parametric.md; ImprintBench §4 and
App. C.2: NTP on the corpus, SFT on QA pairs, both, LoRA variants, self-distillation).

One class serves all four protocols. ``observe`` only turns events into training examples
(docs/parametric.md §2):

* a chunk (OAKS) or a corpus document (ImprintBench) is text for the next-token objective;
* an ImprintBench training pair (``Q: ...`` / ``A: ...``) is a question-answer pair, its
  source document (when the method read it) the self-distillation teacher's context;
* feedback (SeqMem-Eval) is the task, answer, outcome and feedback as text, and a solved task
  is also a pair (the task as asked, the accepted answer);
* an observation (CL-Bench) is the step (observation, action, outcome) as text, and a rewarded
  step is also a pair (the observation, the action taken).

Update points: every ``every`` units (an OAKS interval, a SeqMem task, a CL-Bench instance)
the examples gathered since the last update are trained, starting from the weights of that
update, so an update costs what was new and never retrains a prefix. ImprintBench trains once,
after the corpus (:meth:`finalize`), as the paper does; its probes inside a stream (PersonaMem
positions) train on what was read so far, and the probe's restore forgets that training. Which examples an objective uses: ``ntp`` texts, ``sft`` and ``sdft``
pairs, ``cq`` both in stream order.

Weights are stored content-addressed (:mod:`clstream.training.train`) in the run's artifact
folder, bound by the driver (:meth:`keep_artifacts_in`); a snapshot names them by that name
only, so a resumed run, an ImprintBench probe and SeqMem-Eval's re-evaluation of an earlier
step answer with the weights of that step. A training is reported as one result of stage
``train`` (tokens read as prompt tokens, wall time as latency, a reused artifact as a cache
hit), which the summary shows as the method's training cost apart from inference tokens.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from clstream.core import layout
from clstream.core.contracts import Artifact, adapter_kinds_of
from clstream.core.errors import SpecError
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.params import Param
from clstream.core.types import Adapter, GenerationResult, Message, Query, Response, Usage
from clstream.systems.base import MemorySystem, snapshot_error, snapshot_list
from clstream.training.data import Example, PairExample, TextExample
from clstream.training.recipe import Recipe
from clstream.training.train import TrainingRun, train

# One training at a time in a process: trainers share accelerate's process-wide state, and
# two at once on one device would only contend for it.
_TRAINING = threading.Lock()

Objective = Literal["ntp", "sft", "cq", "sdft"]
TRAIN_STAGE = "train"
_WHAT = {"ntp": "next-token training on the stream's text",
         "sft": "fine-tuning on the answers of question-answer pairs",
         "cq": "next-token training and answer fine-tuning, interleaved",
         "sdft": "self-distillation from a teacher that sees the source"}


def _recipe_params(lora: bool, objective: str) -> dict[str, Param]:
    lr = {"sdft": 1e-5}.get(objective, 5e-5 if lora else 1e-5)
    params = {
        "every": Param(1, "units (OAKS interval, SeqMem task, CL-Bench instance) between "
                          "updates; ImprintBench trains once, after the corpus", minimum=1),
        "lr": Param(lr, "peak learning rate (AdamW, cosine, no warm-up)", minimum=0.0,
                    value_type=float),
        "epochs": Param(2, "passes over each update's data", minimum=1),
        "batch": Param(64, "effective batch: examples per optimizer step", minimum=1),
        "micro_batch": Param(8, "examples per forward pass (gradient accumulation makes up "
                                "the batch)", minimum=1),
        "block": Param(512, "tokens per next-token training block", minimum=8),
        "weight_decay": Param(0.0, "AdamW weight decay", minimum=0.0, value_type=float),
        "clip": Param(1.0, "gradient norm clipping", minimum=0.0, value_type=float),
        "precision": Param("auto", "training dtype (auto: bfloat16 on a GPU that has it, "
                                   "else float32)", choices=("auto", "float32", "bfloat16")),
        "save_every": Param(20, "optimizer steps between checkpoints (resume after a kill)",
                            minimum=1),
        "base": Param("", "local directory of the base model to train (default: the run "
                          "model's own directory, for hf: and vllm:)"),
        "device": Param("auto", "training device: auto (cuda when available), cpu, cuda, ..."),
    }
    if lora:
        params |= {"r": Param(16, "LoRA rank", minimum=1),
                   "alpha": Param(32, "LoRA alpha", minimum=1),
                   "dropout": Param(0.1, "LoRA dropout", minimum=0.0, value_type=float)}
    if objective == "sdft":
        params |= {"topk": Param(100, "teacher tokens the reverse KL is taken over", minimum=1),
                   "max_new": Param(256, "tokens of each student answer", minimum=1)}
    return params


def _pair_of_text(text: str) -> tuple[str, str] | None:
    """(question, answer) of an ImprintBench training pair document (``Q: ...\\nA: ...``)."""
    if not text.startswith("Q: ") or "\nA: " not in text:
        return None
    question, answer = text[3:].split("\nA: ", 1)
    return question.strip(), answer.strip()


class ParametricMethod(MemorySystem):
    """Training at update points, answering with the trained weights (module docstring)."""

    objective: ClassVar[Objective]
    lora: ClassVar[bool]
    answers_with_weights: ClassVar[bool] = True
    train_weights: bool = True
    """False in a dry run (``clstream plan``, docs/plan.md §4): updates train nothing, and
    questions are answered by the base model."""

    def __init_subclass__(cls, objective: Objective, lora: bool, **kwargs: Any) -> None:
        """A method is an objective and a kind of weights; its summary and declared
        parameters follow from them."""
        super().__init_subclass__(**kwargs)
        cls.objective, cls.lora = objective, lora
        cls.summary = f"{_WHAT[objective]} ({'LoRA adapter' if lora else 'full weights'})"
        cls.params = _recipe_params(lora, objective)

    def _configure(self) -> None:
        for module in ("peft", "trl"):
            try:
                importlib.import_module(module)
            except ImportError:
                raise SpecError(f"system {self.name!r} trains weights: {module} is not "
                                "installed: pip install 'clstream[train]'") from None
        kind = "lora" if self.lora else "full"
        if kind not in adapter_kinds_of(self.model):
            raise SpecError(
                f"system {self.name!r} answers with trained {kind} weights, which model "
                f"{self.model.name!r} cannot serve (hf: serves LoRA and full checkpoints; "
                "vllm: LoRA with enable_lora=true; openai: LoRA with lora=true)")
        base = self.args["base"] or str(self.model.describe().get("path") or "")
        if not base:
            raise SpecError(f"system {self.name!r}: give base=<local directory of the model "
                            f"{self.model.name!r} serves> to train on")
        self.base = Path(base).expanduser()
        if not (self.base / "config.json").is_file():
            raise SpecError(f"system {self.name!r}: base {str(self.base)!r} is not a local "
                            "model directory (no config.json)")
        self.artifacts: Path | None = None

    def keep_artifacts_in(self, directory: str | Path) -> None:
        """Where trained weights are stored (the driver gives ``<results>/artifacts``)."""
        self.artifacts = Path(directory)

    def _empty(self) -> None:
        self.weights: Adapter | None = None
        self.pending: list[dict[str, Any]] = []  # examples since the last update, as JSON
        self.units = 0
        self.sources: dict[str, str] = {}  # corpus document id -> text (the SDFT context)

    def _described(self) -> dict[str, Any]:
        return {"objective": self.objective, "weights": "lora" if self.lora else "full",
                "base": str(self.base)}

    # --- observing -----------------------------------------------------------------------

    async def observe(self, event: Event) -> list[GenerationResult]:
        self.pending += self._examples(event)
        if isinstance(event, Chunk | Feedback) or (
                isinstance(event, Observation) and event.done):
            self.units += 1
        if self.units >= int(self.args["every"]):
            return await self._update()
        return []

    async def finalize(self) -> list[GenerationResult]:
        """ImprintBench: train what is left once the corpus is complete."""
        return await self._update()

    def _examples(self, event: Event) -> list[dict[str, Any]]:
        if isinstance(event, Chunk):
            if self.objective in ("sft", "sdft"):
                raise SpecError(f"system {self.name!r} learns from question-answer pairs, "
                                "and an OAKS chunk holds none: use ntp or cq")
            return [{"text": event.text}]
        if isinstance(event, Document):
            pair = _pair_of_text(event.text) if event.meta.get("kind") == "qa" else None
            if pair is None:
                if self.objective == "sdft":
                    self.sources[event.doc_id] = event.text
                return [{"text": event.text}]
            source = self.sources.get(str(event.meta.get("source_doc_id", "")), "")
            return [self._pair(event.doc_id, pair[0], pair[1], source)]
        if isinstance(event, Feedback):
            text = layout.experience_block(layout.Experience(
                event.query_text, event.answer, event.message, event.success))
            out: list[dict[str, Any]] = [{"text": text}]
            if event.success:
                out.append(self._pair(event.query_id, event.query_text, event.answer,
                                      event.message))
            return out
        step = layout.step_block("", event.step, event.query, event.action, event.text)
        out = [{"text": step}]
        if event.reward is not None and event.reward > 0 and event.action:
            out.append(self._pair(f"{event.instance_id}/{event.step}", event.query,
                                  event.action, event.text))
        return out

    @staticmethod
    def _pair(key: str, question: str, answer: str, context: str) -> dict[str, Any]:
        messages = layout.query_messages(Query(id=key, text=question), [])
        return {"messages": [[m.role, m.content] for m in messages], "answer": answer,
                "context": context}

    def _usable(self) -> list[Example]:
        texts = self.objective in ("ntp", "cq")
        pairs = self.objective in ("sft", "cq", "sdft")
        out: list[Example] = []
        for example in self.pending:
            if "text" in example and texts:
                out.append(TextExample(example["text"]))
            elif "answer" in example and pairs:
                messages = tuple(Message(role=r, content=c) for r, c in example["messages"])
                out.append(PairExample(messages, example["answer"], example["context"]))
        return out

    def recipe(self) -> Recipe:
        """The training recipe the arguments declare."""
        a = self.args
        extra: dict[str, Any] = {}
        if self.lora:
            extra |= {"r": a["r"], "alpha": a["alpha"], "dropout": float(a["dropout"])}
        if self.objective == "sdft":
            extra |= {"topk": a["topk"], "max_new": a["max_new"]}
        return Recipe(objective=self.objective, lora=self.lora, lr=float(a["lr"]),
                      epochs=a["epochs"], batch=a["batch"], micro_batch=a["micro_batch"],
                      block=a["block"], weight_decay=float(a["weight_decay"]),
                      clip=float(a["clip"]), precision=a["precision"],
                      save_every=a["save_every"], seed=self.seed, **extra)

    async def _update(self) -> list[GenerationResult]:
        examples = self._usable()
        self.pending, self.units = [], 0
        if not examples or not self.train_weights:
            return []
        if self.artifacts is None:
            raise SpecError(f"system {self.name!r}: no folder to keep trained weights in")
        run = await asyncio.to_thread(self._train, examples)
        self.weights = run.adapter
        usage = Usage(prompt_tokens=run.tokens, latency_s=run.seconds)
        return [GenerationResult(key=f"{TRAIN_STAGE}/{run.adapter.name}", usage=usage,
                                 stage=TRAIN_STAGE, cache_hit=run.reused)]

    def _train(self, examples: Sequence[Example]) -> TrainingRun:
        assert self.artifacts is not None
        with _TRAINING:
            return train(self.base, self.weights, examples, self.recipe(), self.artifacts,
                         device=self.args["device"])

    # --- answering -----------------------------------------------------------------------

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        requests = [self._seeded_request(q.id, layout.query_messages(q, []), stage="generate")
                    .model_copy(update={"adapter": self.weights}) for q in queries]
        with self._timed(timings := {"generate": 0.0}, "generate"):
            results = await self._generate(requests)
        return [Response(query_id=q.id, results=[r], timings=dict(timings))
                for q, r in zip(queries, results, strict=True)]

    @property
    def artifact(self) -> Artifact | None:
        """The weights answers use now, for the run's record (None: the base model)."""
        if self.weights is None:
            return None
        return Artifact(self.weights.path, self.weights.kind,
                        {"name": self.weights.name, "method": self.name,
                         "base": str(self.base)})

    # --- snapshots -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        weights = None if self.weights is None else {"name": self.weights.name,
                                                     "kind": self.weights.kind}
        return self._enveloped({"weights": weights, "pending": list(self.pending),
                                "units": self.units, "sources": dict(self.sources)})

    def restore(self, state: dict[str, Any]) -> None:
        memory = self._opened(state)
        self._empty()
        self.pending = [dict(e) for e in snapshot_list(memory, "pending", "examples")]
        units, sources = memory.get("units"), memory.get("sources", {})
        if isinstance(units, bool) or not isinstance(units, int) or units < 0:
            raise snapshot_error("units", "expected a whole number >= 0")
        if not isinstance(sources, dict):
            raise snapshot_error("sources", "expected an object of document texts")
        self.units, self.sources = units, {str(k): str(v) for k, v in sources.items()}
        weights = memory.get("weights")
        if weights is None:
            return
        if not isinstance(weights, dict) or not isinstance(weights.get("name"), str):
            raise snapshot_error("weights", "expected {name, kind} or null")
        if self.artifacts is None:
            raise snapshot_error("weights", "no artifact folder to find the weights in")
        path = self.artifacts / weights["name"]
        if not path.is_dir():
            raise snapshot_error("weights", f"weights {weights['name']} are not in "
                                            f"{self.artifacts}")
        self.weights = Adapter(name=weights["name"], path=str(path),
                               kind="lora" if self.lora else "full")


class Ntp(ParametricMethod, objective="ntp", lora=False):
    name = "ntp"


class Sft(ParametricMethod, objective="sft", lora=False):
    name = "sft"


class Cq(ParametricMethod, objective="cq", lora=False):
    name = "cq"


class Sdft(ParametricMethod, objective="sdft", lora=False):
    name = "sdft"


class LoraNtp(ParametricMethod, objective="ntp", lora=True):
    name = "lora-ntp"


class LoraSft(ParametricMethod, objective="sft", lora=True):
    name = "lora-sft"


class LoraCq(ParametricMethod, objective="cq", lora=True):
    name = "lora-cq"


class LoraSdft(ParametricMethod, objective="sdft", lora=True):
    name = "lora-sdft"
