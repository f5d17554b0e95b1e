"""A run killed with SIGKILL at any point resumes exactly: killed mid-ingestion (a memory that
calls the model for every document) and mid-answering, the finished run's records equal an
uninterrupted run's, and no model call is made twice. A method that produces an artifact has
its content hash recorded, and a changed artifact stops the resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from clstream.cli import main
from clstream.core import registry
from clstream.core.contracts import Artifact
from clstream.core.events import Event
from clstream.core.types import GenerationResult
from clstream.store.db import ResultsStore
from clstream.systems.experience import MemoryFree

SLOW_MODEL = textwrap.dedent('''
    import asyncio, sys
    from clstream.core import registry
    from clstream.models.builtin import BuiltinReader

    class SlowBuiltin(BuiltinReader):
        async def generate(self, requests):
            await asyncio.sleep(0.02 * len(requests))
            return await super().generate(requests)

    registry.register("model", "slow-builtin", "slow_model:SlowBuiltin")
    from clstream.cli import main
    sys.exit(main(sys.argv[1:]))
''')


def records(out: Path) -> dict[str, list[tuple[str, str, str]]]:
    with ResultsStore(out) as store:
        return {run.system: sorted((r.kind, r.key, json.dumps(r.payload, sort_keys=True))
                                   for r in store.read_records(run.run_id))
                for run in store.runs()}


def count(out: Path, kind: str) -> int:
    database = out / "results.sqlite"
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(database) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM records WHERE kind=?",
                                    (kind,)).fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@pytest.fixture(scope="module")
def news(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imprint") / "news"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "2",
                 "--out", str(out)]) == 0
    return out


@pytest.mark.slow
@pytest.mark.parametrize("system, kill_at", [
    ("scaffold:ratio=32", ("call", 3)),       # mid-ingestion: a model call per document
    ("summary:tokens=64,chunk=512", ("item", 6)),  # mid-answering, memory built at finalize
    ("agentic-rag:k=2,search_first=true", ("item", 6)),  # mid-answering, calls per query
])
def test_sigkill_then_resume_equals_an_uninterrupted_run(
        news: Path, tmp_path: Path, system: str, kill_at: tuple[str, int]) -> None:
    (tmp_path / "slow_model.py").write_text(SLOW_MODEL)
    argv = ["run", "imprint", str(news), "--system", system, "--model",
            "slow-builtin", "--samples", "2", "--batch", "2", "--parallel", "1",
            "--no-progress"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    # The uninterrupted run has nothing to do with the kill: it runs alongside (its model
    # mostly sleeps), in a process of its own.
    uninterrupted = subprocess.Popen([sys.executable, str(tmp_path / "slow_model.py"), *argv,
                                      "--out", str(whole)], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
    try:
        proc = subprocess.Popen([sys.executable, str(tmp_path / "slow_model.py"), *argv,
                                 "--out", str(killed)], env=env, stderr=subprocess.DEVNULL)
        kind, at = kill_at
        deadline = time.monotonic() + 120
        while count(killed, kind) < at and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        calls_before = count(killed, "call")
        done = subprocess.run([sys.executable, str(tmp_path / "slow_model.py"), *argv, "--out",
                               str(killed)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        _, err = uninterrupted.communicate(timeout=300)
        assert uninterrupted.returncode == 0, err
    finally:
        if uninterrupted.poll() is None:  # a failure above: leave no process behind
            uninterrupted.kill()
            uninterrupted.communicate()
    assert records(killed) == records(whole)
    assert count(killed, "call") == count(whole, "call") >= calls_before


class ArtifactMaker(MemoryFree):
    """Writes its documents to a file at finalize and answers with nothing else: the smallest
    method with an artifact (the contract the parametric methods use)."""

    name = "artifact-maker"
    directory: ClassVar[Path] = Path(".")

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.seen: list[str] = []
        self.path: Path | None = None

    async def observe(self, event: Event) -> list[GenerationResult]:
        self.seen.append(getattr(event, "doc_id", ""))
        return []

    async def finalize(self) -> list[GenerationResult]:
        self.path = self.directory / "notes.txt"
        self.path.write_text("\n".join(self.seen))
        return []

    @property
    def artifact(self) -> Artifact | None:
        return None if self.path is None else Artifact(str(self.path), "notes")

    def snapshot(self) -> dict[str, Any]:
        return {"seen": self.seen, "path": None if self.path is None else str(self.path)}

    def restore(self, state: dict[str, Any]) -> None:
        self.seen = list(state["seen"])
        self.path = None if state["path"] is None else Path(state["path"])


def test_an_artifact_is_hashed_and_checked_on_resume(
        news: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ArtifactMaker.directory = tmp_path
    registry.register("system", "artifact-maker", f"{__name__}:ArtifactMaker")
    try:
        out = tmp_path / "results"
        argv = ["run", "imprint", str(news), "--system", "artifact-maker", "--samples", "1",
                "--out", str(out), "--no-progress"]
        assert main(argv) == 0
        with ResultsStore(out) as store:
            run = store.runs()[0]
            state = store.load_state(run.run_id, "all/ingest")
        assert state is not None
        recorded = state[1]["artifact"]
        assert recorded["kind"] == "notes" and len(recorded["sha256"]) == 64
        with ResultsStore(out, writer=True) as store:
            store.delete_run(run.run_id)
        assert main(argv) == 0
        (tmp_path / "notes.txt").write_text("tampered")
        with sqlite3.connect(out / "results.sqlite") as conn:
            conn.execute("DELETE FROM records WHERE kind='item'")
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "changed since it was recorded" in err and len(err.splitlines()) == 1
    finally:
        registry.unregister("system", "artifact-maker")
