"""`clstream run clbench --task all` with the four LLM memory methods against a loopback
OpenAI-compatible server answering in every task's action format (the builtin model's
replies, served): the run completes, and a run whose process is killed (SIGKILL) in the
middle of a model call resumes to exactly the records of an uninterrupted run. With a response
cache (``--cache``) no request is answered twice across the two processes; without one, only
the calls of the instances in flight at the kill would be asked again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.protocols.clbench.envs import ENVIRONMENTS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import PolicyServer  # noqa: E402

pytestmark = pytest.mark.slow

MODEL = "served-policy"
SYSTEMS = ("icl", "notepad", "mem0:retriever=bm25", "ace")  # dense retrieval: minutes on a CPU


class KillingServer(PolicyServer):
    """Serves the builtin model's replies; on the ``kill_at``-th completion it kills the
    client process (``victim``) before answering."""

    def __init__(self, kill_at: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kill_at = kill_at
        self.victim: int | None = None
        self.answered: list[str] = []

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        if self.victim is not None and self.kill_at is not None \
                and len(self.requests) >= self.kill_at:
            os.kill(self.victim, signal.SIGKILL)  # this request is never answered
            self.victim = None
            return super().completion(body, fault)
        payload = super().completion(body, fault)
        self.answered.append(json.dumps(body["messages"], sort_keys=True))
        return payload


def argv(server: PolicyServer, out: Path) -> list[str]:
    systems = [arg for name in SYSTEMS for arg in ("--system", name)]
    return ["run", "clbench", "--task", "all", "--schedule", "short", "--rollouts", "1",
            "--seed", "3", "--model", f"openai:{MODEL}", "--base-url", server.base_url,
            "--cache", str(out.parent / f"{out.name}-responses.sqlite"),
            "--max-concurrency", "1", "--no-progress", "--out", str(out), *systems]


def child_env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[3] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def exports(out: Path, tmp_path: Path) -> dict[str, list[str]]:
    texts = {}
    for system in SYSTEMS:
        dest = tmp_path / f"{out.name}-{system}.jsonl"
        assert main(["export", str(out), "--system", system, "--out", str(dest)]) == 0
        texts[system] = sorted(dest.read_text().splitlines())
    return texts


def run_client(server: KillingServer, out: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (the server's builtin replies and the client's
    environments then use both cores), killed by the server when it says so."""
    child = subprocess.Popen([sys.executable, "-m", "clstream", *argv(server, out)],
                             env=child_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    if server.kill_at is not None:
        server.victim = child.pid
    _, err = child.communicate(timeout=900)
    return subprocess.CompletedProcess(child.args, child.returncode, "", err)


def test_all_tasks_with_four_methods_resume_exactly_after_sigkill(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    server = KillingServer(model=MODEL)
    with server:
        done = run_client(server, whole)
        assert done.returncode == 0, done.stderr
    reference = Counter(server.answered)
    tasks = {json.loads(line)["task"] for line in exports(whole, tmp_path)["icl"]
             if json.loads(line).get("kind") == "task"}
    assert tasks == set(ENVIRONMENTS)

    resumed = tmp_path / "resumed"
    server = KillingServer(kill_at=sum(reference.values()) // 2, model=MODEL)
    with server:
        killed = run_client(server, resumed)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        first = Counter(server.answered)
        server.kill_at = None
        done = run_client(server, resumed)
        assert done.returncode == 0, done.stderr
        second = Counter(server.answered) - first
    assert 0 < sum(first.values()) < sum(reference.values())
    # Every answered request is one the uninterrupted run asked, and none is asked more often
    # than it asked it (but the endpoint check, which each process makes once); one may be
    # asked less often: a request the uninterrupted run sent twice at once, before either
    # answer was cached, can be answered from the cache after a resume.
    check = [key for key in reference if "Reply with the word OK." in key]
    assert not first + second - Counter(check) - reference
    assert set(first + second) == set(reference)
    assert exports(resumed, tmp_path) == exports(whole, tmp_path)
