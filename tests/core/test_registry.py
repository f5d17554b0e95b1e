import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from clstream.core import registry
from clstream.core.contracts import Model
from clstream.core.errors import SpecError
from clstream.core.protocol import StreamProtocol
from clstream.core.registry import (
    KINDS,
    RegistryError,
    describe,
    names,
    register,
    resolve,
    resolve_model,
    resolve_protocol,
    resolve_system,
    unregister,
)


def system_class_name(name: str) -> str:
    """The name of the class registered as system ``name``."""
    cls = resolve("system", name)
    assert isinstance(cls, type)
    return cls.__name__


def test_builtin_names_registered() -> None:
    assert {"full", "window", "rag", "rag+window"} <= set(names("system"))
    assert "builtin" in names("model")
    assert {"oaks", "seqmem", "clbench"} <= set(names("protocol"))
    assert KINDS == ("protocol", "system", "model", "judge", "policy", "builtin_reply")
    assert {"blind_spectrum_monitoring", "sales_prediction",
            "database_exploration"} <= set(names("policy"))


def test_policies_and_replies_come_from_the_protocols_that_declare_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def toy_replier(policy_of: object) -> object:
        return lambda messages: None

    module = types.ModuleType("declaring_protocol")
    module.PROTOCOL = types.SimpleNamespace(  # type: ignore[attr-defined]
        policies={"toy-task": "declaring_protocol:ToyPolicy"},
        builtin_replies={"toy-format": "declaring_protocol:toy_replier"})
    module.ToyPolicy = object  # type: ignore[attr-defined]
    module.toy_replier = toy_replier  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "declaring_protocol", module)
    register("protocol", "declaring", "declaring_protocol:PROTOCOL")
    try:
        assert "toy-task" in names("policy")
        assert resolve("policy", "toy-task") is object
        assert "toy-format" in names("builtin_reply")
        assert resolve("builtin_reply", "toy-format") is toy_replier
    finally:
        unregister("protocol", "declaring")
        unregister("policy", "toy-task")
        unregister("builtin_reply", "toy-format")


def test_models_and_core_import_no_protocol() -> None:
    """The builtin model finds policies and a protocol's replies through the registry, never
    by a protocol's module; no format of a protocol lies in the core."""
    src = Path(registry.__file__).parents[1]
    files = [*sorted((src / "models").rglob("*.py")), *sorted((src / "core").rglob("*.py"))]
    naming = [str(p.relative_to(src)) for p in files
              if re.search(r"^\s*(from|import) clstream\.protocols", p.read_text(), re.MULTILINE)]
    assert naming == []


def test_models_and_core_name_no_method_but_in_the_registry_table() -> None:
    """A method's formats and the builtin model's replies to them live beside the method; the
    model reaches them through the registry's ``"module:object"`` strings alone."""
    src = Path(registry.__file__).parents[1]
    files = [*sorted((src / "models").rglob("*.py")), *sorted((src / "core").rglob("*.py"))]
    naming = [str(p.relative_to(src)) for p in files
              if "clstream.systems" in p.read_text() and p.name != "registry.py"]
    assert naming == []


def test_every_builtin_reply_entry_resolves_to_a_replier() -> None:
    assert {"ace", "amem", "hipporag", "imprint-writing", "mem0", "memagent",
            "notepad"} <= set(names("builtin_reply"))
    for name in names("builtin_reply"):
        handler = resolve("builtin_reply", name)(lambda task: None)
        assert callable(handler)
        assert handler([]) is None  # an empty request is no method's


def test_resolve_unknown_lists_known() -> None:
    with pytest.raises(SpecError, match="known: .*full"):
        resolve("system", "nope")


def test_register_and_resolve_lazily() -> None:
    register("judge", "json-dumps", "json:dumps")
    import json

    assert resolve("judge", "json-dumps") is json.dumps
    with pytest.raises(ValueError):
        register("judge", "bad", "no-colon")
    unregister("judge", "json-dumps")


def test_a_name_registered_twice_is_refused() -> None:
    target = "clstream.systems.context:RagSystem"
    register("system", "rag", target)  # the same target again: nothing changes
    with pytest.raises(RegistryError, match="system 'rag' is already registered as") as err:
        register("system", "rag", "clstream.systems.context:FullContext")
    assert isinstance(err.value, SpecError) and isinstance(err.value, ValueError)
    assert system_class_name("rag") == "RagSystem"
    try:
        register("system", "rag", "clstream.systems.context:FullContext", replace=True)
        assert system_class_name("rag") == "FullContext"
    finally:
        register("system", "rag", target, replace=True)
    assert system_class_name("rag") == "RagSystem"


@pytest.mark.parametrize("target", ["no-colon", "mod:", ":obj", "a:b:c", ""])
def test_register_rejects_targets_that_are_not_module_colon_object(target: str) -> None:
    with pytest.raises(RegistryError, match="must be 'module:object'"):
        register("judge", "bad", target)
    assert "bad" not in names("judge")


def test_register_rejects_unknown_kinds_and_bad_names() -> None:
    with pytest.raises(RegistryError, match="unknown registry kind 'benchmark'"):
        register("benchmark", "oaks", "clstream.protocols.oaks.loader:load_oaks")
    with pytest.raises(RegistryError, match="unknown registry kind"):
        names("systems")
    with pytest.raises(RegistryError, match="lowercase"):
        register("system", "Rag", "clstream.systems.context:RagSystem")


def test_resolve_is_typed_and_checks_the_kind_of_object(fake_components: str) -> None:
    from clstream.models.builtin import BuiltinReader
    from clstream.systems.context import RagSystem

    assert resolve_system("rag") is RagSystem
    assert resolve_model("builtin") is BuiltinReader
    model = resolve("model", "builtin")()
    assert isinstance(model, Model)
    protocol = resolve_protocol("oaks")
    assert isinstance(protocol, StreamProtocol) and protocol.name == "oaks"
    register("system", "fake-fn", f"{fake_components}:not_a_class")
    try:
        with pytest.raises(RegistryError, match="is not a class"):
            resolve("system", "fake-fn")
    finally:
        unregister("system", "fake-fn")
    register("system", "fake-missing", f"{fake_components}:Nothing")
    try:
        with pytest.raises(RegistryError, match="has no 'Nothing'"):
            resolve("system", "fake-missing")
    finally:
        unregister("system", "fake-missing")


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm now fails
    register("model", "fake-vllm", "vllm:LLM")
    try:
        with pytest.raises(RegistryError, match=r"pip install 'clstream\[vllm\]'"):
            resolve("model", "fake-vllm")
        d = describe("model", "fake-vllm")
        assert d.params is None and d.note is not None and "clstream[vllm]" in d.note
    finally:
        unregister("model", "fake-vllm")


def test_describe_reads_declarations_without_building_anything() -> None:
    hf = describe("model", "hf")
    assert hf.note is None and hf.summary
    assert hf.params is not None and hf.params["dtype"].choices is not None
    assert "bfloat16" in hf.params["dtype"].choices
    assert hf.params["max_model_len"].default is None
    assert hf.params["max_model_len"].type_name == "int"
    assert describe("model", "builtin").params == {}
    as_json = describe("model", "vllm").to_json()
    by_name = {p["name"]: p for p in as_json["params"]}
    assert by_name["tensor_parallel_size"] == {
        "name": "tensor_parallel_size", "type": "int", "default": 1, "minimum": 1,
        "maximum": None, "choices": None, "help": by_name["tensor_parallel_size"]["help"],
    }
    judge = describe("judge", "code")
    assert judge.summary and judge.params is not None and "timeout_s" in judge.params
    with pytest.raises(SpecError, match="unknown judge 'nope'"):
        describe("judge", "nope")


def test_entries_are_typed() -> None:
    entry = registry.entry("model", "hf")
    assert (entry.kind, entry.name, entry.target) == ("model", "hf", "clstream.models.hf:HFModel")
    assert [e.name for e in registry.entries("protocol")] == names("protocol")


def test_optional_backends_import_without_their_extras() -> None:
    code = (
        "import sys\n"
        "for m in ('torch', 'transformers', 'vllm', 'sentence_transformers'):\n"
        "    sys.modules[m] = None\n"
        "import clstream.models.hf, clstream.models.vllm_backend\n"
        "from clstream.core.registry import describe\n"
        "assert describe('model', 'hf').params and describe('model', 'vllm').params\n"
        "from clstream.cli import main\n"
        "sys.exit(main(['list', 'models']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "max_model_len" in done.stdout and "vllm" in done.stdout
