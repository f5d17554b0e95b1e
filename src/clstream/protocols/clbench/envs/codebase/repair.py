"""Candidate repairs of the scripted debugger, one per operator class (docs/clbench.md §4.6).

Given a file's text, the name of the function the report points at and the report, each
operator class proposes single-line edits that would undo a mutation of its kind: flip a
comparison, drop a ``+ 1``/``- 1`` or toggle a bound's strictness, insert an argument check in
the style of the file's other checks, restore a default that the docstring states, swap two
call arguments, raise the exception the report expects, add an exporter missing from the
registry, swap ``min``/``max``. Every candidate is one ``sed -i`` command and has its undo.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    operator: str
    line: int  # 1-based
    kind: str  # "c": the line becomes ``text``; "a": ``text`` is inserted after the line
    text: str
    original: str

    def apply(self, path: str) -> str:
        script = str(self.line) + self.kind + "\\" + self.text
        return f"sed -i {shlex.quote(script)} {path}"

    def undo(self, path: str) -> str:
        if self.kind == "a":
            return f"sed -i {shlex.quote(f'{self.line + 1}d')} {path}"
        script = str(self.line) + "c\\" + self.original
        return f"sed -i {shlex.quote(script)} {path}"


def spans(lines: list[str], func: str) -> list[tuple[int, int]]:
    """(first, last) 0-based line ranges of every ``def func`` in the file."""
    out = []
    for n, line in enumerate(lines):
        m = re.match(rf"(\s*)def {re.escape(func)}\(", line)
        if not m:
            continue
        indent, end = len(m.group(1)), n + 1
        while end < len(lines) and (not lines[end].strip() or
                                    len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        out.append((n, end - 1))
    return out


def _params(def_line: str) -> list[str]:
    inside = def_line.split("(", 1)[1].rsplit(")", 1)[0]
    names = [p.split("=")[0].strip().lstrip("*") for p in inside.split(",")]
    return [p for p in names if p and p not in ("self", "cls")]


def _split_args(text: str) -> list[str] | None:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts] if all(p.strip() for p in parts) else None


def _calls(line: str) -> list[tuple[int, int]]:
    """(start, end) of the argument text of every call on the line."""
    out = []
    for m in re.finditer(r"\w\(", line):
        depth, start = 0, m.end()
        for n in range(start - 1, len(line)):
            depth += {"(": 1, ")": -1}.get(line[n], 0)
            if depth == 0:
                out.append((start, n))
                break
    return out


_CMP = re.compile(r"(?<![<>=!-])(<=|>=|<|>)(?![=>])")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
_STRICT = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


def _by_regex(line: str, regex: re.Pattern[str], table: dict[str, str]) -> list[str]:
    return [line[:m.start()] + table[m.group(0)] + line[m.end():] for m in regex.finditer(line)
            if m.group(0) in table]


def _line_edits(operator: str, line: str, report: str) -> list[str]:
    code = line.split("#", 1)[0]
    if line.strip().startswith(('"""', "def ")) or not code.strip():
        return []
    if operator == "inverted_comparison":
        return _by_regex(line, _CMP, _FLIP)
    if operator == "off_by_one":
        drops = [line[:m.start()] + line[m.end():] for m in re.finditer(r" [+-] 1\b", line)]
        return drops + _by_regex(line, _CMP, _STRICT)
    if operator == "min_max_swap":
        return _by_regex(line, re.compile(r"\b(min|max)(?=\()"), {"min": "max", "max": "min"})
    if operator == "swapped_arguments":
        out = []
        for start, end in _calls(line):
            args = _split_args(line[start:end])
            for n in range(len(args or []) - 1):
                assert args is not None
                swapped = [*args[:n], args[n + 1], args[n], *args[n + 2:]]
                out.append(line[:start] + ", ".join(swapped) + line[end:])
        return out
    if operator == "wrong_exception":
        m = re.search(r"raise (\w+)\(", line)
        if not m:
            return []
        named = re.findall(r"\b([A-Z]\w*(?:Error|Exception|Format|Dimensions))\b", report)
        return [line[:m.start(1)] + e + line[m.end(1):] for e in dict.fromkeys(named)
                if e != m.group(1)]
    return []


def _validation(lines: list[str], first: int, last: int) -> list[Candidate]:
    templates: list[str] = []
    for n, line in enumerate(lines):
        m = re.match(r"\s*(\w*(?:require|check|validate)\w*)\((.*)\)\s*$", line)
        if not m:
            continue
        owner = next((lines[k] for k in range(n, -1, -1) if lines[k].lstrip().startswith("def ")),
                     "")
        text = line.strip()
        for p in _params(owner) if owner else []:
            text = re.sub(rf"\b{re.escape(p)}\b", "{p}", text)
        if "{p}" in text and text not in templates:
            templates.append(text)
    for line in lines:
        m = re.match(r"from \S+ import (.+)$", line)
        for name in (m.group(1).split(", ") if m else []):
            if name.startswith("require_") and not any(t.startswith(name + "(")
                                                       for t in templates):
                templates.append(name + '("{p}", {p})')
    at = first
    if at + 1 <= last and lines[at + 1].strip().startswith('"""'):
        at += 1
        while at < last and (lines[at].strip() == '"""' or
                             not lines[at].rstrip().endswith('"""')) or (
                at == first + 1 and lines[at].strip() == '"""'):
            at += 1
    indent = " " * (len(lines[first]) - len(lines[first].lstrip()) + 4)
    body = "\n".join(lines[first:last + 1])
    out = []
    for template in templates:
        for p in _params(lines[first]):
            text = template.replace("{p}", p)
            if text not in body:
                out.append(Candidate("missing_validation", at + 1, "a", indent + text,
                                     lines[at]))
    return out


def _default(lines: list[str], first: int, last: int) -> list[Candidate]:
    doc = " ".join(lines[first:last + 1])
    out = []
    for m in re.finditer(r"``(\w+)`` \(default ([^)]+)\)", doc):
        name, value = m.groups()
        d = re.search(rf"\b{name}=([^,)]+)", lines[first])
        if d and d.group(1) != value:
            line = lines[first]
            out.append(Candidate("wrong_default", first + 1, "c",
                                 line[:d.start(1)] + value + line[d.end(1):], line))
    return out


def _registry(lines: list[str]) -> list[Candidate]:
    start = next((n for n, line in enumerate(lines) if re.match(r"\w+ = \{$", line)), None)
    if start is None:
        return []
    listed = " ".join(lines[start:])
    out = []
    for line in lines:
        m = re.match(r"from \.\w+ import (\w+Format)$", line)
        if m and not re.search(rf":\s*{m.group(1)}\b", listed):
            key = m.group(1)[:-len("Format")].lower()
            out.append(Candidate("missing_registry_entry", start + 1, "a",
                                 f'    "{key}": {m.group(1)},', lines[start]))
    return out


def candidates(source: str, func: str, report: str, expected: str, order: list[str]
               ) -> list[Candidate]:
    """Every candidate repair in ``source`` for the function ``func``, by operator ``order``."""
    lines = source.split("\n")
    found = spans(lines, func)
    out: list[Candidate] = []
    expects_error = re.fullmatch(r"[A-Z]\w*(?:Error|Exception|Dimensions|Format)", expected)
    for operator in order:
        if operator in ("missing_validation", "wrong_exception") and not expects_error:
            continue
        if operator == "missing_registry_entry":
            out += _registry(lines)
            continue
        for first, last in found:
            if operator == "missing_validation":
                out += _validation(lines, first, last)
            elif operator == "wrong_default":
                out += _default(lines, first, last)
            else:
                for n in range(first, last + 1):
                    out += [Candidate(operator, n + 1, "c", new, lines[n])
                            for new in _line_edits(operator, lines[n], report)]
    return out


SEEDED_OPERATORS = ("inverted_comparison", "off_by_one", "min_max_swap", "swapped_arguments",
                    "negated_condition", "wrong_operator")
_NEGATE = re.compile(r"(?<![<>=!])(==|!=)(?!=)| (is not|is|and|or) ")
_NEGATED = {"==": "!=", "!=": "==", "is": "is not", "is not": "is", "and": "or", "or": "and"}
_ARITH = re.compile(r"(?<=[\w)\]]) ([+\-*/]) (?=[\w(])")
_SWAPPED = {"+": "-", "-": "+", "*": "/", "/": "*"}


def _seed_edits(operator: str, line: str) -> list[str]:
    code = line.split("#", 1)[0]
    if line.strip().startswith(('"""', "def ", "class ")) or not code.strip():
        return []
    if operator == "negated_condition":
        out = []
        for m in _NEGATE.finditer(code):
            if m.group(1):
                out.append(line[:m.start(1)] + _NEGATED[m.group(1)] + line[m.end(1):])
            else:
                out.append(line[:m.start(2)] + _NEGATED[m.group(2)] + line[m.end(2):])
        return out
    if operator == "off_by_one":  # and a small integer constant one too high
        bumps = [line[:m.start()] + str(int(m.group()) + 1) + line[m.end():]
                 for m in re.finditer(r"(?<![\w.])[0-9](?![\w.])", code)]
        return _line_edits(operator, line, "") + bumps
    if operator == "wrong_operator":
        return [line[:m.start(1)] + _SWAPPED[m.group(1)] + line[m.end(1):]
                for m in _ARITH.finditer(code)]
    return _line_edits(operator, line, "")


def mutations(line: str) -> list[tuple[str, str]]:
    """(operator, mutated line) for every single-line bug of the line-local operator classes:
    the catalogue's comparison, bound, ``min``/``max`` and argument classes (which the
    debugger's repairs undo), a negated condition (``==``/``!=``, ``is``/``is not``,
    ``and``/``or``) and a wrong arithmetic operator. They seed the real repositories' bugs
    (:mod:`.real`)."""
    out = []
    for operator in SEEDED_OPERATORS:
        for new in dict.fromkeys(_seed_edits(operator, line)):
            if new != line:
                out.append((operator, new))
    return out
