"""Shared run pieces for remote servers: plain progress lines in batch jobs, the count of
answers cut by the token cap, and the refusal of a system too big for the served context."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from clstream.core.errors import SpecError
from clstream.core.registry import canonical_component
from clstream.core.specs import ComponentSpec
from clstream.core.types import SamplingParams
from clstream.driver import progress as driver_progress
from clstream.driver.preflight import check_context, prompt_budget
from clstream.driver.progress import PlainProgress, progress_bar
from clstream.driver.record_fields import cut_by_cap
from clstream.models.concurrency import ConcurrencyLimit
from clstream.models.endpoint import ServerInfo
from clstream.store.db import Record, ResultsStore


def spec(text: str) -> ComponentSpec:
    return canonical_component("system", ComponentSpec.parse(text, "system"))


def test_a_stderr_that_is_not_a_terminal_gets_plain_lines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver_progress, "PROGRESS_INTERVAL_S", 0.05)
    err = io.StringIO()  # read while the thread writes, never emptied under it
    monkeypatch.setattr(sys, "stderr", err)
    limit = ConcurrencyLimit(3, adaptive=True)

    async def answer() -> None:
        ticket = await limit.acquire(0)
        limit.succeeded(ticket, 0.01, 0.02, output_tokens=40)

    bar = progress_bar(10, 2, "rag:k=2")
    assert isinstance(bar, PlainProgress)
    asyncio.run(answer())
    bar.update(3)
    deadline = time.monotonic() + 60  # returns at the first line the thread prints after this
    while " 5/10," not in err.getvalue().rpartition("\n")[0] and time.monotonic() < deadline:
        time.sleep(0.01)  # (a line counts once its newline is written)
    bar.close()
    lines = err.getvalue().strip().splitlines()
    assert all(line.startswith("clstream: progress rag:k=2: ") for line in lines)
    lines = [line for line in lines if " 5/10," in line]  # a line may come before the update
    assert len(lines) >= 2  # one from the thread, one at the close
    assert lines[0].startswith("clstream: progress rag:k=2: 5/10, 0 errors, ")
    assert "requests/s" in lines[0] and "output tokens/s" in lines[0]
    assert re.search(r"concurrency [\d/]*\b3\b", lines[0]) and "ETA " in lines[0]


def test_the_last_line_says_done(capsys: pytest.CaptureFixture[str]) -> None:
    bar = PlainProgress(4, 0, "window", interval=60)
    bar.update(4)
    bar.close()
    bar.close()  # once only
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "4/4" in line and "done" in line


def test_answers_cut_by_the_cap_are_counted(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r1", "toy", "s", "m", "0" * 64, {}, {})
        store.put_records("r1", [
            Record(kind="probe", key="a", payload={"finish_reasons": ["length", "stop"]}),
            Record(kind="probe", key="b", payload={"finish_reasons": ["length"]}),
            Record(kind="probe", key="c", payload={"text": "length"}),
            Record(kind="probe", key="d", payload={"finish_reasons": ["length"]}, error="x"),
            Record(kind="call", key="e", payload={"finish_reasons": ["length"]}),
        ])
        assert cut_by_cap(store, "r1", ("probe",)) == 2
        assert cut_by_cap(store, "r1", ("probe", "call")) == 3


def test_prompt_budgets_come_from_context_budget_parameters() -> None:
    assert prompt_budget(spec("full")) == 120_000
    assert prompt_budget(spec("full:budget=6000")) == 6000
    assert prompt_budget(spec("window:w=4")) is None


def test_a_system_too_big_for_the_served_context_is_refused_naming_both_numbers() -> None:
    model = SimpleNamespace(name="openai:small", server=ServerInfo(context_length=8192))
    sampling = SamplingParams(max_tokens=512)
    with pytest.raises(SpecError) as err:
        check_context(model, sampling, [spec("window:w=4"), spec("full")])
    message = str(err.value)
    assert "120,000" in message and "8,192" in message and "'full" in message
    assert "\n" not in message
    check_context(model, sampling, [spec("full:budget=7000")])
    unknown = SimpleNamespace(name="openai:x", server=ServerInfo())
    check_context(unknown, sampling, [spec("full")])


def test_counts_start_at_the_bar_and_follow_backends_made_later(
        capsys: pytest.CaptureFixture[str]) -> None:
    async def answers(limit: ConcurrencyLimit, n: int) -> None:
        for _ in range(n):
            ticket = await limit.acquire(0)
            limit.succeeded(ticket, 0.0, 0.0, output_tokens=1)

    before = ConcurrencyLimit(2, adaptive=False)
    asyncio.run(answers(before, 5))  # done before the bar: not counted
    bar = PlainProgress(9, 0, "s", interval=60)
    del before  # a backend of an earlier event loop goes away
    later = ConcurrencyLimit(2, adaptive=False)
    asyncio.run(answers(later, 3))
    assert bar._since_start() == (3, 0, 3)
    bar.close()
    assert "requests/s" in capsys.readouterr().err


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from loopback_engine import LoopbackEngine  # noqa: E402

from clstream.core.types import GenerationRequest, Message  # noqa: E402
from clstream.driver.transport import (  # noqa: E402
    TRANSPORT_STREAM,
    TransportLog,
    transport_history,
)
from clstream.models.openai_compat import OpenAICompatModel  # noqa: E402


def _requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(key=f"k{i}", messages=(Message(role="user", content=f"q{i}"),))
            for i in range(n)]


@contextlib.contextmanager
def _remote_run(tmp_path: Path) -> Iterator[tuple[OpenAICompatModel, ResultsStore]]:
    """A model on a loopback engine and a results store holding run ``r1``."""
    with LoopbackEngine(slots=2, service_s=0.01) as engine, \
            ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r1", "toy", "s", "m", "0" * 64, {}, {})
        yield OpenAICompatModel("loop", base_url=engine.base_url), store


def test_a_session_of_a_remote_model_is_saved_with_the_run(tmp_path: Path) -> None:
    async def session(model: OpenAICompatModel, store: ResultsStore) -> None:
        log = TransportLog(model)
        async with model:
            await model.generate(_requests(6))
        log.save(store, "r1")

    with _remote_run(tmp_path) as (model, store):
        asyncio.run(session(model, store))
        asyncio.run(session(model, store))  # a resume: a second session
        TransportLog(model).save(store, "r1")  # a session that sent nothing adds no entry
        TransportLog(SimpleNamespace()).save(store, "r1")  # a local model saves nothing
        sessions = transport_history(store, "r1")
        assert store.state_steps("r1", TRANSPORT_STREAM) == [0, 1]
    assert [s["requests"] for s in sessions] == [6, 6]
    assert sessions[0]["adaptive"] and sessions[0]["history"][0][1:] == [4, "start"]
    assert sessions[0]["errors"] == 0 and sessions[0]["output_tokens"] == 24


def test_a_session_is_saved_as_it_goes_not_only_at_its_end(tmp_path: Path) -> None:
    """A process killed mid-run keeps the counts of what it sent up to its last write."""
    async def killed_session(model: OpenAICompatModel, store: ResultsStore) -> None:
        log = TransportLog(model)
        saver = asyncio.create_task(log.keep_saved(store, "r1", every_s=0.01))
        async with model:
            await model.generate(_requests(4))
        await asyncio.sleep(0.05)
        saver.cancel()  # no final save, as after a kill

    with _remote_run(tmp_path) as (model, store):
        asyncio.run(killed_session(model, store))
        assert store.state_steps("r1", TRANSPORT_STREAM) == [0]  # one entry, rewritten
        assert [s["requests"] for s in transport_history(store, "r1")] == [4]
