"""Red team: hostile answers run end to end through ``clstream run seqmem`` and are contained.

A scripted model answers every HumanEval-style task with one attack program (or an honest
control). After the run: no attack scored, every control did, the harness lived, no file
outside the sandboxes changed, no process of a sandbox is left, and no secret of the harness's
environment reached the verdicts, the results database or the harness's output.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from redteam import scripted
from redteam.attacks import ATTACKS, CONTROLS, TASKS, task_of

import clstream.protocols.seqmem.tasks as seqmem_tasks
from clstream.cli import main
from clstream.core.registry import register, unregister
from clstream.core.secrets import REDACTED
from clstream.judges import evaluators
from clstream.judges.evaluators import Evaluator, Verdict
from clstream.judges.isolation import detect
from clstream.store.db import ResultsStore

PROJECT = Path(__file__).resolve().parents[2]
ISOLATION = detect()
pytestmark = pytest.mark.skipif(
    isinstance(ISOLATION, str),
    reason=f"the red team needs bubblewrap (bwrap): {ISOLATION}",
)


class Recording:
    """Wraps the stream's evaluator: keeps every verdict as it left the evaluator."""

    def __init__(self, inner: Evaluator, seen: list[tuple[str, Verdict]]):
        self.inner, self.seen, self.name = inner, seen, inner.name

    def evaluate(self, task: Any, output: str) -> Verdict:
        verdict = self.inner.evaluate(task, output)
        self.seen.append((task.id, verdict))
        return verdict

    def __getattr__(self, name: str) -> Any:  # preflight() and whatever else the CLI asks
        return getattr(self.inner, name)


def _descendants(root: int) -> list[str]:
    """Living processes under ``root``: a sandbox left behind would be one (a process in a
    sandbox's PID namespace dies with the namespace's PID 1, a child of bwrap)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
        state, ppid = rest.split()[:2]
        if state != "Z":
            children.setdefault(int(ppid), []).append(int(pid))
            names[int(pid)] = name
    found: list[str] = []
    todo = list(children.get(root, []))
    while todo:
        child = todo.pop()
        found.append(f"{child} {names.get(child)}")
        todo += children.get(child, [])
    return found


def test_attacks_are_contained_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-canary-" + secrets.token_hex(16)
    plain = "plain-canary-" + secrets.token_hex(16)  # not secret-named: the store keeps it
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("REDTEAM_PLAIN_CANARY", plain)
    canary_dir = tmp_path / "canary"
    canary_dir.mkdir()
    canary = canary_dir / "canary.txt"
    canary.write_text("original")
    before = canary.stat()
    out = tmp_path / "out"
    escape = "clstream-redteam-escape-" + secrets.token_hex(6)
    fill = {"__CANARY_DIR__": str(canary_dir), "__CANARY__": str(canary),
            "__OUT__": str(out), "__PROJECT__": str(PROJECT), "__ESCAPE__": escape}

    cases: list[tuple[str, str, str, bool]] = []  # (case, task, program, honest)
    for name, program, _ in ATTACKS:
        for key, value in fill.items():
            program = program.replace(key, value)
        cases.append((f"attack-{name}", task_of(program), program, False))
    for name, program, task in CONTROLS:
        cases.append((f"control-{name}", task, program, True))
    assert len(ATTACKS) >= 70 and len({c[0] for c in cases}) == len(cases)
    rows = []
    for case, task, _, _ in cases:
        prompt, test, solution = TASKS[task]
        rows.append({"task_id": case, "prompt": prompt.replace("{case}", case), "test": test,
                     "entry_point": prompt.split("def ")[-1].split("(")[0],
                     "canonical_solution": solution})
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(scripted, "PROGRAMS", {c[0]: c[2] for c in cases})
    register("model", "scripted", "redteam.scripted:ScriptedModel", replace=True)

    seen: list[tuple[str, Verdict]] = []
    real_evaluator_for = evaluators.evaluator_for

    def evaluator_for(kind: str, **options: Any) -> Evaluator:
        if kind == "code":
            options.setdefault("timeout_s", 2.0)  # hanging attacks cost their deadline
        return Recording(real_evaluator_for(kind, **options), seen)

    monkeypatch.setattr(seqmem_tasks, "evaluator_for", evaluator_for)
    started = time.monotonic()
    try:
        status = main(["run", "seqmem", str(data), "--source", "humaneval",
                       "--system", "memory-free", "--model", "scripted", "--out", str(out),
                       "--checkpoints", "0", "--retro-sample", "0", "--no-progress"])
    finally:
        unregister("model", "scripted")
    wall = time.monotonic() - started
    assert status == 0  # and the harness is still here to say so

    verdicts = dict(seen)
    assert sorted(verdicts) == sorted(c[0] for c in cases)
    with ResultsStore(out) as store:
        (run,) = store.runs()
        online = {r.payload["task_id"]: r.payload for r in store.read_records(run.run_id, "online")}
    false_passes = [c for c, _, _, honest in cases if not honest and online[c]["correct"]]
    failed_controls = [
        (c, verdicts[c].detail.get("status"), verdicts[c].detail.get("reason"))
        for c, _, _, honest in cases if honest and not online[c]["correct"]]
    assert not false_passes, false_passes
    assert not failed_controls, failed_controls
    for case, verdict in verdicts.items():
        assert verdict.detail["isolation"].startswith("bubblewrap"), case
        assert verdict.detail["unisolated"] is False
        verdict.feedback.encode("utf-8")  # valid text whatever the program printed

    # nothing outside the sandboxes changed
    assert canary.read_text() == "original" and canary.stat().st_mtime == before.st_mtime
    assert [p.name for p in canary_dir.iterdir()] == ["canary.txt"]
    for place in (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/"), PROJECT, out,
                  canary_dir, Path.home()):
        assert not (place / escape).exists(), place / escape
    waited = 0
    while _descendants(os.getpid()) and waited < 300:  # exited ones may still be reaped
        time.sleep(0.1)
        waited += 1
    assert _descendants(os.getpid()) == []

    # no secret reached the verdicts, the database or the harness's output
    captured = capsys.readouterr()
    texts = {
        "verdicts": json.dumps([(c, v.feedback, v.detail) for c, v in seen]),
        "stdout": captured.out, "stderr": captured.err,
    }
    for path in out.iterdir():
        texts[path.name] = path.read_bytes().decode("latin-1")
    partial = re.compile(r"(?:sk|plain)-canary-[0-9a-f]{6}")  # a part of either value
    for where, text in texts.items():
        for value in (secret, plain):
            assert value not in text, f"{value} leaked into {where}"
        assert not partial.search(text), f"part of a secret leaked into {where}"
        assert REDACTED not in text, f"the store had to redact a secret in {where}"
    print(f"red team: {len(ATTACKS)} attacks contained, 0 false passes, "
          f"{len(CONTROLS)} controls passed, {wall:.1f} s")
