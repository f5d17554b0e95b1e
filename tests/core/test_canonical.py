"""Canonical specs: every declared parameter filled in before a spec is hashed, so equal
settings are one run; labels show only what differs from the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from clstream.core.errors import SpecError
from clstream.core.registry import canonical_component, canonical_run_spec, params_of, resolve
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec


def system(text: str) -> ComponentSpec:
    return canonical_component("system", ComponentSpec.parse(text))


def run_spec(system_text: str, model: str = "builtin", canonical: bool = True) -> RunSpec:
    spec = RunSpec(protocol="oaks", dataset_hash="abc", system=ComponentSpec.parse(system_text),
                   model=parse_model_spec(model))
    return canonical_run_spec(spec) if canonical else spec


def test_defaults_are_filled_and_checked(fake_components: str) -> None:
    bare, explicit = system("fake-sys"), system("fake-sys:k=8,mode=plain")
    assert bare.args == {"k": 8, "mode": "plain", "scale": 0.5}
    assert bare == explicit and bare.args == explicit.args
    assert system("fake-sys:scale=1").args["scale"] == 1.0  # a whole number for a float
    assert system("fake-sys:scale=1") == system("fake-sys:scale=1.0")
    for bad, why in [("fake-sys:kk=3", "unknown argument 'kk' .known: k, mode, scale"),
                     ("fake-sys:k=0", "'k' must be >= 1"),
                     ("fake-sys:k=x", "'k' must be an integer"),
                     ("fake-sys:mode=odd", "must be one of plain, fancy")]:
        with pytest.raises(SpecError, match=f"system 'fake-sys': argument {why}|{why}"):
            system(bad)
    with pytest.raises(SpecError, match="unknown system 'nope'"):
        system("nope")


def test_labels_show_only_what_differs_from_the_defaults(fake_components: str) -> None:
    assert system("fake-sys").label == "fake-sys"
    assert system("fake-sys:k=8").label == "fake-sys"
    assert system("fake-sys:k=2").label == "fake-sys:k=2"
    assert system("fake-sys:mode=fancy,k=3").label == "fake-sys:k=3,mode=fancy"
    # not canonical: every argument shows, as typed
    assert ComponentSpec.parse("fake-sys:k=8").label == "fake-sys:k=8"


def test_a_component_that_declares_nothing_is_left_as_typed(fake_components: str) -> None:
    spec = ComponentSpec.parse("fake-undeclared:x=1")
    assert canonical_component("system", spec) == spec


def test_run_ids_of_equal_settings_are_equal(fake_components: str) -> None:
    a, b, c = run_spec("fake-sys"), run_spec("fake-sys:k=8"), run_spec("fake-sys:k=2")
    assert a.run_id == b.run_id != c.run_id
    assert a.canonical_json() == b.canonical_json()
    assert '"defaults"' not in a.canonical_json()  # defaults are never serialized
    assert run_spec("fake-sys", canonical=False).run_id != a.run_id
    again = RunSpec.model_validate_json(a.canonical_json())
    assert again == a and again.run_id == a.run_id
    assert canonical_run_spec(again).system.label == "fake-sys"


def test_rag_and_its_default_k_are_one_run() -> None:
    params = params_of(resolve("system", "rag"))
    assert params is not None
    default_k = params["k"].default
    a, b = run_spec("rag"), run_spec(f"rag:k={default_k}")
    c = run_spec(f"rag:k={default_k + 1}")
    assert a.run_id == b.run_id != c.run_id
    assert a.system.label == b.system.label == "rag"
    assert c.system.label == f"rag:k={default_k + 1}"
    with pytest.raises(SpecError, match="system 'rag': .*argument 'kk'"):
        system("rag:kk=3")


def test_model_specs_keep_their_target_and_fill_backend_defaults() -> None:
    hf = canonical_component("model", parse_model_spec("hf:/m/tiny", "dtype=float32"))
    assert hf.args["target"] == "/m/tiny" and hf.args["dtype"] == "float32"
    assert hf.args["batch_size"] == 8 and hf.args["max_model_len"] is None
    assert hf.label == "hf:/m/tiny [dtype=float32]"
    plain = canonical_component("model", parse_model_spec("hf:/m/tiny", "dtype=auto"))
    assert plain.label == "hf:/m/tiny" and plain == canonical_component(
        "model", parse_model_spec("hf:/m/tiny"))
    assert canonical_component("model", parse_model_spec("openai:qwen")).label == "openai:qwen"
    assert canonical_component("model", parse_model_spec("builtin")).args == {}
    vllm = canonical_component("model", parse_model_spec("vllm:/m", "gpu_memory_utilization=1"))
    assert vllm.args["gpu_memory_utilization"] == 1.0
    assert vllm.label == "vllm:/m [gpu_memory_utilization=1.0]"


@pytest.mark.parametrize("model, args, why", [
    ("builtin", "dtype=float16", "model 'builtin': unknown argument 'dtype' .known: none"),
    ("openai:qwen", "max_retries=3", "model 'openai': unknown argument 'max_retries'"),
    ("hf:/m", "dtype=float8", "model 'hf': argument 'dtype' must be one of"),
    ("hf:/m", "batch_size=0", "model 'hf': argument 'batch_size' must be >= 1"),
    ("hf", None, "model 'hf' needs a model name or path"),
    ("nope:/m", None, "unknown model 'nope'"),
])
def test_model_args_are_checked_against_the_backend(model: str, args: str | None,
                                                    why: str) -> None:
    with pytest.raises(SpecError, match=why):
        canonical_component("model", parse_model_spec(model, args))


def test_a_bad_argument_fails_in_one_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clstream.cli import main

    data = tmp_path / "babi.json"
    assert main(["generate", "oaks-babi", "--seed", "1", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "120", "--out", str(data)]) == 0
    for argv in (["--system", "rag:kk=3"], ["--system", "window", "--model-args", "dtype=x"],
                 ["--system", "window", "--system", "nope"]):
        out = tmp_path / "runs"
        capsys.readouterr()
        assert main(["run", "oaks", str(data), "--out", str(out), "--no-progress", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("clstream: error: ") and err.count("\n") == 1, err
        assert not out.exists()
