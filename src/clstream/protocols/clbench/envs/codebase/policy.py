"""The builtin policy of the codebase task: a scripted debugger (docs/clbench.md §4.6, §6).

:class:`ScriptedDebugger` reads the report (repository, the public symbol it names, the
reproduction and its expected output), finds the symbol with ``grep``, reads the file, finds
how the repository runs its tests in the README, then tries repairs from the operator
catalogue one per step (edit, rerun the reproduction, undo when it did not help), runs the
tests and submits. With memory it keeps, per repository, where each symbol lives (every
``def`` and ``class`` of the files it read), the test command, and which bug classes were
fixed in which issues; it skips the lookups and tries the repository's frequent classes
first. The same knowledge is written down as notes (:class:`~clstream.core.environment.NoteTaker`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.core.environment import Turn, merge_notes
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.codebase.repair import Candidate, candidates
from clstream.protocols.clbench.envs.codebase.shell import SUBMIT
from clstream.protocols.clbench.envs.codebase.sites import OPERATORS

_REPO = re.compile(r"^Repository: (\S+)", re.MULTILINE)
_REPRO = re.compile(r"```python\n(.*?)```", re.DOTALL)
_EXPECTED = re.compile(r"Expected output:\n\n```\n(.*?)\n```", re.DOTALL)
_DEF = re.compile(r"^\s*(?:def|class) (\w+)", re.MULTILINE)
_NOTE = re.compile(r"^repository (\S+) (tests|bugs|symbol (\w+)): (.+)$")


@dataclass
class Knowledge:
    """What the debugger knows about repositories, from earlier issues."""

    tests: dict[str, str] = field(default_factory=dict)
    symbols: dict[str, dict[str, str]] = field(default_factory=dict)
    bugs: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def notes(self) -> list[str]:
        out = [f"repository {r} tests: {c}" for r, c in sorted(self.tests.items())]
        for repo, table in sorted(self.symbols.items()):
            out += [f"repository {repo} symbol {s}: {p}" for s, p in sorted(table.items())]
        for repo, classes in sorted(self.bugs.items()):
            parts = [f"{c} in {', '.join(sorted(ids))}" for c, ids in sorted(classes.items())]
            out.append(f"repository {repo} bugs: {'; '.join(parts)}")
        return out

    def read(self, note: str) -> None:
        m = _NOTE.match(note.strip())
        if not m:
            return
        repo, kind, symbol, content = m.groups()
        if kind == "tests":
            self.tests[repo] = content
        elif kind == "bugs":
            for part in content.split("; "):
                cls, _, ids = part.partition(" in ")
                self.bugs.setdefault(repo, {}).setdefault(cls, set()).update(
                    i.strip() for i in ids.split(",") if i.strip())
        else:
            self.symbols.setdefault(repo, {})[symbol] = content


@dataclass(frozen=True)
class Report:
    iid: str
    repo: str
    symbol: str
    func: str
    repro: str
    expected: str
    text: str


def parse_report(observation: str) -> Report | None:
    repo, iid = _REPO.search(observation), instance_of(observation)
    repro, expected = _REPRO.search(observation), _EXPECTED.search(observation)
    symbol = re.search(r"`([\w.]+)`", observation)
    if not (repo and iid and repro and expected and symbol):
        return None
    name = symbol.group(1).split(".")[-1]
    func = "__init__" if name[:1].isupper() else name
    return Report(iid, repo.group(1), symbol.group(1), func, repro.group(1),
                  expected.group(1), observation)


def _parsed(turn: Turn) -> tuple[str, str, int, str]:
    """(command, thought, return code, output) of one of the debugger's own turns."""
    try:
        action = json.loads(turn.action)
    except json.JSONDecodeError:
        action = {}
    m = re.match(r"returncode: (-?\d+)\noutput:\n?", turn.feedback)
    code, out = (int(m.group(1)), turn.feedback[m.end():]) if m else (-1, turn.feedback)
    return str(action.get("command", "")), str(action.get("thought", "")), code, out


def _readme_command(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("    python"):
            return line.split("#", 1)[0].strip()
    return None


def learn(knowledge: Knowledge, turns: Sequence[Turn]) -> None:
    """Add what one instance's turns teach to ``knowledge``: all of them, or any run of them
    (a memory may show one step alone: every observation names its repository)."""
    found = next((m for t in turns if (m := _REPO.search(t.observation))), None)
    iid = next((i for t in turns if (i := instance_of(t.observation))), None)
    if found is None or iid is None:
        return
    repo = found.group(1)
    for turn in turns:
        command, thought, code, out = _parsed(turn)
        if command == "cat README.md" and code == 0 and _readme_command(out):
            knowledge.tests.setdefault(repo, str(_readme_command(out)))
        elif thought == "tests" and code == 0:
            knowledge.tests[repo] = command
        elif command.startswith("cat ") and code == 0:
            path = command[4:].strip()
            for name in _DEF.findall(out):
                knowledge.symbols.setdefault(repo, {}).setdefault(name, path)
        if turn.feedback.startswith("Submission PASSED"):
            cls = _last_class(turns)
            if cls:
                knowledge.bugs.setdefault(repo, {}).setdefault(cls, set()).add(iid)


def _last_class(turns: Sequence[Turn]) -> str:
    cls = ""
    for turn in turns:
        _, thought, _, _ = _parsed(turn)
        if thought.startswith("try "):
            cls = thought.split()[2]
    return cls


def _forget_own(knowledge: Knowledge, turns: Sequence[Turn], instance: str | None) -> None:
    """Take out of ``knowledge`` what the current instance's own turns teach: a memory that
    stores facts as they come (mem0) shows them back within the instance, and the debugger
    plans an instance from what it knew before it (a fact learned mid-way must not change the
    plan half-way through)."""
    own = Knowledge()
    learn(own, turns)
    for repo, command in own.tests.items():
        if knowledge.tests.get(repo) == command:
            del knowledge.tests[repo]
    for repo, table in own.symbols.items():
        known = knowledge.symbols.get(repo, {})
        for symbol, path in table.items():
            if known.get(symbol) == path:
                del known[symbol]
    for classes in knowledge.bugs.values():
        for ids in classes.values():
            ids.discard(instance or "")


class ScriptedDebugger:
    """Locate, read, repair by the operator catalogue, test, submit; see the module docstring."""

    name = "scripted-debugger"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        instance = instance_of(observation)
        knowledge = Knowledge()
        earlier: dict[str | None, list[Turn]] = {}
        for turn in history:
            earlier.setdefault(instance_of(turn.observation), []).append(turn)
        mine = earlier.pop(instance, [])
        for turns in earlier.values():
            learn(knowledge, turns)
        return self.decide(knowledge, mine, observation)

    def notes(self, history: Sequence[Turn]) -> list[str]:
        knowledge = Knowledge()
        groups: dict[str | None, list[Turn]] = {}
        for turn in history:
            groups.setdefault(instance_of(turn.observation), []).append(turn)
        for turns in groups.values():
            learn(knowledge, turns)
        return knowledge.notes()

    def merge(self, old: str, new: str) -> str:
        knowledge = Knowledge()
        knowledge.read(old)
        if old.startswith(new.split(": ", 1)[0] + ": ") and " bugs: " not in old:
            return new.strip()
        knowledge.read(new)
        notes = knowledge.notes()
        return notes[0] if notes else new.strip()

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        knowledge = Knowledge()
        for note in merge_notes(self, notes):
            knowledge.read(note)
        instance = instance_of(observation)
        mine = [t for t in history if instance_of(t.observation) == instance]
        _forget_own(knowledge, mine, instance)
        return self.decide(knowledge, mine, observation)

    # --- one instance ----------------------------------------------------------------------

    def decide(self, knowledge: Knowledge, turns: Sequence[Turn], observation: str
               ) -> dict[str, Any]:
        report = parse_report(turns[0].observation if turns else observation)
        if report is None:
            return {"thought": "no report found", "command": SUBMIT}
        done = [_parsed(t) for t in turns]
        owner = report.symbol.split(".")[0]
        key = owner if owner[:1].isupper() else report.func
        path = knowledge.symbols.get(report.repo, {}).get(key)
        if path is None:
            grep = next((out for cmd, th, _, out in done if th == "locate"), None)
            if grep is None:
                what = f"class {key}\\b" if key[:1].isupper() else f"def {key}\\("
                return {"thought": "locate", "command": f"grep -rnE {shlex.quote(what)} ."}
            hits = [line.split(":", 1)[0] for line in grep.splitlines() if ":" in line]
            hits = [h for h in hits if not h.startswith(("tests/", "test/"))]
            if not hits:
                return {"thought": "symbol not found", "command": SUBMIT}
            path = hits[0]
        source = next((out for cmd, _, code, out in done if cmd == f"cat {path}" and code == 0),
                      None)
        if source is None:
            return {"thought": "read", "command": f"cat {path}"}
        tests = knowledge.tests.get(report.repo)
        if tests is None:
            readme = next((out for cmd, _, _, out in done if cmd == "cat README.md"), None)
            if readme is None:
                return {"thought": "how tests run", "command": "cat README.md"}
            tests = _readme_command(readme) or "python -m unittest discover"
            if not any(th == "baseline" for _, th, _, _ in done):
                return {"thought": "baseline", "command": tests}
        order = self.order(knowledge, report.repo)
        tried = candidates(source, report.func, report.text, report.expected.strip(), order)
        return self._attempt(report, done, tried, path, tests)

    @staticmethod
    def order(knowledge: Knowledge, repo: str) -> list[str]:
        counts = {c: len(ids) for c, ids in knowledge.bugs.get(repo, {}).items()
                  if len(ids) >= 2}
        return sorted(OPERATORS, key=lambda c: (-counts.get(c, 0), OPERATORS.index(c)))

    def _attempt(self, report: Report, done: list[tuple[str, str, int, str]],
                 cands: list[Candidate], path: str, tests: str) -> dict[str, Any]:
        last = next((d for d in reversed(done) if d[1].split(" ")[0] in
                     ("try", "check", "tests", "undo")), None)
        k = int(last[1].split()[1]) if last else -1
        step = last[1].split()[0] if last else "undo"
        if step == "try":
            return {"thought": f"check {k}", "command": f"python -c {shlex.quote(report.repro)}"}
        if step == "check" and last is not None:
            if last[3].strip() == report.expected.strip():
                return {"thought": f"tests {k}", "command": tests}
            step = "failed"
        if step == "tests" and last is not None:
            if last[2] == 0:
                return {"thought": "submit", "command": SUBMIT}
            step = "failed"
        if step == "failed":
            return {"thought": f"undo {k}", "command": cands[k].undo(path)}
        if k + 1 >= len(cands):
            return {"thought": "no repair left", "command": SUBMIT}
        nxt = cands[k + 1]
        return {"thought": f"try {k + 1} {nxt.operator}", "command": nxt.apply(path)}
