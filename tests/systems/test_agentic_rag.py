"""Agentic RAG (ImprintBench §3.1; brief §7): at most k searches, each returning one document not
shown yet, then one answering call with n samples; the text protocol and OpenAI tool calls."""

from __future__ import annotations

import pytest
from fake_openai_server import PolicyServer
from imprint_fakes import Scripted, corpus, ingest, item, run, user_text

from clstream.core import layout
from clstream.core.registry import resolve
from clstream.core.types import GenerationRequest, SamplingParams
from clstream.models.builtin import BuiltinReader
from clstream.models.openai_compat import OpenAICompatModel
from clstream.systems import corpus_prompts
from clstream.systems.agentic_rag import AgenticRag

QUESTION = "Who is chief executive of Acme Corp?"


def _found(request: GenerationRequest) -> list[int]:
    return [i for i, _ in layout.parse_passages(layout.split_prompt(user_text(request))[0])
            if "[chunk index" in user_text(request)]


def _always_search(request: GenerationRequest) -> str:
    if request.stage == "search":
        return "SEARCH: Acme Vell harbor Osk bridge"
    return "## Answer: Jonas Berg"


def test_text_protocol_spends_at_most_k_searches_on_unseen_documents() -> None:
    model = Scripted(_always_search)
    system = AgenticRag(model, SamplingParams(n=4), k=3)
    run(ingest(system, corpus()))
    response = run(system.respond(item("q1", QUESTION)))
    stages = [r.stage for r in response.results]
    assert stages == ["search", "search", "search", "generate"]
    decisions, answer = model.of_stage("search"), model.of_stage("generate")[0]
    assert [r.params.n for r in decisions] == [1, 1, 1] and answer.params.n == 4
    assert all(r.tools == () for r in model.requests)
    assert "SEARCH: <words" in decisions[0].messages[0].content
    # Each search added one document never shown before; the answer shows all three.
    assert [len(_found(r)) for r in decisions] == [0, 1, 2]
    shown = _found(answer)
    assert len(shown) == 3 == len(set(shown))
    assert "Acme" in user_text(answer) and corpus_prompts.SEARCH_LOG_HEADER.split("(")[0] not in \
        user_text(answer)
    assert len(response.results[-1].samples) == 4
    assert "Your searches so far (2 of 3 used)" in user_text(decisions[2])


def test_a_search_with_no_match_still_counts() -> None:
    model = Scripted(lambda r: "SEARCH: zebra" if r.stage == "search" else "## Answer: none")
    system = AgenticRag(model, k=2)
    run(ingest(system, corpus()))
    response = run(system.respond(item("q1", QUESTION)))
    assert [r.stage for r in response.results] == ["search", "search", "generate"]
    assert 'no further document matched' in user_text(model.of_stage("search")[1])
    assert _found(model.of_stage("generate")[0]) == []


def test_an_answer_ends_the_search_phase() -> None:
    def reply(request: GenerationRequest) -> str:
        if request.stage == "search" and "[chunk index" not in user_text(request):
            return "I should look this up.\nSEARCH: Acme chief executive"
        return "It is in the document.\n## Answer: Jonas Berg"

    model = Scripted(reply)
    system = AgenticRag(model, k=5)
    run(ingest(system, corpus()))
    response = run(system.respond(item("q1", QUESTION)))
    assert [r.stage for r in response.results] == ["search", "search", "generate"]
    assert len(_found(model.of_stage("generate")[0])) == 1


def test_builtin_answers_at_once_unless_the_system_searches_first() -> None:
    system = AgenticRag(BuiltinReader(), k=3)
    run(ingest(system, corpus()))
    plain = run(system.respond(item("q1", "Who replaced Maria Lopez?")))
    assert len(plain.results) == 2 and "Nothing in the passages" in plain.text
    seeded = AgenticRag(BuiltinReader(), k=3, search_first=True)
    run(ingest(seeded, corpus()))
    found = run(seeded.respond(item("q1", "Who replaced Maria Lopez?")))
    answer = found.text.rsplit("## Answer:", 1)[1]
    assert "Jonas" in answer or "Berg" in answer


def test_batched_queries_match_one_at_a_time_and_memory_is_unchanged() -> None:
    system = AgenticRag(Scripted(_always_search), k=2)
    run(ingest(system, corpus()))
    before = system.snapshot()
    queries = [item(f"q{i}", q) for i, q in enumerate([QUESTION, "What reopened at Vell?"])]
    together = run(system.respond_batch(queries))
    alone = [run(system.respond(q)) for q in queries]
    assert [[r.model_dump() for r in x.results] for x in together] == \
        [[r.model_dump() for r in x.results] for x in alone]
    assert system.snapshot() == before
    restored = AgenticRag(Scripted(_always_search), k=2)
    restored.restore(before)
    again = run(restored.respond(queries[0]))
    assert [r.model_dump() for r in again.results] == [r.model_dump() for r in alone[0].results]


def test_failed_decision_call_is_the_response_error() -> None:
    system = AgenticRag(Scripted(lambda r: None if r.stage == "search" else "## Answer: x"), k=2)
    run(ingest(system, corpus()))
    response = run(system.respond(item("q1", QUESTION)))
    assert response.error == "scripted failure" and len(response.results) == 1


def test_tool_calls_when_the_model_declares_them() -> None:
    asked: list[str] = []

    def calls(request: GenerationRequest) -> list[dict[str, str]]:
        query = "Acme chief executive" if not asked else "harbor"
        asked.append(query)
        return [{"id": "c1", "name": "search", "arguments": f'{{"query": "{query}"}}'},
                {"id": "c2", "name": "other", "arguments": "{}"}]

    model = Scripted(lambda r: "" if r.stage == "search" else "## Answer: Jonas Berg",
                     tools=True, calls=calls)
    system = AgenticRag(model, k=2)
    assert system.describe()["calling_used"] == "tools"
    run(ingest(system, corpus()))
    response = run(system.respond(item("q1", QUESTION)))
    assert [r.stage for r in response.results] == ["search", "search", "generate"]
    decisions = model.of_stage("search")
    assert all(r.tools == (corpus_prompts.SEARCH_TOOL,) for r in decisions)
    assert model.of_stage("generate")[0].tools == ()
    assert "search tool" in decisions[0].messages[0].content
    assert len(_found(model.of_stage("generate")[0])) == 2


def test_tool_arguments_that_are_not_json_search_their_text() -> None:
    assert corpus_prompts.tool_query({"arguments": '{"query": " Acme "}'}) == ("Acme", "")
    assert corpus_prompts.tool_query({"arguments": "Acme boss"}) == ("Acme boss",
                                                                     "arguments are not JSON")
    assert corpus_prompts.tool_query({"arguments": '{"q": 1}'})[1] == "no string 'query' argument"
    assert corpus_prompts.parse_search_lines(
        "SEARCH: a\n**Search:** b\n## Answer: c\nSEARCH: d") == ["a", "b"]


def test_tool_calling_against_an_openai_server() -> None:
    """The search tool goes on the wire, the server's scripted tool call comes back on the
    sample, the system searches with it and the builtin-backed server answers from the
    document found."""

    def plan(body: dict[str, object]) -> list[tuple[str, dict[str, object]]] | None:
        messages = body["messages"]
        assert isinstance(messages, list)
        if "[chunk index" in messages[-1]["content"]:
            return None  # a document is shown: answer
        return [("search", {"query": "Acme chief executive replaced"})]

    with PolicyServer(tool_plan=plan) as server:
        model = OpenAICompatModel("served", base_url=server.base_url, max_retries=0)
        assert model.describe()["tools"] is True
        system = AgenticRag(model, SamplingParams(n=2), k=3)
        run(ingest(system, corpus()))
        response = run(system.respond(item("q1", "Who replaced Maria Lopez?")))
        bodies = server.completions
    assert [r.stage for r in response.results] == ["search", "search", "generate"]
    first = response.results[0].samples[0]
    assert first.tool_calls and first.tool_calls[0]["name"] == "search"
    assert bodies[0]["tools"][0]["function"]["name"] == "search"
    assert "tools" not in bodies[-1] and bodies[-1]["n"] == 2
    answer = response.text.rsplit("## Answer:", 1)[1]
    assert "Jonas" in answer or "Berg" in answer


def test_registered_and_checks_arguments() -> None:
    cls = resolve("system", "agentic-rag")
    with pytest.raises(Exception, match="calling"):
        cls(BuiltinReader(), calling="smoke")
    assert cls(BuiltinReader(), k=10).describe()["args"]["k"] == 10


def test_wire_sends_tools_only_when_given_and_reads_tool_calls() -> None:
    from clstream.core.types import Message
    from clstream.models.cache import ResponseCache
    from clstream.models.wire import build_body, parse_samples

    plain = GenerationRequest(key="k", messages=(Message(role="user", content="hi"),))
    body = build_body("m", plain, {})
    assert "tools" not in body and "tool_choice" not in body
    with_tools = plain.model_copy(update={"tools": (corpus_prompts.SEARCH_TOOL,)})
    tooled = build_body("m", with_tools, {})
    assert tooled.pop("tools") == [corpus_prompts.SEARCH_TOOL] and tooled == body
    assert ResponseCache.key("openai", build_body("m", with_tools, {})) != \
        ResponseCache.key("openai", body)
    payload = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "content": None, "tool_calls": [{"id": "c9", "type": "function", "function": {
            "name": "search", "arguments": {"query": "Acme"}}}]}}]}
    (sample,) = parse_samples(payload, 1)
    assert sample.text == "" and sample.tool_calls == [
        {"id": "c9", "name": "search", "arguments": '{"query": "Acme"}'}]
    assert parse_samples({"choices": [{"message": {"content": "ok"}}]}, 1)[0].tool_calls == []
