"""Environment steps in prompts: the action block naming the task, the step block a memory
keeps (read back exactly whatever its parts hold), steps read from a conversation transcript,
and the builtin model acting with the registered policy of the task a prompt names."""

from __future__ import annotations

import asyncio
import json

from clstream.core import layout
from clstream.core.environment import Turn
from clstream.core.events import Observation
from clstream.core.types import GenerationRequest, Message, Query
from clstream.models.builtin import BuiltinReader, shown_turns
from clstream.protocols.clbench.envs import SpectrumEnv
from clstream.protocols.clbench.envs.spectrum.policy import SpectrumRegistry
from clstream.protocols.clbench.runner import repair_query
from clstream.systems.context import FullContext
from clstream.systems.passages import observation_text

AWKWARD = "Observation (2 lines):\n[step x/1]\n\nAction (0 lines):\n  indented  "


def test_a_step_block_reads_back_exactly() -> None:
    block = layout.step_block("q01", 3, "Instance q01, step 3\nline two", '{"a": 1}', AWKWARD)
    assert block.splitlines()[:3] == ["[step q01/3]", "Observation (2 lines):",
                                      "Instance q01, step 3"]
    (step,) = layout.parse_steps("before\n" + block + "\nafter")
    assert step == layout.ShownStep("q01", 3, "Instance q01, step 3\nline two", '{"a": 1}',
                                    AWKWARD.rstrip())
    empty = layout.step_block("i", 1, "", "x", "")
    assert "Observation (0 lines):" in empty and "Action (1 line):" in empty
    assert layout.parse_steps(empty) == [layout.ShownStep("i", 1, "", "x", "")]
    assert layout.parse_steps(block[:-20]) == []  # cut short: skipped


def test_an_action_block_names_its_task_and_keeps_the_observation() -> None:
    env = SpectrumEnv(0, "short")
    env.reset()
    q = env.begin("scan-001").to_query()
    assert layout.parse_action_block(q.prompt) == ("blind_spectrum_monitoring",
                                                   q.text)
    repaired = repair_query(q, "no JSON object found in the reply.")
    assert repaired.id == f"{q.id}#repair" and '"transmitters"' in repaired.prompt
    assert layout.parse_action_block(repaired.prompt) == ("blind_spectrum_monitoring", q.text)
    assert layout.parse_action_block("Question: Where is Mara?\n## Answer: ...") is None


def test_an_observation_with_its_action_is_kept_as_a_step_block() -> None:
    plain = Observation("scan-001", 1, "Scan scan-001 recorded.")
    assert (plain.query, plain.action) == ("", "")
    assert observation_text(plain) == "Scan scan-001 recorded."
    full = Observation("scan-001", 1, "Scan scan-001 recorded.", 0.5, True,
                       query="Instance scan-001, step 1\npeaks", action='{"transmitters": []}')
    (step,) = layout.parse_steps(observation_text(full))
    assert (step.observation, step.action, step.feedback) == (
        "Instance scan-001, step 1\npeaks", '{"transmitters": []}', "Scan scan-001 recorded.")


def test_steps_are_read_from_a_conversation_transcript() -> None:
    block1 = layout.action_block("Instance a, step 1\nobs one", "t", "Reply with JSON.")
    block2 = layout.action_block("Instance a, step 2\nobs two", "t", "Reply with JSON.")
    messages = (Message(role="system", content="rules"),
                Message(role="user", content=block1),
                Message(role="assistant", content='{"x": 1}'),
                Message(role="user", content="Result of your last action:\nRows:\n1 | 2\n\n"
                        + block2))
    (step,) = layout.transcript_steps(messages)
    assert step == layout.ShownStep("", 0, "Instance a, step 1\nobs one", '{"x": 1}',
                                    "Rows:\n1 | 2")


def test_steps_in_tagged_passages_come_in_tag_order() -> None:
    one = layout.step_block("s1", 1, "Instance s1, step 1", "{}", "first")
    two = layout.step_block("s2", 1, "Instance s2, step 1", "{}", "second")
    memory = layout.passages_section([(4, two), (1, one), (4, two)])
    assert [t.feedback for t in shown_turns(memory, ())] == ["first", "second"]


def test_the_builtin_model_acts_with_the_policy_of_the_task_the_prompt_names() -> None:
    env = SpectrumEnv(1, "short")
    env.reset()
    model = BuiltinReader()
    system = FullContext(model=model)
    history: list[Turn] = []
    policy = SpectrumRegistry()

    async def play() -> None:
        await system.reset()
        for instance_id in env.schedule.instance_ids[:6]:
            q = env.begin(instance_id)
            query = q.to_query()
            reply = (await system.respond(query)).text
            assert json.loads(reply) == policy.act(tuple(history), q.observation)
            result = env.step(reply)
            history.append(Turn(q.observation, reply, result.feedback))
            await system.observe(result.to_event(query.text, reply))

    asyncio.run(play())


def test_a_prompt_of_a_task_without_a_policy_is_read_as_before() -> None:
    block = layout.action_block("Where is Mara?", "no_such_task", "Reply with JSON.")
    request = GenerationRequest(key="k", messages=layout.query_messages(
        Query("q", "Where is Mara?", prompt=block), ["[chunk index 0]\nMara went home.\n\n"]))
    text, _ = BuiltinReader().reply(request)
    assert "## Answer:" in text and not text.startswith("{")


def test_the_steps_of_the_instance_in_progress_open_the_prompt_and_read_back_last() -> None:
    env = SpectrumEnv(0, "short")
    env.reset()
    query = env.begin("scan-001")
    assert query.to_query().prompt == query.to_query(()).prompt
    assert layout.instance_steps_section([]) == ""
    now = layout.step_block("scan-001", 1, "Instance scan-001, step 1", "{}", "now")
    q = query.to_query([now])
    assert q.text == query.observation and q.prompt.startswith(layout.INSTANCE_STEPS_HEADER)
    assert layout.parse_action_block(layout.split_prompt(q.prompt)[1]) == (
        "blind_spectrum_monitoring", q.text)
    old = layout.step_block("s0", 1, "Instance s0, step 1", "{}", "remembered")
    memory, current = layout.split_instance_steps(
        layout.passages_section([(9, old)]) + layout.split_prompt(q.prompt)[0])
    assert layout.INSTANCE_STEPS_HEADER not in memory and current.endswith(now + "\n\n")
    older = layout.step_block("s00", 1, "Instance s00, step 1", "{}", "older")
    # Passages shown newest first: the section after them is no part of the last passage.
    text = layout.user_text([layout.passages_section([(9, old), (2, older)])], q.prompt)
    assert [t.feedback for t in shown_turns(layout.split_prompt(text)[0], ())] == [
        "older", "remembered", "now"]
