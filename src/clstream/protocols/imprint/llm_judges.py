"""The paper's LLM judges for ImprintBench, each over a model at temperature 0
(docs/imprint.md §6.8; ImprintBench App. D.2, E.1-E.3).

Four prompts, all written for this project:

* ``rubric`` -- MATCH / NONMATCH / REFUSAL against a reference (code DirAcq, every persona
  family, items judged ``llm``): correct iff MATCH; for a BoundAbs item iff REFUSAL; for an
  invented code name (gold No) MATCH or REFUSAL, since abstaining and denying are both right
  there (App. D.2).
* ``yn`` -- the one-letter Y / N consistency check of a response against the gold (news
  TempUpd, CompRel, ImpRel; App. E.1): correct iff Y.
* ``identifier`` -- YES / NO "do these name the same Python identifier?": every sample of
  code RefRes, and for code CompRel only the samples the trailing-component check said wrong
  (App. D.2, E.2): correct iff YES.
* ``list`` -- YES / NO "does this list name the target identifier as one of its items?"
  (code ImpRel, App. E.2): correct iff YES.

A reply must END in its verdict: its last non-empty line, stripped of markdown and trailing
punctuation and of a leading "Verdict:" / "Label:" / "Answer:", must be one verdict word of
its prompt. Anything else ("It is not a MATCH.", a verdict followed by more reasoning) is an
error for that sample -- a :class:`~clstream.protocols.imprint.judging.Verdict` with
``error`` set -- never a verdict, and it is not cached, so the next run asks again.

Replies with a verdict are cached (:class:`ReplyCache`), keyed by the judge model's name,
the prompt's hash, the item (its id, question and reference) and the judged output.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model
from clstream.core.errors import DataError
from clstream.core.files import atomic_writer
from clstream.core.jsonio import iter_json_lines
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.protocols.imprint.judging import (
    ImprintItem,
    JudgeError,
    Verdict,
    gold_letter,
    invented_code_name,
    leaf,
    normalize_identifier,
    strip_think,
)

LLM_JUDGE_SYSTEM = (
    "You check one answer to a question against a reference answer and label it. "
    "Judge only the answer's content, never its style or length."
)
LLM_JUDGE_TEMPLATE = (
    "Question:\n{question}\n\n"
    "Reference answer:\n{reference}\n\n"
    "Answer to check:\n{response}\n\n"
    "Pick the one label that fits the answer to check:\n"
    "MATCH - it states the key fact of the reference answer, and states it correctly. Other "
    "wording is fine; a partly right, hedged or incomplete answer does not qualify.\n"
    "NONMATCH - it gives a different or wrong answer, stays vague, strays from the question, "
    "or leaves the key fact out.\n"
    "REFUSAL - it declines to answer, says it does not know, or says it lacks the "
    "information.\n"
    "You may reason in a few sentences first. Then write the label alone as the last line."
)
LLM_NO_ANSWER_REFERENCE = (
    "(none: nothing known about this answers the question; a correct response says it does "
    "not know or lacks the information)"
)
LLM_CHOICE_REFERENCE = "option {letter}: {text} (an answer naming option {letter} matches)"
LLM_JUDGE_VERSION = "imprint-llm-judge-v1"
LLM_JUDGE_PROMPT_HASH = hashlib.sha256("\x00".join(
    (LLM_JUDGE_VERSION, LLM_JUDGE_SYSTEM, LLM_JUDGE_TEMPLATE, LLM_NO_ANSWER_REFERENCE,
     LLM_CHOICE_REFERENCE)).encode()).hexdigest()[:16]
"""The hash every rubric verdict carries and every cache key holds: change a prompt text and
earlier verdicts are no longer reused."""

LLM_LETTER_REFERENCE = "option {letter} (an answer naming option {letter} matches)"
LLM_INVENTED_REFERENCE = (
    "No: {name} does not exist (an answer denying it exists matches; one saying it does not "
    "know is a refusal)"
)

YN_JUDGE_SYSTEM = ("You decide whether an answer agrees with a known correct answer. Your "
                   "reply ends with a single letter.")
YN_JUDGE_TEMPLATE = (
    "Question:\n{question}\n\n"
    "Correct answer:\n{reference}\n\n"
    "Answer to check:\n{response}\n\n"
    "Does the answer to check commit to the correct answer, in any wording? It does not if it "
    "gives another or an outdated value, offers several values as alternatives, contradicts "
    "itself, or gives no answer. Naming an earlier value as what held before is fine when the "
    "value it gives for the question is the correct one.\n"
    "Write Y if it does and N if it does not, alone on the last line."
)
IDENT_JUDGE_SYSTEM = "You compare names used in Python code. Your reply ends with YES or NO."
IDENT_JUDGE_TEMPLATE = (
    "Question:\n{question}\n\n"
    "Expected identifier:\n{reference}\n\n"
    "Answer to check:\n{response}\n\n"
    "Does the answer name the same Python identifier as the expected one? Formatting does not "
    "matter (backticks, quotes, call parentheses, spacing), nor does a shorter or aliased "
    "module path before the final name (F.conv2d names torch.nn.functional.conv2d). An answer "
    "naming another identifier, or several different ones, does not.\n"
    "Write YES or NO alone on the last line."
)
LIST_JUDGE_SYSTEM = "You read lists of Python names. Your reply ends with YES or NO."
LIST_JUDGE_TEMPLATE = (
    "Question:\n{question}\n\n"
    "Target identifier:\n{reference}\n\n"
    "Answer to check:\n{response}\n\n"
    "Does the answer name the target as one of the members it lists? A dotted path ending in "
    "the target counts (module.target names target), as do backticks or call parentheses. A "
    "name mentioned only as absent, excluded or as an example of something else does not.\n"
    "Write YES or NO alone on the last line."
)
LIST_VERSION = "imprint-list-judge-v1"
YN_VERSION = "imprint-yn-judge-v1"
IDENT_VERSION = "imprint-identifier-judge-v1"
YN_JUDGE_PROMPT_HASH = hashlib.sha256("\x00".join(
    (YN_VERSION, YN_JUDGE_SYSTEM, YN_JUDGE_TEMPLATE)).encode()).hexdigest()[:16]
IDENT_JUDGE_PROMPT_HASH = hashlib.sha256("\x00".join(
    (IDENT_VERSION, IDENT_JUDGE_SYSTEM, IDENT_JUDGE_TEMPLATE)).encode()).hexdigest()[:16]
LIST_JUDGE_PROMPT_HASH = hashlib.sha256("\x00".join(
    (LIST_VERSION, LIST_JUDGE_SYSTEM, LIST_JUDGE_TEMPLATE)).encode()).hexdigest()[:16]

LLM_JUDGE_PARAMS = SamplingParams(temperature=0.0, top_p=1.0, top_k=-1, max_tokens=1024, n=1)


@dataclass(frozen=True)
class JudgePrompt:
    """One LLM judge: its prompt, the verdict words its reply ends in, and its hash."""

    kind: str
    system: str
    template: str
    words: tuple[str, ...]
    prompt_hash: str


PROMPTS: dict[str, JudgePrompt] = {
    "rubric": JudgePrompt("rubric", LLM_JUDGE_SYSTEM, LLM_JUDGE_TEMPLATE,
                          ("MATCH", "NONMATCH", "REFUSAL"), LLM_JUDGE_PROMPT_HASH),
    "yn": JudgePrompt("yn", YN_JUDGE_SYSTEM, YN_JUDGE_TEMPLATE, ("Y", "N"),
                      YN_JUDGE_PROMPT_HASH),
    "identifier": JudgePrompt("identifier", IDENT_JUDGE_SYSTEM, IDENT_JUDGE_TEMPLATE,
                              ("YES", "NO"), IDENT_JUDGE_PROMPT_HASH),
    "list": JudgePrompt("list", LIST_JUDGE_SYSTEM, LIST_JUDGE_TEMPLATE, ("YES", "NO"),
                        LIST_JUDGE_PROMPT_HASH),
}
"""The LLM judges by kind."""

PROMPT_HASHES = {kind: p.prompt_hash for kind, p in PROMPTS.items()}

_LINE_PREFIX = re.compile(
    r"^(?:final\s+)?(?:verdict|label|answer|judgment|judgement|decision)\s*[:\-=]\s*",
    re.IGNORECASE)
_SYNONYMS = {"NON-MATCH": "NONMATCH", "NON MATCH": "NONMATCH", "NON_MATCH": "NONMATCH",
             "YES": "YES", "NO": "NO"}


def parse_verdict(reply: str, kind: str) -> str | None:
    """The verdict word the reply ends in (module docstring), or None when it ends in none.
    The Y/N judge also takes YES/NO; the identifier and list judges also take Y/N."""
    lines = [line for line in strip_think(reply).splitlines() if line.strip()]
    if not lines:
        return None
    last = _LINE_PREFIX.sub("", lines[-1].strip().strip("*_#>`\"' ")).strip()
    last = last.strip("*_`\"' ").rstrip(".!").strip().upper()
    last = _SYNONYMS.get(last, last)
    if kind == "yn":
        last = {"YES": "Y", "NO": "N"}.get(last, last)
    elif kind in ("identifier", "list"):
        last = {"Y": "YES", "N": "NO"}.get(last, last)
    return last if last in PROMPTS[kind].words else None


def parse_llm_verdict(reply: str) -> str | None:
    """The MATCH / NONMATCH / REFUSAL word a rubric reply ends in, or None."""
    return parse_verdict(reply, "rubric")


def llm_reference(item: ImprintItem, kind: str = "rubric") -> str:
    """What the judge compares against: the gold (its accepted variants), the gold option,
    for a BoundAbs item the statement that nothing answers it, for an invented code name its
    denial; for the list judge, the gold leaves (any one of them listed is right)."""
    if kind == "list":
        leaves = list(dict.fromkeys(leaf(normalize_identifier(g)) for g in item.golds))
        return leaves[0] + (f" (any one of: {', '.join(leaves)})" if len(leaves) > 1 else "")
    if kind == "rubric" and invented_code_name(item):
        return LLM_INVENTED_REFERENCE.format(name=_named_path(item))
    if kind == "rubric" and item.family == "BoundAbs":
        return LLM_NO_ANSWER_REFERENCE
    if kind == "rubric" and (item.options or item.judge == "choice"):
        letter = gold_letter(item)
        index = ord(letter) - ord("A")
        if 0 <= index < len(item.options):
            return LLM_CHOICE_REFERENCE.format(letter=letter, text=item.options[index])
        return LLM_LETTER_REFERENCE.format(letter=letter)
    golds = item.golds
    return golds[0] + (f" (also accepted: {'; '.join(golds[1:])})" if len(golds) > 1 else "")


def _named_path(item: ImprintItem) -> str:
    """The dotted name a code existence question asks about (else "the name asked about")."""
    found = re.findall(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+", item.question)
    return found[-1] if found else "the name asked about"


def llm_verdict(item: ImprintItem, reply: str, judge_model: str,
                kind: str = "rubric", name: str | None = None) -> Verdict:
    """The verdict a judge reply gives (module docstring); an error verdict when the reply
    does not end in a verdict word. ``name`` is the judge the verdict says it came from
    (default ``kind``; ``identifier+fallback`` where the identifier prompt follows the
    trailing-component check)."""
    prompt = PROMPTS[kind]
    label = parse_verdict(reply, kind)
    name = name or kind
    if label is None:
        tail = strip_think(reply).strip().splitlines()[-1:] or [""]
        message = (f"the {kind} judge's reply does not end in a verdict word "
                   f"({'/'.join(prompt.words)}): last line {tail[0][:80]!r}")
        return Verdict(False, "error", name, message, judge_model, prompt.prompt_hash,
                       error=message)
    if kind == "yn":
        wanted: tuple[str, ...] = ("Y",)
    elif kind in ("identifier", "list"):
        wanted = ("YES",)
    elif invented_code_name(item):
        wanted = ("MATCH", "REFUSAL")
    elif item.family == "BoundAbs":
        wanted = ("REFUSAL",)
    else:
        wanted = ("MATCH",)
    return Verdict(label in wanted, label, name,
                   f"judge said {label}, correct is {' or '.join(wanted)}",
                   judge_model, prompt.prompt_hash)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ReplyCache:
    """Model replies stored in a JSON Lines file, one record per key (``{"key", ...}``).

    Loaded whole when opened; :meth:`put_many` adds records and rewrites the file atomically,
    so a killed run keeps every batch it finished and a re-run sends only what is missing.
    ``path`` None keeps the records in memory only.
    """

    def __init__(self, path: str | Path | None, required: Sequence[str] = ()):
        self.path = Path(path) if path is not None else None
        self._records: dict[str, dict[str, Any]] = {}
        if self.path is None or not self.path.exists():
            return
        for number, record in iter_json_lines(self.path):
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                raise DataError(self.path, f"line {number}", "key", "not a cache record")
            absent = next((f for f in required if f not in record), None)
            if absent is not None:
                raise DataError(self.path, f"line {number}", absent, "missing key")
            self._records[record["key"]] = record

    def get(self, key: str) -> dict[str, Any] | None:
        return self._records.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def put_many(self, records: Sequence[dict[str, Any]]) -> None:
        for record in records:
            self._records[record["key"]] = record
        if self.path is None or not records:
            return
        with atomic_writer(self.path, make_parent=True) as handle:
            for value in self._records.values():
                handle.write(json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n")


class LLMJudge:
    """The LLM judges over one model, temperature 0 (module docstring).

    Replies are cached (:class:`ReplyCache`), one ``{"key", "judge_model",
    "judge_prompt_hash", "item_id", "reply"}`` record each; ``calls`` counts the requests
    sent to the model.
    """

    def __init__(self, model: Model, cache_path: str | Path | None = None, *,
                 batch_size: int = 256):
        self.model = model
        self.cache = ReplyCache(cache_path, required=("reply",))
        self.batch_size = batch_size
        self.calls = 0

    @property
    def name(self) -> str:
        return self.model.name

    def key(self, item: ImprintItem, output: str, kind: str = "rubric") -> str:
        body = {"judge_model": self.model.name, "judge_prompt_hash": PROMPTS[kind].prompt_hash,
                "item_id": item.item_id,
                "item_hash": _sha(item.question + "\x00" + llm_reference(item, kind)),
                "output_hash": _sha(output)}
        return _sha(json.dumps(body, sort_keys=True))

    def request(self, item: ImprintItem, output: str, key: str,
                kind: str = "rubric") -> GenerationRequest:
        prompt = PROMPTS[kind]
        user = prompt.template.format(question=item.question.strip(),
                                      reference=llm_reference(item, kind),
                                      response=strip_think(output) or "(empty)")
        return GenerationRequest(
            key=f"judge/{kind}/{item.item_id}/{key[:12]}", stage="judge",
            params=LLM_JUDGE_PARAMS,
            messages=(Message(role="system", content=prompt.system),
                      Message(role="user", content=user)))

    async def judge_many(self, pairs: Sequence[tuple[ImprintItem, str]],
                         kind: str = "rubric", *, label: str | None = None) -> list[Verdict]:
        """Verdicts for (item, output) pairs by the ``kind`` judge, same order, each naming
        ``label`` (default ``kind``) as its judge; only uncached
        pairs call the model, each distinct one once. A failed call raises
        :class:`~clstream.protocols.imprint.judging.JudgeError`."""
        keys = [self.key(item, output, kind) for item, output in pairs]
        todo: dict[str, GenerationRequest] = {}
        for (item, output), key in zip(pairs, keys, strict=True):
            if key not in self.cache and key not in todo:
                todo[key] = self.request(item, output, key, kind)
        owners = {k: pairs[i][0] for i, k in enumerate(keys)}
        replies: dict[str, str] = {}
        pending = list(todo.items())
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start:start + self.batch_size]
            results = await self.model.generate([r for _, r in chunk])
            self.calls += len(chunk)
            records = []
            for (key, _), result in zip(chunk, results, strict=True):
                if not result.ok or not result.samples:
                    raise JudgeError(f"judge model {self.model.name!r} failed on item "
                                     f"{owners[key].item_id!r}: {result.error or 'no sample'}")
                reply = result.samples[0].text
                replies[key] = reply
                if parse_verdict(reply, kind) is not None:  # a non-verdict is asked again
                    records.append({"key": key, "judge_model": self.model.name,
                                    "judge_prompt_hash": PROMPTS[kind].prompt_hash,
                                    "item_id": owners[key].item_id, "reply": reply})
            self.cache.put_many(records)
        out = []
        for (item, _), key in zip(pairs, keys, strict=True):
            cached = self.cache.get(key)
            reply = str(cached["reply"]) if cached is not None else replies.get(key, "")
            out.append(llm_verdict(item, reply, self.model.name, kind, label))
        return out

    async def judge(self, item: ImprintItem, output: str, kind: str = "rubric") -> Verdict:
        return (await self.judge_many([(item, output)], kind))[0]
