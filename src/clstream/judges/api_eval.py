"""APIBench (HuggingFace subset) call matching by AST against an API pool (docs/seqmem.md §4.4).

The SeqMem-Eval paper does not spell out how APIBench answers are judged; its released code
keeps the Gorilla APIBench rule for the HF subset, and this module takes the same reading:

1. The predicted call is the text after the ``<<<api_call>>>`` label of the answer format
   (else the first bare ``api_call``), up to ``api_provider`` or the next ``<<<`` field and cut
   after the last ``)``; without a label, the last fenced code block, else the whole output.
2. It is parsed with :mod:`ast` (line by line if the whole does not parse) and every call in
   it is collected with its dotted function name.
3. A pool entry *matches* when some predicted call has the entry's dotted function name and
   contains, in its unparsed text, every required argument of the entry: each positional
   argument and each keyword value of the entry's ``api_call`` (HF subset rule), with quotes
   stripped. Entries without arguments cannot be told apart and are skipped. The first
   matching entry in pool order is the match. No match means a hallucinated call.
4. ``mode="domain"`` (the paper's reading, default): correct iff the matched entry's
   ``domain`` equals the task's ``api_data.domain``. ``mode="api"`` (stricter): correct iff
   the prediction matches the task's own reference ``api_call``.

One liberty: a predicted name qualified by its module (``transformers.pipeline``) matches the
bare name in the pool (``pipeline``); the call is the same API.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

MatchMode = Literal["domain", "api"]
_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|$)", re.DOTALL)


@dataclass(frozen=True)
class PoolEntry:
    """A pool API reduced to what matching needs."""

    index: int
    name: str
    required: tuple[str, ...]
    domain: str
    api_name: str


@dataclass(frozen=True)
class ApiMatch:
    correct: bool
    reason: str  # "correct" | "wrong_domain" | "wrong_api" | "no_pool_match" | "no_call"
    predicted: str
    matched: PoolEntry | None = None

    @property
    def hallucinated(self) -> bool:
        return self.reason in ("no_pool_match", "no_call")


def extract_api_call(output: str) -> str:
    """The predicted call text (rule 1 of the module docstring)."""
    label = re.search(r"<<<\s*api_call\s*>>>", output) or re.search(r"api_call", output)
    if label is not None:
        tail = re.split(r"api_provider", output[label.end() :])[0]
        tail = re.sub(r"^[^A-Za-z_]*", "", tail).split("<<<")[0]
        end = tail.rfind(")")
        return (tail[: end + 1] if end >= 0 else tail).strip().strip("`").strip()
    blocks = _FENCE.findall(output)
    return (blocks[-1] if blocks else output).strip()


def dotted_name(call: ast.Call) -> str:
    parts: list[str] = []
    node: ast.AST = call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif parts:
        parts.append(ast.unparse(node))
    else:
        return ast.unparse(call.func)
    return ".".join(reversed(parts))


def _calls_in(text: str) -> list[ast.Call]:
    try:
        trees = [ast.parse(text)]
    except (SyntaxError, ValueError):
        trees = []
        for line in text.splitlines():
            try:
                trees.append(ast.parse(line.strip()))
            except (SyntaxError, ValueError):
                continue
    return [node for tree in trees for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _strip_quotes(text: str) -> str:
    return text.strip("'\"")


def reference_entry(index: int, record: Mapping[str, Any]) -> PoolEntry | None:
    """Reduce one pool record (``api_call``, ``domain``, ``api_name``) to a :class:`PoolEntry`."""
    source = record.get("api_call")
    if not isinstance(source, str):
        return None
    calls = _calls_in(source.strip())
    if not calls:
        return None
    call = calls[0]
    required = [ast.unparse(arg) for arg in call.args]
    required += [ast.unparse(kw.value) for kw in call.keywords if kw.arg is not None]
    return PoolEntry(
        index,
        dotted_name(call),
        tuple(_strip_quotes(r) for r in required),
        str(record.get("domain", "")),
        str(record.get("api_name", "")),
    )


def build_pool(records: Sequence[Mapping[str, Any]]) -> list[PoolEntry]:
    """Parse every pool record once; unusable records (no call, no arguments) are dropped."""
    entries = (reference_entry(i, r) for i, r in enumerate(records))
    return [e for e in entries if e is not None and e.required]


def _same_api(predicted: str, reference: str) -> bool:
    return predicted == reference or predicted.endswith("." + reference)


def _matches(entry: PoolEntry, calls: list[tuple[str, str]]) -> bool:
    return any(
        _same_api(name, entry.name) and all(req in text for req in entry.required)
        for name, text in calls
    )


def match_api_call(
    output: str,
    pool: Sequence[PoolEntry],
    gold_api_data: Mapping[str, Any],
    gold_api_call: str = "",
    mode: MatchMode = "domain",
) -> ApiMatch:
    """Judge one model output (rules 1-4 of the module docstring)."""
    predicted = extract_api_call(output)
    calls = [(dotted_name(c), ast.unparse(c)) for c in _calls_in(predicted)]
    if not calls:
        return ApiMatch(False, "no_call", predicted)
    matched = next((entry for entry in pool if _matches(entry, calls)), None)
    if mode == "api":
        gold = reference_entry(-1, {"api_call": gold_api_call})
        ok = gold is not None and bool(gold.required) and _matches(gold, calls)
        if ok:
            return ApiMatch(True, "correct", predicted, matched)
        return ApiMatch(False, "wrong_api" if matched else "no_pool_match", predicted, matched)
    if matched is None:
        return ApiMatch(False, "no_pool_match", predicted)
    if matched.domain == str(gold_api_data.get("domain", "")):
        return ApiMatch(True, "correct", predicted, matched)
    return ApiMatch(False, "wrong_domain", predicted, matched)
