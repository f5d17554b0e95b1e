"""Several replicas of one model server (``--base-url`` given several times).

What is checked: the router balances affinities and keeps each where it first went, moves
those of a replica that stopped answering and takes it back after its wait; end to end through
``clstream run oaks`` against loopback servers, every request of one document reaches one
replica, the documents spread over the replicas, a replica that dies mid-run costs no answer
and no error (its documents move), the answers equal a one-server run's, a rerun routes the
same way; the endpoint check and ``clstream check`` check every replica; one URL is what it
always was (same body, same cache key, no routing in the transport record).
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer

from clstream.cli import main as cli
from clstream.core.specs import derive_seed
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.openai_compat import EndpointError, OpenAICompatModel
from clstream.models.replicas import ReplicaRouter, affinity_of, routed_by
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import probe_key

MODEL = "m"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# -- the router -----------------------------------------------------------------------------------


def test_affinities_are_balanced_sticky_and_a_function_of_their_order() -> None:
    names = [f"doc{i}" for i in range(12)]
    router = ReplicaRouter(["a", "b", "c"])
    first = [router.route(n) for n in names]
    assert sorted(first.count(i) for i in range(3)) == [4, 4, 4]
    assert [router.route(n) for n in reversed(names)] == first[::-1]  # sticky
    again = ReplicaRouter(["x", "y", "z"])  # positions, not addresses, decide
    assert [again.route(n) for n in names] == first


def test_a_replica_that_stops_answering_loses_its_affinities_and_comes_back() -> None:
    clock = Clock()
    router = ReplicaRouter(["a", "b", "c"], clock=clock)
    owners = {n: router.route(n) for n in (f"doc{i}" for i in range(6))}
    dead = owners["doc0"]
    assert router.unanswered(dead)  # the others are up
    moved = {n: router.route(n) for n in owners}
    assert all(moved[n] != dead for n in owners)
    assert all(moved[n] == owners[n] for n in owners if owners[n] != dead)
    assert router.moved == sum(1 for o in owners.values() if o == dead)
    clock.now = 0.5
    assert router.route("new0") != dead  # still waiting
    clock.now = 1.5  # its wait is over: it owns the fewest, so it takes the next newcomers
    assert router.route("new1") == dead
    router.answered(dead)
    assert all(router.route(n) == moved[n] for n in owners)  # moved ones stay where they went
    described = router.describe()
    assert described["replicas"][dead]["marked_down"] == 1
    assert described["moved_affinities"] == router.moved


def test_a_failed_retry_after_the_wait_doubles_it_and_one_replica_never_moves() -> None:
    clock = Clock()
    router = ReplicaRouter(["a", "b"], clock=clock)
    assert router.unanswered(0)
    assert router.unanswered(0)  # in flight when it died: no longer wait
    clock.now = 1.0
    router.unanswered(0)  # tried again after its wait and still refused: 2 s now
    clock.now = 2.9
    assert router.route("newcomer") == 1
    single = ReplicaRouter(["only"])
    assert not single.unanswered(0) and single.route("x") == 0


def test_the_affinity_is_the_cell_else_the_request_key_head() -> None:
    assert affinity_of("babi-d0_q1@3") == "babi-d0_q1"
    assert affinity_of("online/3#try2") == "online/3"
    with routed_by("run/doc0"):
        assert affinity_of("babi-d0_q1@3") == "run/doc0"

        async def inner() -> str:
            return affinity_of("x")

        assert asyncio.run(inner()) == "run/doc0"  # tasks inherit it
    assert affinity_of("x@1") == "x"


# -- the backend ----------------------------------------------------------------------------------


def request(key: str) -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=f"q {key}"),),
                             params=SamplingParams(max_tokens=8, seed=1))


def test_one_url_is_what_it_always_was_and_the_cache_key_ignores_replicas() -> None:
    one = OpenAICompatModel(MODEL, base_url="http://127.0.0.1:9/v1")
    listed = OpenAICompatModel(MODEL, base_url=["http://127.0.0.1:9/v1"])
    two = OpenAICompatModel(MODEL, base_url=["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"])
    assert one.describe() == listed.describe()
    assert "replicas" not in one.describe() and "routing" not in one.transport()
    assert two.describe()["replicas"] == ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]
    assert two.describe()["base_url"] == one.describe()["base_url"]
    assert {m.cache_key(request("k@1")) for m in (one, listed, two)} == \
        {one.cache_key(request("k@1"))}
    with pytest.raises(Exception, match="given twice"):
        OpenAICompatModel(MODEL, base_url=["http://h/v1", "http://h/v1/"])


def test_requests_of_one_affinity_reach_one_replica_and_a_dead_one_is_left() -> None:
    with FakeOpenAIServer(model=MODEL) as a, FakeOpenAIServer(model=MODEL) as b:
        model = OpenAICompatModel(MODEL, base_url=[a.base_url, b.base_url], max_retries=0)

        async def ask(cell: str, keys: list[str]) -> list[str]:
            with routed_by(cell):
                results = await model.generate([request(k) for k in keys])
            assert all(r.ok for r in results)
            return [r.samples[0].text for r in results]

        async def scenario() -> None:
            await ask("doc0", [f"d0q{i}" for i in range(4)])
            await ask("doc1", [f"d1q{i}" for i in range(4)])
            owner0 = a if model.router.owner("doc0") == 0 else b
            assert len(owner0.completions) == 4  # one replica per document, both used
            assert len(a.completions) == len(b.completions) == 4
            owner0.plan = lambda body, attempt: "reset"  # it dies: connections reset
            texts = await ask("doc0", [f"d0q{i}" for i in range(4, 8)])
            assert len(texts) == 4 and model.router.moved == 1

        asyncio.run(scenario())
        assert model.transport()["routing"]["moved_affinities"] == 1


def test_the_endpoint_check_checks_every_replica() -> None:
    with FakeOpenAIServer(model=MODEL) as a, FakeOpenAIServer(model="other") as b:
        model = OpenAICompatModel(MODEL, base_url=[a.base_url, b.base_url])
        with pytest.raises(EndpointError, match=b.base_url.rsplit(":", 1)[1]):
            asyncio.run(model.preflight(SamplingParams(max_tokens=8)))
        assert a.preflights and b.model_listings == 1


def test_clstream_check_reports_each_replica(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(model=MODEL) as a, FakeOpenAIServer(model=MODEL) as b:
        assert cli(["check", "--base-url", a.base_url, "--base-url", b.base_url, "--model",
                    MODEL, "--json"]) == 0
        reports = json.loads(capsys.readouterr().out)
        assert [r["endpoint"] for r in reports] == [a.base_url, b.base_url]
        assert a.completions and b.completions


# -- end to end -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "3", "--docs", "6", "--chunks", "4",
                "--chunk-tokens", "120", "--max-questions", "3", "--out", str(path)]) == 0
    return path


def doc_of_seed(data: Path) -> dict[int, str]:
    """The document of each probe, by the wire seed its request carries (run seed 0)."""
    return {derive_seed(0, probe_key(q.question_id, t)): doc.bid
            for doc in load_oaks(data).documents for q in doc.questions
            for t in range(1, doc.num_chunks + 1)}


def run(data: Path, urls: list[str], out: Path) -> None:
    flags = [w for url in urls for w in ("--base-url", url)]
    assert cli(["run", "oaks", str(data), "--system", "full", "--model", f"openai:{MODEL}",
                *flags, "--docs-in-flight", "2", "--max-concurrency", "4", "--no-progress",
                "--out", str(out)]) == 0


def answers(out: Path) -> dict[tuple[str, int], str]:
    dest = out.with_suffix(".jsonl")
    assert cli(["export", str(out), "--system", "full", "--out", str(dest)]) == 0
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    return {(r["question_id"], r["t"]): r["output"] for r in rows}


class DyingServer(FakeOpenAIServer):
    """Answers ``lives`` requests, then resets every connection (as a killed server's peer
    sees it); keeps the bodies it answered in ``answered``."""

    def __init__(self, lives: int | None = None) -> None:
        super().__init__(model=MODEL, plan=self._fate)
        self.lives = lives
        self.answered: list[dict[str, Any]] = []
        self._guard = threading.Lock()

    def __enter__(self) -> DyingServer:
        self.start()
        return self

    def _fate(self, body: dict[str, Any], attempt: int) -> str | None:
        with self._guard:
            if self.lives is not None and len(self.answered) >= self.lives:
                return "reset"
            self.answered.append(body)
            return None


def served_docs(server: DyingServer, docs: dict[int, str]) -> list[str]:
    """The document of every request the server answered."""
    return [docs[b["seed"]] for b in server.answered]


def test_documents_stay_on_one_replica_spread_out_and_route_the_same_on_a_rerun(
        data: Path, tmp_path: Path) -> None:
    docs = doc_of_seed(data)
    with FakeOpenAIServer(model=MODEL) as single:
        run(data, [single.base_url], tmp_path / "single")
    with DyingServer() as a, DyingServer() as b, DyingServer() as c:
        replicas = (a, b, c)
        run(data, [r.base_url for r in replicas], tmp_path / "three")
        owned = [set(served_docs(r, docs)) for r in replicas]
        assert sorted(len(o) for o in owned) == [2, 2, 2]  # six documents, two each
        assert set.union(*owned) == set(docs.values())
        assert sum(len(r.answered) for r in replicas) == len(docs)  # each request once
        for r in replicas:
            r.answered.clear()
        run(data, [r.base_url for r in replicas], tmp_path / "rerun")
        assert [set(served_docs(r, docs)) for r in replicas] == owned
    assert answers(tmp_path / "three") == answers(tmp_path / "single")


def test_a_replica_dying_mid_run_costs_no_answer(data: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    docs = doc_of_seed(data)
    with FakeOpenAIServer(model=MODEL) as single:
        run(data, [single.base_url], tmp_path / "single")
    with DyingServer() as a, DyingServer(lives=10) as b, DyingServer() as c:
        run(data, [a.base_url, b.base_url, c.base_url], tmp_path / "failover")
        assert len(b.answered) == 10 and b.faults  # it died with documents left to serve
        lost = set(served_docs(b, docs))
        survivors = set(served_docs(a, docs)) | set(served_docs(c, docs))
        assert lost <= survivors  # its documents moved to the others
        assert sum(len(r.answered) for r in (a, b, c)) == len(docs)
    capsys.readouterr()
    assert cli(["summary", str(tmp_path / "failover"), "--json"]) == 0
    (summary,) = json.loads(capsys.readouterr().out)["runs"]
    assert summary["status"]["complete"] and summary["status"]["errors"] == 0
    (session,) = summary["transport"]
    assert session["routing"]["moved_affinities"] >= 1
    assert answers(tmp_path / "failover") == answers(tmp_path / "single")
