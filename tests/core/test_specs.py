from typing import Any

import pytest

from clstream.core.errors import SpecError
from clstream.core.specs import ComponentSpec, RunSpec, derive_seed, parse_model_spec
from clstream.core.types import SamplingParams


def test_parse_bare_and_args() -> None:
    assert ComponentSpec.parse("full") == ComponentSpec(name="full")
    spec = ComponentSpec.parse("rag+window:w=8,k=15")
    assert spec.name == "rag+window"
    assert spec.args == {"k": 15, "w": 8}
    assert spec.label == "rag+window:k=15,w=8"
    assert ComponentSpec.parse("x:a=0.5,b=true,c=abc").args == {"a": 0.5, "b": True, "c": "abc"}


@pytest.mark.parametrize("bad", ["", "Rag", "rag:k", "rag:k=", "rag:=3", "rag:k=1,k=2", "rag:K=1"])
def test_parse_rejects(bad: str) -> None:
    with pytest.raises(SpecError):
        ComponentSpec.parse(bad)


def test_model_spec_keeps_path() -> None:
    assert parse_model_spec("builtin").args == {}
    assert parse_model_spec("hf:/tmp/a:b").args == {"target": "/tmp/a:b"}
    with pytest.raises(SpecError):
        parse_model_spec("openai:")


def test_run_id_is_hash_of_spec() -> None:
    base: dict[str, Any] = dict(protocol="oaks", dataset_hash="abc", system=ComponentSpec.parse("rag:k=3"),
                model=parse_model_spec("builtin"))
    a, b = RunSpec(**base), RunSpec(**base)
    assert a.run_id == b.run_id and len(a.run_id) == 16
    assert RunSpec(**base, seed=1).run_id != a.run_id
    assert RunSpec(**base, sampling=SamplingParams(temperature=0.0)).run_id != a.run_id
    # arg order on the command line does not change the id
    other: dict[str, Any] = dict(base, system=ComponentSpec.parse("rag:k=3"))
    assert RunSpec(**other).run_id == a.run_id


def test_derive_seed_stable_and_distinct() -> None:
    assert derive_seed(0, "q@1") == derive_seed(0, "q@1")
    assert derive_seed(0, "q@1") != derive_seed(0, "q@2")
    assert derive_seed(0, "q@1") != derive_seed(1, "q@1")
    assert 0 <= derive_seed(5, "x", 3) < 2**31


def test_model_args_are_part_of_the_spec() -> None:
    spec = parse_model_spec("hf:/m/tiny", "dtype=float32,batch_size=2")
    assert spec.args == {"batch_size": 2, "dtype": "float32", "target": "/m/tiny"}
    assert spec.label == "hf:/m/tiny [batch_size=2,dtype=float32]"
    assert parse_model_spec("openai:qwen").label == "openai:qwen"
    with pytest.raises(SpecError):
        parse_model_spec("hf:/m", "target=/other")
    with pytest.raises(SpecError):
        parse_model_spec("hf:/m", "dtype")
