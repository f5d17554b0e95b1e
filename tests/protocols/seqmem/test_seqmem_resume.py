"""Resume after SIGKILL: a SeqMem run killed mid-way (during an online step, during probes)
and rerun ends with exactly the records, snapshots and exported file of an uninterrupted run,
and the rerun never asks the model again for an answer that was already stored."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from clstream.store.db import ResultsStore

SCRIPT = r'''
import asyncio, hashlib, os, signal, sys

from clstream.protocols.seqmem.synthetic import generate_seqmem_synthetic, synthetic_stream
from clstream.protocols.seqmem.commands import export_seqmem
from clstream.core.registry import register
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.models.builtin import BuiltinReader
from clstream.driver.components import system_factory
from clstream.protocols.seqmem.runner import SeqMemPlan, SeqMemRunner
from clstream.store.db import ResultsStore

sys.path.insert(0, sys.argv[4])
from planned import drive_runner

SYSTEM = sys.argv[3]
register("system", SYSTEM, {
    "g-memory": "clstream.systems.gmemory:GMemory",
    "expel-mt": "clstream.systems.expel:ExpelMt",
    "dc-rs": "clstream.systems.curated:DcRs"}[SYSTEM])

class Model(BuiltinReader):
    """The builtin reader that also writes parseable memory updates and dies after N requests."""
    def __init__(self, kill_after, log):
        super().__init__()
        self.kill_after, self.n, self.log = kill_after, 0, log

    def reply(self, request):
        text, tokens = super().reply(request)
        body = "\n\n".join(m.content for m in request.messages if m.role != "system")
        if request.stage == "update":
            h = hashlib.sha256(body.encode()).hexdigest()[:6]
            return (f"ADD: lesson {h}\nAGREE 1\nREFLECTION: check {h}\nINSIGHT: insight {h}\n"
                    f"<cheatsheet>sheet {h}</cheatsheet>"), tokens
        return text, tokens

    async def generate(self, requests):
        for r in requests:
            self.n += 1
            self.log.write(r.key + "\n")
            self.log.flush()
            if self.n == self.kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
        return await super().generate(requests)

out, kill_after = sys.argv[1], int(sys.argv[2])
data = synthetic_stream(generate_seqmem_synthetic(seed=4, tasks=14, holdout=5))
spec = RunSpec(protocol="seqmem", dataset_hash=data.sha256,
               system=ComponentSpec.parse(SYSTEM), model=ComponentSpec(name="builtin"))
with open(os.path.join(out, "requests.log"), "a") as log, ResultsStore(out, writer=True) as store:
    model = Model(kill_after, log)
    make = system_factory(spec, model)
    runner = SeqMemRunner(data.tasks, data.holdout, spec, store, make, data.evaluator().evaluate,
                          SeqMemPlan.build(14, retro_sample=0.7, seed=2))
    drive_runner(runner, store, spec, {"online": "online", "holdout": "hold-out", "retro": "retro"}, model, make)
    export_seqmem(store, store.runs()[0], os.path.join(out, "records.jsonl"))
'''


def _run(script: Path, out: Path, kill_after: int, system: str) -> int:
    out.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, str(script), str(out), str(kill_after), system,
                           str(Path(__file__).resolve().parents[1])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
    return proc.returncode


def _table(out: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every stored record (timings and wall times removed) and every snapshot."""
    with ResultsStore(out) as store:
        run_id = store.runs()[0].run_id
        records = []
        for r in store.iter_records(run_id):
            payload = json.loads(r["payload"])
            payload.pop("timings", None)
            payload.pop("time_s", None)
            records.append((r["kind"], r["key"], r["stream"], r["t"], r["error"], r["stage"],
                            r["prompt_tokens"], r["completion_tokens"],
                            json.dumps(payload, sort_keys=True)))
        states = [(t, json.dumps(store.load_state(run_id, "memory", t), sort_keys=True))
                  for t in store.state_steps(run_id, "memory")]
    return sorted(records), states


def _answered(out: Path) -> set[str]:
    """Query ids of the answers stored so far."""
    with ResultsStore(out) as store:
        run_id = store.runs()[0].run_id
        ids = set()
        for r in store.iter_records(run_id):
            p = json.loads(r["payload"])
            if r["error"] is None and r["kind"] == "online":
                ids.add(f"online/{p['tau']}")
            elif r["error"] is None and r["kind"] == "holdout":
                ids.add(f"holdout/{p['item']}@{p['checkpoint']}")
            elif r["error"] is None and r["kind"] == "retro":
                ids.add(f"retro/{p['tau']}@{p['horizon']}")
        return ids


def _check(tmp_path: Path, system: str, kills: list[int]) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "seqmem_job.py"
    script.write_text(SCRIPT)
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    assert _run(script, reference, 0, system) == 0
    keys = (reference / "requests.log").read_text().splitlines()
    # the first kill lands on the first memory-update call, mid online step
    updates = [i + 1 for i, k in enumerate(keys) if k.startswith("online/") and
               k.count("/") == 2 and not k.endswith("/curate")]
    for n in updates[:1] + kills:
        assert _run(script, killed, n, system) == -signal.SIGKILL
    before = _answered(killed)
    assert before, "the kills must leave some answers stored"
    log_size = len((killed / "requests.log").read_text().splitlines())
    assert _run(script, killed, 0, system) == 0
    final_requests = (killed / "requests.log").read_text().splitlines()[log_size:]
    assert not before & set(final_requests), "an answer stored before was asked for again"
    assert (killed / "records.jsonl").read_text() == (reference / "records.jsonl").read_text()
    assert _table(killed) == _table(reference)


def test_killed_during_online_steps_and_probes_resumes_exactly(tmp_path: Path) -> None:
    _check(tmp_path, "g-memory", kills=[3, 9])


def test_multi_try_and_curator_systems_resume_exactly(tmp_path: Path) -> None:
    _check(tmp_path / "mt", "expel-mt", kills=[13])
    _check(tmp_path / "dc", "dc-rs", kills=[12, 40])
