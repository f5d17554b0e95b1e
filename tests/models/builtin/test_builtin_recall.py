"""The builtin reader reads SeqMem past-task records from its prompt: a matching record's
stated answer is reused in the format the current task asks for; prompts without records
(OAKS, memory-free) are answered exactly as before."""

from __future__ import annotations

import asyncio

import pytest

from clstream.core.layout import Experience, experiences_section
from clstream.core.types import GenerationRequest, Message, Query
from clstream.models.builtin import BuiltinReader, recalled_reply
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks import prompts
from clstream.protocols.seqmem import prompts as seqmem_prompts


def ask(messages: tuple[Message, ...]) -> tuple[str, int]:
    [result] = asyncio.run(BuiltinReader().generate([GenerationRequest(key="k",
                                                                       messages=messages)]))
    return result.samples[0].text, result.usage.prompt_tokens


def solver(records: list[Experience], text: str, kind: str = "synthetic",
           options: tuple[str, ...] = ()) -> tuple[Message, ...]:
    query = Query(id="q", text=text, kind=kind, options=options)
    return seqmem_prompts.solver_messages([experiences_section(records)], query)


WRONG = Experience(
    "What is the vault code of Tirovan?", "## Answer: 1234",
    "Incorrect. The vault code of Tirovan is 4721. Correct answer: 4721.", False)
RIGHT = Experience(
    "How many zaps make 3 brous?", "Counted.\n## Answer: 12", "Correct.", True)


def test_a_stated_answer_or_a_correct_answer_given_is_reused() -> None:
    text, _ = ask(solver([WRONG, RIGHT], "What is the vault code of Tirovan?"))
    assert text.endswith("\n## Answer: 4721") and "1234" not in text
    text, _ = ask(solver([WRONG, RIGHT], "How many zaps make 3 brous?"))
    assert text.endswith("\n## Answer: 12")


def test_without_a_matching_record_the_reading_path_answers() -> None:
    plain = ask(solver([], "What is the vault code of Quill?"))
    with_records = ask(solver([WRONG, RIGHT], "What is the vault code of Quill?"))
    assert plain[0].endswith("## Answer: Unknown")
    assert not with_records[0].endswith("4721")
    assert with_records[0].startswith("Closest statement")  # the lexical reading path
    failed_no_answer = Experience("What is the vault code of Quill?", "## Answer: 1",
                                               "Incorrect.", False)
    text, _ = ask(solver([failed_no_answer], "What is the vault code of Quill?"))
    assert "## Answer: 1" not in text  # a wrong answer with no stated correction is not reused


def test_oaks_prompts_are_answered_as_before() -> None:
    passages = [(0, "Mara went to the kitchen. Tobin journeyed to the garden."),
                (1, "Mara travelled to the hallway.")]
    messages = prompts.build_messages(prompts.context_text(passages),
                                      Query(id="q", text="Where is Mara?"))
    text, tokens = ask(messages)
    assert text.endswith("## Answer: hallway")
    whole = "\n\n".join(m.content for m in messages)
    assert tokens == approx_tokenizer().count(whole)


def test_prompt_tokens_count_the_whole_prompt_on_the_recall_path() -> None:
    messages = solver([WRONG, RIGHT], "What is the vault code of Tirovan?")
    _, tokens = ask(messages)
    assert tokens == approx_tokenizer().count("\n\n".join(m.content for m in messages))


@pytest.mark.parametrize("kind, feedback, options, expected", [
    ("math", "Incorrect: the answer 3 is wrong. The correct answer is 16.", (),
     "## Answer: \\boxed{16}"),
    ("mc", "Incorrect: option A is wrong. The correct option is C.", ("x", "y", "z"),
     "## Answer: C"),
])
def test_recalled_answers_follow_the_task_format(kind: str, feedback: str,
                                                 options: tuple[str, ...], expected: str) -> None:
    record = Experience("How many zaps make 4 brous?", "## Answer: 3", feedback, False)
    text, _ = ask(solver([record], "How many zaps make 4 brous?", kind, options))
    assert text.endswith(expected)


def test_recalled_reply_formats() -> None:
    code_block = seqmem_prompts.question_block(Query(id="q", text="def f(x):", kind="code"))
    reply = recalled_reply("def f(x):\n    return x", code_block)
    assert "```python\ndef f(x):\n    return x\n```" in reply
    fenced = "```python\ndef f(x):\n    return 1\n```"
    assert recalled_reply(fenced, code_block).endswith(fenced)
    math_block = seqmem_prompts.question_block(Query(id="q", text="1+1?", kind="math"))
    assert recalled_reply("\\boxed{2}", math_block).endswith("## Answer: \\boxed{2}")
    api = "<<<domain>>>: x,\n<<<api_call>>>: f()"
    assert recalled_reply(api, "Question: q").endswith(api)
    assert recalled_reply("Zorn", "Question: q").endswith("\n## Answer: Zorn")
