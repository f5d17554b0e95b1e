"""``clstream plan``: predictions checked against real runs on a loopback server that answers
as the builtin reader does (requests exactly, prompt tokens within 5%), nothing sent and
nothing written where the run would write, a stable JSON shape, the time and money arithmetic
by hand, ``check --save`` feeding ``--throughput``, and one-line errors (docs/plan.md)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import PolicyServer
from loopback_engine import LoopbackEngine

from clstream.cli import main
from clstream.models import plan_costs
from clstream.models.planning import PlannedRequest

MODEL = "policy-model"
RUN_KEYS = {"protocol", "system", "model", "seed", "run_id", "requests", "requests_by_stage",
            "prompt_tokens", "prompt_tokens_by_stage", "prefill_tokens", "completion_tokens",
            "training_skipped", "cost_usd"}


@pytest.fixture(scope="module")
def oaks_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oaks") / "oaks.json"
    assert main(["generate", "oaks-babi", "--seed", "5", "--docs", "2", "--chunks", "5",
                 "--chunk-tokens", "200", "--max-questions", "4", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def seqmem_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seqmem") / "syn.json"
    assert main(["generate", "seqmem-synthetic", "--seed", "1", "--tasks", "16", "--holdout",
                 "4", "--out", str(path)]) == 0
    return path


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["plan", *argv, "--json"]) == 0
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)
    return plan


def _measured(out: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    runs: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["runs"]
    return runs


def _check_against_run(protocol: str, data: Path, systems: list[str], tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    with PolicyServer(model=MODEL) as server:
        argv = [protocol, str(data), *[a for s in systems for a in ("--system", s)],
                "--model", f"openai:{MODEL}", "--base-url", server.base_url,
                "--max-tokens", "64", "--max-concurrency", "4", "--out", str(out)]
        plan = _plan(argv, capsys)
        assert server.requests == [] and server.preflights == []  # nothing sent
        assert not out.exists()  # nothing written where the run writes
        assert main(["run", *argv, "--no-progress"]) == 0
        sent = len(server.requests)
    measured = {r["system"]: r for r in _measured(out, capsys)}
    assert plan["total"]["requests"] == sent
    for run in plan["runs"]:
        real = measured[run["system"]]
        assert run["run_id"] == real["run_id"]
        assert run["requests"] == sum(s["records"] for s in real["tokens_by_stage"].values()
                                      if s["prompt"] > 0)
        assert abs(run["prompt_tokens"] / real["tokens"]["prompt"] - 1) <= 0.05, (run, real)
        assert run["completion_tokens"]["max"] == 64 * run["requests"]


def test_oaks_plan_predicts_the_loopback_run(oaks_data: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _check_against_run("oaks", oaks_data, ["full", "rag:k=2"], tmp_path, capsys)


def test_seqmem_plan_predicts_the_loopback_run(seqmem_data: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _check_against_run("seqmem", seqmem_data, ["memory-free", "exp-recent"], tmp_path, capsys)


def test_the_json_shape_and_the_text_report(oaks_data: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["oaks", str(oaks_data), "--system", "full", "--out", str(tmp_path / "r")]
    plan = _plan(argv, capsys)
    assert set(plan) == {"plan_version", "runs", "total", "cache", "tokenizers", "throughput",
                         "time_s", "notes"}
    (run,) = plan["runs"]
    assert set(run) == RUN_KEYS
    assert set(plan["total"]) == RUN_KEYS - {"protocol", "system", "model", "seed", "run_id",
                                             "training_skipped"}
    assert plan["cache"] == {"tokens": None, "block_size": 16}
    assert plan["tokenizers"]["builtin"]["name"] == "approx-v1"
    # With the builtin model the plan is the run: its counts are the builtin's own, and with
    # --exact (every reply read) its expected completions too.
    out = tmp_path / "r"
    assert main(["run", *argv, "--no-progress"]) == 0
    (real,) = _measured(out, capsys)
    assert run["prompt_tokens"] == real["tokens"]["prompt"]
    (exact,) = _plan([*argv, "--exact"], capsys)["runs"]
    assert exact["completion_tokens"]["expected"] == real["tokens"]["completion"]
    assert {k: v for k, v in exact.items() if k != "completion_tokens"} == {
        k: v for k, v in run.items() if k != "completion_tokens"}
    assert main(["plan", *argv]) == 0
    text = capsys.readouterr().out
    assert text.startswith("run ") and "oaks full" in text and "note: counts assume" in text


def test_prefill_caching_time_and_money_by_hand() -> None:
    def request(prompt: tuple[int, ...], max_tokens: int, expected: int | None
                ) -> PlannedRequest:
        return PlannedRequest("openai:m", "generate", prompt, max_tokens, expected)

    shared = tuple(range(32))  # two full blocks of 16
    first = request((*shared, 100, 101), 10, 4)  # 34 tokens: 2 blocks + a 2-token tail
    second = request((*shared, 200), 10, 6)  # the 2 blocks hit, 1 tail token computed
    (run,), total = plan_costs.figures([[first, second]])
    assert run == total
    assert total["prompt_tokens"] == 67
    assert total["prefill_tokens"] == {"computed": 34 + 1, "lower_bound": 32 + 2 + 1}
    assert total["completion_tokens"] == {"max": 20, "expected": 10}
    # A cache of one block keeps only the head of the first prompt: the second misses block 2.
    _, small = plan_costs.figures([[first, second]], cache_tokens=16)
    assert small["prefill_tokens"]["computed"] == 34 + 16 + 1
    # Replies read for a sample only: the run's expected completions are the sample's mean.
    sampled = request((*shared, 300), 10, None)
    (one, two), both = plan_costs.figures([[first, sampled, second], [sampled, second]])
    assert one["completion_tokens"]["expected"] == 15 and two["completion_tokens"][
        "expected"] == 12
    assert both["completion_tokens"]["expected"] == 27  # the runs' own estimates, summed
    seconds = plan_costs.time_s(total, prefill_tps=7.0, decode_tps=2.0)
    assert seconds == {"prefill": 5.0, "max": 5.0 + 10.0, "expected": 5.0 + 5.0}
    price = {"prompt": 1.0, "cached": 0.5, "completion": 4.0, "reasoning": 4.0}
    dollars = plan_costs.cost_usd(total, price)
    # 35 computed at $1, 32 cached at $0.50, 20 (or 10) completion at $4, per million.
    assert dollars["max"] == pytest.approx((35 + 16 + 80) / 1e6)
    assert dollars["expected"] == pytest.approx((35 + 16 + 40) / 1e6)


def test_throughputs_and_prices_from_files(oaks_data: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "speed.json"
    with LoopbackEngine(slots=2, service_s=0.01, tokens=4) as engine:
        assert main(["check", "--base-url", engine.base_url, "--model", "loop",
                     "--save", str(saved)]) == 0
    speed = json.loads(saved.read_text())
    assert speed["prefill_tokens_per_s"] > 0 and speed["decode_tokens_per_s"] > 0
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"builtin": {"prompt": 2.0, "completion": 8.0}}))
    plan = _plan(["oaks", str(oaks_data), "--system", "full", "--throughput", str(saved),
                  "--decode-tps", "50", "--prices", str(prices)], capsys)
    total = plan["total"]
    assert plan["throughput"] == {"prefill_tokens_per_s": speed["prefill_tokens_per_s"],
                                  "decode_tokens_per_s": 50, "source": str(saved)}
    prefill = total["prefill_tokens"]["computed"] / speed["prefill_tokens_per_s"]
    assert plan["time_s"]["max"] == pytest.approx(prefill + total["completion_tokens"]["max"] / 50)
    cached = total["prompt_tokens"] - total["prefill_tokens"]["computed"]
    assert total["cost_usd"]["max"] == pytest.approx(
        (total["prefill_tokens"]["computed"] * 2.0 + cached * 2.0
         + total["completion_tokens"]["max"] * 8.0) / 1e6)


def _status(argv: list[str]) -> int | str | None:
    try:
        return main(argv)
    except SystemExit as ended:  # argparse's refusal
        return ended.code


@pytest.mark.parametrize("extra, says", [
    (["--cache-tokens", "0"], "--cache-tokens: must be >= 1"),
    (["--prefill-tps", "-3"], "--prefill-tps: must be a number > 0"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_a_bad_flag_is_one_line_and_exit_2(oaks_data: Path, extra: list[str], says: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert _status(["plan", "oaks", str(oaks_data), "--system", "full", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def test_a_spec_naming_one_run_twice_plans_it_once(oaks_data: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "twice.toml"
    spec.write_text(f"""out = "results"
[defaults]
model = "builtin"
data = "{oaks_data}"
[[run]]
protocol = "oaks"
systems = ["rag:k=4", "full"]
[[run]]
protocol = "oaks"
systems = ["rag:k=4,dedupe=0", "window"]
docs_in_flight = 1
""")
    once = tmp_path / "once.toml"
    once.write_text(f"""out = "results"
[[run]]
protocol = "oaks"
model = "builtin"
data = "{oaks_data}"
systems = ["rag:k=4", "full", "window"]
""")
    twice_plan, once_plan = _plan(["--spec", str(spec)], capsys), _plan(["--spec", str(once)],
                                                                         capsys)
    assert [r["run_id"] for r in twice_plan["runs"]] == [r["run_id"] for r in once_plan["runs"]]
    assert twice_plan["total"] == once_plan["total"]
    assert not (tmp_path / "results").exists()


def test_a_sample_of_replies_counts_every_request_and_estimates_completions(
        oaks_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """OAKS answers feed nothing back, so for request-planning systems only a sample of the
    replies is read, walked (the default: 12 of 40 here) or dry-run (a bounded cache: 8 of
    40): every count but the expected completions stays that of reading every reply
    (--exact), and those stay within 15% here (deterministic: the same sample every time)."""
    from clstream.driver import dry_run

    argv = ["oaks", str(oaks_data), "--system", "full", "--system", "rag:k=2", "--model",
            "openai:m", "--out", str(tmp_path / "r")]
    monkeypatch.setattr(dry_run, "REPLY_SAMPLE", 8)
    monkeypatch.setattr(dry_run, "WALKED_REPLY_SAMPLE", 12)
    for extra, read in (([], 12), (["--cache-tokens", "100000"], 8)):
        every = _plan([*argv, *extra, "--exact"], capsys)
        sampled = _plan([*argv, *extra], capsys)
        for whole, part in zip(every["runs"], sampled["runs"], strict=True):
            assert {k: v for k, v in part.items() if k != "completion_tokens"} == {
                k: v for k, v in whole.items() if k != "completion_tokens"}
            assert part["completion_tokens"]["max"] == whole["completion_tokens"]["max"]
            assert abs(part["completion_tokens"]["expected"]
                       / whole["completion_tokens"]["expected"] - 1) <= 0.15
        assert any(f"replies to {read} of its 40 requests" in n for n in sampled["notes"])
        assert not any("replies to" in n for n in every["notes"])


def test_a_walked_plan_is_the_dry_run_figure_by_figure(
        oaks_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every OAKS context strategy is counted from its prompt parts without running it
    (docs/plan.md §2): the same plan, key by key and figure by figure, as running each run
    and reading every reply (--exact), shared blocks across runs included."""
    from clstream.driver import dry_run

    argv = ["oaks", str(oaks_data), "--system", "full", "--system", "window:w=3", "--system",
            "rag:k=2", "--system", "rag+window:k=2,w=2", "--model", "openai:m", "--out",
            str(tmp_path / "r")]
    exact = _plan([*argv, "--exact"], capsys)

    def no_run(*args: Any) -> int:
        raise AssertionError("a walked plan runs nothing")

    monkeypatch.setattr(dry_run, "WALKED_REPLY_SAMPLE", 10**6)  # every reply, as --exact
    # A system that cannot be walked is run, beside walked ones, with the same figures.
    mixed = [*argv[:2], "--system", "memory-free", *argv[2:]]
    mixed_exact = _plan([*mixed, "--exact"], capsys)
    ran: list[str] = []
    run = dry_run._run

    def counted(planned: Any, *args: Any) -> int:
        ran.append(planned.label)
        return run(planned, *args)

    monkeypatch.setattr(dry_run, "_run", counted)
    assert _plan(mixed, capsys) == mixed_exact
    assert ran == ["memory-free"]
    monkeypatch.setattr(dry_run, "_run", no_run)
    assert _plan(argv, capsys) == exact
    assert [r["system"] for r in exact["runs"]] == ["full", "window:w=3", "rag:k=2",
                                                   "rag+window:k=2,w=2"]
    # What the walks froze out of the collector's sight is given back; what a caller froze
    # stays frozen, and the plan is the same.
    assert gc.get_freeze_count() == 0
    freeze, unfreeze, calls = gc.freeze, gc.unfreeze, []
    freeze()
    try:
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        assert _plan(argv, capsys) == exact and calls == []
    finally:
        unfreeze()


def test_where_answers_feed_back_every_reply_is_read(
        seqmem_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SeqMem shows each answer's feedback to the system: a plan reads every reply, however
    small the sample would be."""
    from clstream.driver import dry_run

    argv = ["seqmem", str(seqmem_data), "--system", "memory-free", "--system", "exp-recent",
            "--out", str(tmp_path / "r")]
    every = _plan(argv, capsys)
    monkeypatch.setattr(dry_run, "REPLY_SAMPLE", 2)
    assert _plan(argv, capsys) == every
    assert not any("replies to" in n for n in every["notes"])


def test_seeds_plan_every_seed_as_run_runs_them(oaks_data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``plan ... --seeds 0,1`` plans both seeds' runs, with the ids ``run --seeds`` gives
    them, and a spec file entry's own ``seeds`` the same."""
    argv = ["oaks", str(oaks_data), "--model", "builtin", "--system", "full", "--system",
            "window:w=2"]
    plan = _plan([*argv, "--seeds", "0,1"], capsys)
    one = [_plan([*argv, "--seed", str(seed)], capsys) for seed in (0, 1)]
    assert [r["run_id"] for r in plan["runs"]] == [
        r["run_id"] for p in one for r in p["runs"]]
    assert len({r["run_id"] for r in plan["runs"]}) == 4
    assert [(r["system"], r["seed"]) for r in plan["runs"]] == [
        ("full", 0), ("window:w=2", 0), ("full", 1), ("window:w=2", 1)]
    capsys.readouterr()
    assert main(["plan", *argv, "--seeds", "0,1"]) == 0
    rows = [line.split()[:4] for line in capsys.readouterr().out.splitlines()
            if line.startswith("oaks ")]
    assert rows[:2] == [["oaks", "full", "seed", "0"], ["oaks", "window:w=2", "seed", "0"]]
    assert len({tuple(row) for row in rows}) == 4  # no two rows alike
    assert plan["total"]["requests"] == sum(p["total"]["requests"] for p in one)
    out = tmp_path / "results"
    capsys.readouterr()
    assert main(["run", *argv, "--seeds", "0,1", "--out", str(out), "--no-progress"]) == 0
    assert {r["run_id"] for r in _measured(out, capsys)} == {r["run_id"] for r in plan["runs"]}
    spec = tmp_path / "seeds.toml"
    spec.write_text(f'out = "r"\n[[run]]\nprotocol = "oaks"\nmodel = "builtin"\n'
                    f'data = "{oaks_data}"\nsystems = ["full", "window:w=2"]\nseeds = "0,1"\n')
    assert [r["run_id"] for r in _plan(["--spec", str(spec)], capsys)["runs"]] == [
        r["run_id"] for r in plan["runs"]]
    assert not (tmp_path / "r").exists()
