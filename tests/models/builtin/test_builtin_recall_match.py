"""Which shown experience the builtin reader reuses: matching past tasks and stated answers."""

from __future__ import annotations

from clstream.core import layout
from clstream.core.types import Query
from clstream.models.builtin.recall import recall_answer, stated_answer
from clstream.protocols.seqmem import prompts as seqmem_prompts


def _ex(question: str, output: str, feedback: str, success: bool) -> layout.Experience:
    return layout.Experience(question, output, feedback, success)


def _prompt(experiences: list[layout.Experience], question: str) -> str:
    messages = seqmem_prompts.solver_messages([layout.experiences_section(experiences)],
                                              Query(id="q", text=question, kind="synthetic"))
    assert [m.role for m in messages] == ["system", "user"]
    return messages[1].content


def test_stated_answer() -> None:
    assert stated_answer("Incorrect. The code of Tiro is 47. Correct answer: 47.") == "47"
    assert stated_answer("Incorrect: 3 is wrong. The correct answer is 3.5.") == "3.5"
    assert stated_answer("Correct. The word means river. Correct answer: river.") == "river"
    assert stated_answer("Correct.") is None


def test_recall_answer_uses_the_matching_experience_only() -> None:
    shown = [
        _ex("What is the vault code of Tirovan?", "## Answer: Unknown",
            "Incorrect. The vault code of Tirovan is 4721. Correct answer: 4721.", False),
        _ex("What is the vault code of Bresk?", "## Answer: Unknown",
            "Incorrect. The vault code of Bresk is 1111. Correct answer: 1111.", False),
        _ex("How many zaps make 3 brous?", "## Answer: 12", "Correct.", True),
    ]
    assert recall_answer(_prompt(shown, "What is the vault code of Tirovan?")) == "4721"
    assert recall_answer(_prompt(shown, "Tell me the vault code that belongs to Bresk.")) == "1111"
    assert recall_answer(_prompt(shown, "How many zaps make 3 brous?")) == "12"
    # a different number, a different name, or nothing shown: no recall
    assert recall_answer(_prompt(shown, "How many zaps make 4 brous?")) is None
    assert recall_answer(_prompt(shown, "What is the vault code of Quill?")) is None
    assert recall_answer(_prompt([], "What is the vault code of Tirovan?")) is None
    # a wrong attempt that states no answer is skipped for an older one that does
    later = [*shown, _ex("What is the vault code of Tirovan?", "## Answer: 9", "Incorrect.", False)]
    assert recall_answer(_prompt(later, "What is the vault code of Tirovan?")) == "4721"


def test_recall_reads_experience_kept_as_passages() -> None:
    fb = _ex("What is the vault code of Tirovan?", "## Answer: 1",
             "Incorrect. Correct answer: 4721.", False)
    memory = layout.passages_section([(0, "Ada went to the mill."),
                                      (1, layout.experience_block(fb))])
    prompt = memory + "Question: What is the vault code of Tirovan?\nEnd."
    assert recall_answer(prompt) == "4721"
