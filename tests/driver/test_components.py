"""The models a run calls besides its own (:func:`clstream.driver.components.helper_endpoints`):
a system's summarizer or updater named by a model spec is found, and checked before anything is
registered; the system's own model and the offline stand-ins are not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.driver.components import helper_endpoints, system_factory
from clstream.models.builtin import BuiltinReader
from clstream.models.openai_compat import OpenAICompatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from fake_openai_server import StaticWebServer  # noqa: E402


def _run(system: str) -> RunSpec:
    return RunSpec(protocol="imprint", dataset_hash="0" * 64,
                   system=ComponentSpec.parse(system, "system"),
                   model=ComponentSpec(name="builtin"))


@pytest.mark.parametrize(("system", "found"), [
    ("summary:summarizer=openai:w,summarizer_options=base_url=http://h:1/v1",
     ["--system summary:summarizer=openai:w,summarizer_options=base_url=http://h:1/v1 (its "
      "summarizer_options)"]),
    ("scaffold:updater=openai:w", ["--system scaffold:updater=openai:w (its updater_options)"]),
    ("summary", []), ("summary:summarizer=extractive", []), ("rag", []),
])
def test_a_system_s_own_endpoint_models_are_found(system: str, found: list[str]) -> None:
    run, model = _run(system), BuiltinReader()
    helpers = helper_endpoints(run, system_factory(run, model), model)
    assert [flag for flag, _ in helpers] == found
    assert all(isinstance(helper, OpenAICompatModel) for _, helper in helpers)


def test_a_summarizer_endpoint_that_is_no_chat_server_is_refused_before_anything_is_registered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out = tmp_path / "data", tmp_path / "results"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--out",
                 str(data)]) == 0
    capsys.readouterr()
    with StaticWebServer(tmp_path / "site") as static:
        system = f"summary:summarizer=openai:w,summarizer_options=base_url={static.base_url}"
        assert main(["run", "imprint", str(data), "--system", system, "--out", str(out),
                     "--no-progress"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"clstream: error: flag --system {system} (its summarizer_options): "
                           f"model openai:w at {static.base_url}: the server does not answer "
                           "POST /chat/completions")
    assert not out.exists()
