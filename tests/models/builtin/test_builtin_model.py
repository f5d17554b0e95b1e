import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clstream.core.contracts import Model
from clstream.core.errors import SpecError
from clstream.core.registry import resolve
from clstream.core.specs import parse_model_spec
from clstream.core.types import GenerationRequest, GenerationResult, Message, Query, SamplingParams
from clstream.models.builtin import BuiltinReader
from clstream.models.builtin import reader as builtin_reader
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks import prompts

CHUNKS = [(0, "Mara went to the kitchen. Tobin went to the garden."), (1, "Mara went to the hall.")]


def request(question: str, key: str = "k", **params: Any) -> GenerationRequest:
    context = prompts.context_text(CHUNKS)
    return GenerationRequest(
        key=key,
        messages=prompts.build_messages(context, Query(key, question)),
        params=SamplingParams(**params),
    )


def generate(model: Model, requests: list[GenerationRequest]) -> list[GenerationResult]:
    return asyncio.run(model.generate(requests))


def test_builtin_is_a_model_in_the_registry() -> None:
    model = resolve("model", "builtin")(**parse_model_spec("builtin").args)
    assert isinstance(model, Model) and model.name == "builtin"
    info = model.describe()
    assert info["backend"] == "builtin" and info["baseline"] is True and info["version"]


def test_builtin_rejects_unknown_arguments_and_targets() -> None:
    with pytest.raises(SpecError, match="temperature"):
        BuiltinReader(temperature=0.1)
    with pytest.raises(SpecError, match="gpt"):
        BuiltinReader(**parse_model_spec("builtin:gpt").args)


def test_builtin_samples_are_identical_and_usage_counted() -> None:
    model = BuiltinReader()
    req = request("Where is Mara?", n=3)
    [result] = generate(model, [req])
    texts = [s.text for s in result.samples]
    assert len(texts) == 3 and len(set(texts)) == 1
    assert texts[0].endswith("## Answer: hall")
    tok = approx_tokenizer()
    assert result.usage.prompt_tokens == tok.count(req.prompt_text)
    assert result.usage.completion_tokens == 3 * tok.count(texts[0])
    assert result.usage.latency_s >= 0 and result.key == "k" and result.ok


def test_builtin_is_deterministic_across_instances_and_order() -> None:
    reqs = [request(q, key=str(i)) for i, q in enumerate(["Where is Tobin?", "Where is Mara?"])]
    first = generate(BuiltinReader(), reqs)
    again = generate(BuiltinReader(), list(reversed(reqs)))
    assert [r.samples[0].text for r in first] == [r.samples[0].text for r in reversed(again)]
    assert [r.key for r in first] == ["0", "1"]
    assert first[0].samples[0].text.endswith("## Answer: garden")


def test_builtin_respects_max_tokens_and_stop() -> None:
    model = BuiltinReader()
    [cut] = generate(model, [request("Where is Mara?", max_tokens=3)])
    assert cut.samples[0].finish_reason == "length"
    assert approx_tokenizer().count(cut.samples[0].text) <= 3
    [stopped] = generate(model, [request("Where is Mara?", stop=("## Answer",))])
    assert "## Answer" not in stopped.samples[0].text
    assert stopped.samples[0].finish_reason == "stop"


def test_builtin_reads_a_context_once_for_many_questions(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = builtin_reader.ReadText.__init__

    def counting(self: builtin_reader.ReadText, passages: list[tuple[int, str]]) -> None:
        built.append(len(passages))
        original(self, passages)

    monkeypatch.setattr(builtin_reader.ReadText, "__init__", counting)
    model = BuiltinReader()
    generate(model, [request("Where is Mara?", key=str(i)) for i in range(5)])
    generate(model, [request("Where is Tobin?")])
    assert built == [2]


def test_builtin_answers_prompts_without_the_oaks_layout() -> None:
    model = BuiltinReader()
    messages = (Message(role="user", content="Ada went to the mill.\n\nWhere is Ada?"),)
    [result] = generate(model, [GenerationRequest(key="x", messages=messages)])
    assert result.samples[0].text.endswith("## Answer: mill")
    blank = GenerationRequest(key="y", messages=(Message(role="user", content=""),))
    [empty] = generate(model, [blank])
    assert empty.samples[0].text.endswith("## Answer: Unknown")


fragments = st.sampled_from(
    [
        "Question:", "Options:", "A. ", "B) ", "[chunk index 3]", "[chunk index x]",
        "Current head index: 2", "\n", "\n\n", " ", "Mara", "went to the", "gave", "the lamp",
        "to", "Who", "Where is", "How many", "or", "more", "?", ".", ",", "é", "##", "Answer:",
    ]
)  # fmt: skip
prose = st.lists(st.one_of(fragments, st.text(max_size=8)), max_size=40).map("".join)


@settings(max_examples=150, deadline=None)
@given(prose, prose)
def test_builtin_never_fails_on_arbitrary_prompts(system_text: str, user_text: str) -> None:
    model = BuiltinReader()
    messages = (Message(role="system", content=system_text), Message(role="user", content=user_text))
    [result] = generate(model, [GenerationRequest(key="z", messages=messages)])
    text = result.samples[0].text
    assert result.ok and "\n## Answer: " in text
    assert result.usage.prompt_tokens == approx_tokenizer().count(system_text + "\n\n" + user_text)
