"""The SeqMem solver rules and task block, as the runner puts them into every query."""

from __future__ import annotations

from clstream.core import layout
from clstream.core.types import Query
from clstream.protocols.seqmem import prompts as seqmem_prompts
from clstream.protocols.seqmem.runner import make_query
from clstream.protocols.seqmem.tasks import SeqTask
from clstream.systems import memory_prompts


def test_solver_layout_puts_memory_first_and_the_question_last() -> None:
    query = Query(id="q1", text="Which is heavier?", options=("a feather", "a stone"), kind="mc")
    sections = [memory_prompts.list_section(memory_prompts.RULES_HEADER, ["Check units first."]),
                ""]
    user = seqmem_prompts.solver_messages(sections, query)[1].content
    assert user.index(memory_prompts.RULES_HEADER) < user.index("Question: Which is heavier?")
    assert "A. a feather\nB. a stone\n" in user
    assert user.rstrip().endswith(seqmem_prompts.KIND_INSTRUCTIONS["mc"])
    bare = seqmem_prompts.solver_messages([], Query(id="q2", text="2+2?", kind="math"))[1].content
    assert bare.startswith("Question: 2+2?") and "\\boxed" in bare
    other = seqmem_prompts.solver_messages([], Query(id="q3", text="x", kind="other"))[1].content
    assert other.endswith(seqmem_prompts.DEFAULT_INSTRUCTION)


def test_runner_queries_carry_the_solver_rules_and_the_task_block() -> None:
    task = SeqTask("t1", "def f(x):\n    pass\n", "", "code")
    query = make_query(task, "online/1", "online", tau=1, attempt=1)
    assert query.instructions == seqmem_prompts.SOLVER_SYSTEM
    assert query.prompt == ("Question: def f(x):\n    pass\n"
                            + seqmem_prompts.KIND_INSTRUCTIONS["code"])
    assert query.meta == {"task_id": "t1", "phase": "online", "tau": 1, "attempt": 1}
    system, user = layout.query_messages(query, [])
    assert (system.content, user.content) == (seqmem_prompts.SOLVER_SYSTEM, query.prompt)


def test_template_fingerprint_is_stable_and_sensitive() -> None:
    first = seqmem_prompts.template_fingerprint()
    assert first == seqmem_prompts.template_fingerprint() and len(first) == 64
    saved = seqmem_prompts.SOLVER_SYSTEM
    try:
        seqmem_prompts.SOLVER_SYSTEM = saved + " "
        assert seqmem_prompts.template_fingerprint() != first
    finally:
        seqmem_prompts.SOLVER_SYSTEM = saved
