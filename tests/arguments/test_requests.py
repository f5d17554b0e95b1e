"""A ``run`` verb's parsed flags become one frozen request per seed, with the flags the run
records and its resume command read from the parser; a protocol's options type must name
exactly the verb's own flags."""

from __future__ import annotations

import argparse
import dataclasses
import pickle
from dataclasses import dataclass
from pathlib import Path

import pytest

from clstream.arguments.requests import (
    command_request,
    per_seed,
    run_request,
    seed_requests,
)
from clstream.core.errors import SpecError
from clstream.core.registry import resolve
from clstream.protocols.oaks.arguments import RunOptions, add_run_oaks_arguments


def parsed(*words: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_oaks_arguments(parser)
    return parser.parse_args(["data.json", "--system", "full", "--out", "r", *words])


def test_a_request_carries_every_flag_typed_and_cannot_be_changed() -> None:
    request = run_request(parsed("--system", "rag:k=8", "--top-k", "5", "--thinking", "on",
                                 "--base-url", "http://a:1/v1", "--base-url", "http://b:2/v1",
                                 "--docs-in-flight", "3", "--transcripts", "none",
                                 "--no-progress", "--model", "builtin"),
                          "oaks", add_run_oaks_arguments, RunOptions)
    assert request.systems == ("full", "rag:k=8") and request.out == "r"
    assert request.options == RunOptions(data="data.json", docs_in_flight=3,
                                         cache_budget_tokens=None)
    assert request.sampling.top_k == 5 and request.sampling.thinking == "on"
    assert request.backend.base_url == ["http://a:1/v1", "http://b:2/v1"]
    assert request.executor.kind == "local"
    assert not request.keeps_transcripts and not request.show_progress
    assert request.recorded["top_k"] == 5 and "system" not in request.recorded
    assert request.resume.startswith("clstream run oaks data.json --system full")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.seed = 3  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(request)) == request  # what a remote worker receives


def test_seeds_give_one_request_each_as_seed_n_gives_it() -> None:
    args = parsed("--seeds", "2,0,2")
    requests = seed_requests(args, "oaks", add_run_oaks_arguments, RunOptions)
    assert [r.seed for r in requests] == [2, 0]
    single = run_request(parsed("--seed", "2"), "oaks", add_run_oaks_arguments, RunOptions)
    assert requests[0].recorded == single.recorded == {"data": "data.json", "seed": 2}
    assert "seeds" not in requests[1].recorded
    assert per_seed(parsed()) == [parsed()]


def test_seed_with_seeds_is_refused_in_one_line() -> None:
    with pytest.raises(SpecError, match="--seed and --seeds"):
        seed_requests(parsed("--seed", "1", "--seeds", "2"), "oaks", add_run_oaks_arguments,
                      RunOptions)


def test_a_path_that_exists_is_recorded_absolute(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.json").write_text("{}")
    request = run_request(parsed(), "oaks", add_run_oaks_arguments, RunOptions)
    assert request.recorded["data"] == str(tmp_path / "data.json")
    assert request.options.data == "data.json"  # the run reads it as typed


@dataclass(frozen=True)
class MissingOptions:
    data: str
    docs_in_flight: int


def test_an_options_type_that_leaves_a_flag_out_is_refused() -> None:
    with pytest.raises(TypeError, match="cache_budget_tokens"):
        run_request(parsed(), "oaks", add_run_oaks_arguments, MissingOptions)


@pytest.mark.parametrize("name", ["oaks", "seqmem", "clbench", "imprint"])
def test_every_protocol_declares_the_options_of_its_own_flags(name: str) -> None:
    protocol = resolve("protocol", name)
    parser = argparse.ArgumentParser()
    protocol.run_command.add_to(parser)
    first = [a for a in parser._actions if not a.option_strings]
    words = ["x"] * len(first) + ["--system", "full", "--out", "r"]
    request = command_request(parser.parse_args(words), name, protocol.run_command)
    assert isinstance(request.options, protocol.run_command.options_type())
