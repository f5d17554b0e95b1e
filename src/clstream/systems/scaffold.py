"""Memory scaffold (ImprintBench §3.1 "Memory", Tables 1-3, 12; docs/imprint.md §8 "Memory Scaffold"): a
MemGPT-style core memory with three sections -- Active, Superseded, Uncertain -- that the model
rewrites after every document, under a token budget; questions are answered from it alone.

* Budget: B = corpus tokens observed so far / ``ratio`` (the paper: 32 or 64), counted with the
  evaluated model's tokenizer, or a fixed ``budget``; never below ``min_budget``. The paper's B
  is the *total* corpus over the ratio, known only once the corpus is complete; a system reading
  a stream knows the tokens so far, so B grows with the corpus and reaches the paper's value at
  its last document. ``budget`` gives the paper's constant B when the corpus size is known
  (corpus tokens / ratio). ``min_budget`` keeps the first documents from getting a budget of a
  few tokens.
* Update: one call per observed event (stage ``update``), in order, showing the current memory,
  the new document and B, asking for the whole memory back between ``<memory>`` tags with the
  three headings; at most min(2B, 8192) completion tokens (Table 12). The updater is the
  system's own model unless ``updater`` names another (a model spec, with ``updater_options``
  as the chunked summary's summarizer; the paper used an API model).
* A reply is read by :func:`clstream.systems.corpus_prompts.parse_scaffold`. A reply lacking a
  section never breaks the run: the problem is logged and, with ``fallback=keep``, the previous
  memory stays; with ``fallback=append`` (default) the previous memory stays and the document is
  appended to Active as one line (its title and date, then its sentences), the oldest Active
  lines dropped (and the new line cut) to fit B. That fallback is **not the method**: it is a
  mechanical stand-in, so that a model that cannot rewrite (the builtin reader answers every
  prompt as a question) still leaves a usable memory; its calls carry the stage
  ``update-fallback`` and the update log says ``fallback``, so they can be counted and excluded.
  A failed call (an error) changes nothing, not even the token count, so the event can be
  observed again.
* Answering: the memory, under a header, then the question; no documents.

The snapshot holds the memory, the token count and the update log (one entry per event:
status ``rewritten`` / ``fallback`` / ``kept``, the problem, the memory's tokens and B), so a
resumed run never repeats an update call.
"""

from __future__ import annotations

from typing import Any, ClassVar

from clstream.core.contracts import Tokenizer
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Query
from clstream.systems import corpus_prompts
from clstream.systems.base import snapshot_error, staged
from clstream.systems.chunked_summary import (
    SAME_MODEL,
    document_parts,
    helper_model,
    truncate_right,
)
from clstream.systems.oracle import InContextMethod
from clstream.systems.passages import passage_of

MAX_COMPLETION = 8192  # cap on one rewrite's completion tokens (Table 12)
FALLBACKS = ("append", "keep")
STATUSES = ("rewritten", "fallback", "kept")
FALLBACK_STAGE = "update-fallback"


def empty_memory() -> dict[str, list[str]]:
    return {name: [] for name in corpus_prompts.SECTIONS}


def fit_budget(sections: dict[str, list[str]], budget: int, tokenizer: Tokenizer
               ) -> dict[str, list[str]]:
    """``sections`` within ``budget`` tokens: the oldest Active lines dropped first, then the
    newest one cut (its start kept) when it alone is too long. Superseded and Uncertain lines
    are left as they are."""
    out = {name: list(lines) for name, lines in sections.items()}
    active = out["Active"]

    def cost() -> int:
        return tokenizer.count(corpus_prompts.render_scaffold(out))

    while len(active) > 1 and cost() > budget:
        active.pop(0)
    if active and cost() > budget:
        last = active.pop()
        room = budget - cost() - 1
        cut = truncate_right(last, room, tokenizer) if room > 0 else ""
        if cut:
            active.append(cut)
    return out


def document_line(text: str) -> str:
    """A document as one memory line: its heading (title and date) and its sentences."""
    heading, sentences = document_parts(text)
    body = " ".join(sentences)
    return f"{heading}: {body}" if heading and body else heading or body


class MemoryScaffold(InContextMethod):
    """A core memory (Active / Superseded / Uncertain) rewritten after every document."""

    name = "scaffold"
    summary = "a core memory (active / superseded / uncertain) rewritten after every document"
    params: ClassVar[dict[str, Param]] = {
        "ratio": Param(32, "budget = corpus tokens so far / ratio (the paper: 32, 64)",
                       minimum=1),
        "budget": Param(0, "a fixed budget in tokens instead of the ratio (0: use the ratio)",
                        minimum=0),
        "min_budget": Param(256, "the smallest budget a rewrite gets", minimum=1),
        "fallback": Param("append", "when a reply has no usable memory: append the document "
                          "under Active (a labelled stand-in) or keep the memory",
                          choices=FALLBACKS),
        "updater": Param(SAME_MODEL, "model rewriting the memory: 'same' = the system's model, or a model "
                         "spec (openai:<name>)"),
        "updater_options": Param("", "backend settings of the updater model, key=value "
                                 "separated by ';'"),
    }
    replayable: ClassVar[bool] = False

    def _configure(self) -> None:
        self.updater = helper_model(self.args["updater"], self.args["updater_options"],
                                    self.model, f"system {self.name!r} updater")

    # --- memory ----------------------------------------------------------------------------

    def _empty(self) -> None:
        self.memory = empty_memory()
        self.corpus_tokens = 0
        self.log: list[dict[str, Any]] = []

    def budget_for(self, corpus_tokens: int) -> int:
        fixed = self.args["budget"]
        derived: int = fixed if fixed > 0 else corpus_tokens // self.args["ratio"]
        least: int = self.args["min_budget"]
        return max(least, derived)

    async def observe(self, event: Event) -> list[GenerationResult]:
        passage = passage_of(event, len(self.log))
        tokenizer = self.model.tokenizer
        corpus_tokens = self.corpus_tokens + tokenizer.count(passage.text)
        budget = self.budget_for(corpus_tokens)
        key = f"scaffold/{len(self.log) + 1}"
        request = self._seeded_request(
            key, corpus_prompts.scaffold_messages(self.memory, passage.text, budget),
            stage="update", n=1, max_tokens=min(2 * budget, MAX_COMPLETION))
        (result,) = await self.updater.generate([request])
        if not result.ok or not result.samples:
            return [staged(result, "update")]
        parsed = corpus_prompts.parse_scaffold(result.samples[0].text)
        stage = "update"
        if parsed.sections is not None:
            status, memory = "rewritten", parsed.sections
        elif self.args["fallback"] == "append":
            status, stage = "fallback", FALLBACK_STAGE
            grown = {name: list(lines) for name, lines in self.memory.items()}
            line = document_line(passage.text)
            if line:
                grown["Active"].append(line)
            memory = fit_budget(grown, budget, tokenizer)
        else:
            status, memory = "kept", self.memory
        self.memory, self.corpus_tokens = memory, corpus_tokens
        self.log.append({"source": passage.source, "status": status, "problem": parsed.problem,
                         "tokens": tokenizer.count(corpus_prompts.render_scaffold(memory)),
                         "budget": budget})
        return [staged(result, stage)]

    def text(self) -> str:
        """The memory as shown (the three headed sections)."""
        return corpus_prompts.render_scaffold(self.memory)

    # --- answering -------------------------------------------------------------------------

    def _sections(self, query: Query) -> list[str]:
        if corpus_prompts.scaffold_is_empty(self.memory):
            return []
        return [f"{corpus_prompts.SCAFFOLD_HEADER}\n{self.text().strip()}\n"]

    # --- snapshots -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {"memory": {name: list(lines) for name, lines in self.memory.items()},
                "corpus_tokens": self.corpus_tokens, "log": [dict(e) for e in self.log]}

    def restore(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict):
            raise snapshot_error("memory", "expected an object")
        memory = state.get("memory")
        sections = corpus_prompts.SECTIONS
        if not isinstance(memory, dict) or sorted(memory) != sorted(sections) or not all(
                isinstance(v, list) and all(isinstance(line, str) for line in v)
                for v in memory.values()):
            raise snapshot_error("memory", f"expected {{{', '.join(sections)}: [str]}}")
        tokens = state.get("corpus_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise snapshot_error("corpus_tokens", "expected an integer >= 0")
        log = state.get("log")
        if not isinstance(log, list) or not all(
                isinstance(e, dict) and e.get("status") in STATUSES for e in log):
            raise snapshot_error("log", f"expected a list of {{status: {'|'.join(STATUSES)}, "
                                 "...}}")
        self.memory = {name: list(memory[name]) for name in corpus_prompts.SECTIONS}
        self.corpus_tokens = tokens
        self.log = [dict(e) for e in log]

    def _described(self) -> dict[str, Any]:
        return {**super()._described(), "updater": self.updater.describe()}

    def fallback_count(self) -> int:
        """Updates that fell back to the mechanical stand-in."""
        return sum(1 for e in self.log if e["status"] == "fallback")
