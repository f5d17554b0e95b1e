"""The OpenAI chat-completions wire format: request bodies out, samples and usage back.

Kept apart from the HTTP client so the format can be tested without a server. Bodies carry
every sampling parameter of :class:`SamplingParams`; ``top_k`` and ``min_p`` go at the top level
of the body, which is where vLLM and SGLang read them, and thinking is switched through
``chat_template_kwargs.enable_thinking`` (the Qwen3-style chat-template switch both servers
forward).

Seeds (docs/design.md §8, decoding seeds per request): the wire seed is ``params.seed`` as the caller
gave it (callers derive it from the run seed and request key); when absent it is derived from
the key with run seed 0, so a request's output never depends on which batch it travelled in.

Token accounting follows the OpenAI convention: ``cached_tokens`` is a part of
``prompt_tokens`` and ``reasoning_tokens`` a part of ``completion_tokens``.

Tool calling: a request's ``tools`` go into the body as the ``tools`` field (the server's
default ``tool_choice``, "auto", applies) only when there are some, so a request without tools
has the body, and the cache key, it always had. A choice's ``message.tool_calls`` come back as
the sample's ``tool_calls`` (``{"id", "name", "arguments"}``, arguments as the JSON text the
model wrote); a message that calls tools may have null content.

Streaming (``"stream": true`` with ``stream_options.include_usage``): the backend reads the
server-sent events with :class:`StreamAssembler`, which joins each choice's deltas (text,
reasoning, tool-call pieces) and keeps the finish reason and the usage of the final chunk, then
hands back a body of the non-streamed shape, so both paths are checked by the same parser. The
stream fields are added after the cache key is taken (:func:`stream_body`): a streamed and a
plain request for the same answer share one cache entry.

JSON: bodies are encoded and replies decoded with orjson, and with the standard ``json`` module
where orjson refuses (:func:`dumps_body`, :func:`loads_reply`): a reply whose text holds a lone
surrogate escape (``"\\ud800"``) is valid JSON that servers do send, and a prompt may quote such
a reply back; orjson rejects both, and a refusal would fail the request on every resume.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import orjson

from clstream.core.contracts import Tokenizer
from clstream.core.errors import SpecError
from clstream.core.specs import derive_seed
from clstream.core.types import GenerationRequest, Sample, Usage

# Body fields the backend owns: setting them through extra_body would silently bypass
# SamplingParams (and the seed derivation), so it is refused.
RESERVED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "n",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "max_tokens",
        "seed",
        "stop",
        "stream",
    }
)

_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)


class MalformedResponse(Exception):
    """A 2xx response whose body is not a usable chat completion."""


def dumps_body(body: dict[str, Any]) -> bytes:
    """A request body as JSON bytes: orjson's, else ``json``'s (a lone surrogate, escaped)."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, ensure_ascii=True).encode()


def loads_reply(raw: bytes, what: str = "body") -> Any:
    """A reply body (or stream chunk) decoded: orjson first, ``json`` where orjson refuses a
    lone surrogate; text that neither reads raises :class:`MalformedResponse`."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise MalformedResponse(f"{what} is not JSON ({exc})") from None


def request_seed(request: GenerationRequest) -> int:
    """The seed sent on the wire for ``request`` (see module docstring)."""
    seed = request.params.seed
    return derive_seed(0, request.key) if seed is None else seed


def check_extra_body(extra_body: dict[str, Any] | None) -> dict[str, Any]:
    """Validate user-supplied extra body fields; returns a private deep copy."""
    if extra_body is None:
        return {}
    if not isinstance(extra_body, dict):
        raise SpecError(f"extra_body must be a JSON object, got {type(extra_body).__name__}")
    clash = sorted(RESERVED_FIELDS.intersection(extra_body))
    if clash:
        raise SpecError(
            f"extra_body may not set {', '.join(clash)}: use the sampling parameters instead"
        )
    kwargs = extra_body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise SpecError("extra_body field 'chat_template_kwargs' must be a JSON object")
    try:
        json.dumps(extra_body, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"extra_body is not JSON-serializable: {exc}") from exc
    return copy.deepcopy(extra_body)


def build_body(
    target: str, request: GenerationRequest, extra_body: dict[str, Any]
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for one request."""
    p = request.params
    body: dict[str, Any] = copy.deepcopy(extra_body)
    body.update(
        model=target,
        messages=[{"role": m.role, "content": m.content} for m in request.messages],
        n=p.n,
        temperature=p.temperature,
        top_p=p.top_p,
        top_k=p.top_k,
        min_p=p.min_p,
        max_tokens=p.max_tokens,
        seed=request_seed(request),
    )
    if p.stop:
        body["stop"] = list(p.stop)
    if request.tools:
        body["tools"] = copy.deepcopy(list(request.tools))
    if p.thinking is not None:
        kwargs = dict(body.get("chat_template_kwargs") or {})
        kwargs["enable_thinking"] = p.thinking
        body["chat_template_kwargs"] = kwargs
    return body


def _split_think(content: str) -> tuple[str, str]:
    """Separate a leading ``<think>...</think>`` block from the answer text.

    Servers run without a reasoning parser leave the reasoning inline in ``content``; it is
    moved to ``reasoning`` so answer extraction never reads it.
    """
    m = _THINK.match(content)
    if m is None:
        return content, ""
    return content[m.end() :], m.group(1).strip()


def _parse_tool_calls(message: dict[str, Any], i: int) -> list[dict[str, Any]]:
    """The function calls of a choice's message (none when it has no ``tool_calls``)."""
    raw = message.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MalformedResponse(f"choice {i} tool_calls is not a list")
    calls = []
    for n, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise MalformedResponse(f"choice {i} tool call {n} has no function name")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the object, not its JSON text
            arguments = json.dumps(arguments, sort_keys=True)
        call_id = call.get("id")
        calls.append({"id": call_id if isinstance(call_id, str) else f"call_{n}",
                      "name": name,
                      "arguments": arguments if isinstance(arguments, str) else ""})
    return calls


def _parse_choice(choice: Any, i: int) -> Sample:
    if not isinstance(choice, dict):
        raise MalformedResponse(f"choice {i} is not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedResponse(f"choice {i} has no message")
    tool_calls = _parse_tool_calls(message, i)
    if "content" not in message and not tool_calls:
        raise MalformedResponse(f"choice {i} message has no content")
    content = message.get("content")
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str) or not reasoning:
        reasoning = message.get("reasoning")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    if content is None:
        # A null answer is legitimate only when the sample spent its budget reasoning (or was
        # cut by max_tokens); anything else is a broken response and is retried.
        # A message that calls tools may carry no text either.
        if not reasoning and finish != "length" and not tool_calls:
            raise MalformedResponse(f"choice {i} message content is null")
        content = ""
    if not isinstance(content, str):
        raise MalformedResponse(f"choice {i} message content is not a string")
    if not reasoning:
        content, reasoning = _split_think(content)
    return Sample(text=content, reasoning=reasoning, finish_reason=finish, tool_calls=tool_calls)


def parse_samples(payload: Any, n: int) -> list[Sample]:
    """The ``n`` samples of a decoded response body, in choice-index order."""
    if not isinstance(payload, dict):
        raise MalformedResponse("response body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list):
        detail = payload.get("error")
        extra = f" (server error: {str(detail)[:200]})" if detail else ""
        raise MalformedResponse(f"response has no choices list{extra}")
    if len(choices) != n:
        raise MalformedResponse(f"expected {n} choices, got {len(choices)}")
    indexes = [c.get("index") if isinstance(c, dict) else None for c in choices]
    ints = [x for x in indexes if isinstance(x, int) and not isinstance(x, bool)]
    if len(ints) == len(indexes):
        if sorted(ints) != list(range(n)):
            raise MalformedResponse(f"choice indexes {indexes} are not 0..{n - 1}")
        choices = [c for _, c in sorted(zip(ints, choices, strict=True), key=lambda t: t[0])]
    return [_parse_choice(c, i) for i, c in enumerate(choices)]


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def parse_usage(
    payload: dict[str, Any], samples: list[Sample], tokenizer: Tokenizer
) -> Usage | None:
    """Usage as the server reported it, or None when it reported none usable.

    ``reasoning_tokens`` is counted with the tokenizer (capped at ``completion_tokens``) when
    the server omits ``completion_tokens_details`` but returned reasoning text, since several
    servers report only the totals.
    """
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    prompt_details = usage.get("prompt_tokens_details")
    cached = _count(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict):
        reasoning = _count(details.get("reasoning_tokens")) or 0
    else:
        reasoning = min(completion, sum(tokenizer.count(s.reasoning) for s in samples))
    return Usage(
        prompt_tokens=prompt,
        cached_tokens=min(cached or 0, prompt),
        completion_tokens=completion,
        reasoning_tokens=min(reasoning, completion),
    )


def count_usage(request: GenerationRequest, samples: list[Sample], tokenizer: Tokenizer) -> Usage:
    """Usage counted locally when the server reports none (chat-template tokens not counted)."""
    reasoning = sum(tokenizer.count(s.reasoning) for s in samples)
    answer = sum(tokenizer.count(s.text) for s in samples)
    return Usage(
        prompt_tokens=sum(tokenizer.count(m.content) for m in request.messages),
        completion_tokens=answer + reasoning,
        reasoning_tokens=reasoning,
    )


def stream_body(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` asking for a stream of server-sent events with usage in the final chunk."""
    return {**body, "stream": True, "stream_options": {"include_usage": True}}


class StreamAssembler:
    """Joins the chunks of a streamed chat completion into the body a plain request returns.

    Feed it each line of the event stream; ``tokens`` counts the chunks that carried answer,
    reasoning or tool-call text (the stream's pace), ``done`` turns true at ``data: [DONE]``.
    """

    __slots__ = ("_choices", "_usage", "_model", "tokens", "done")

    def __init__(self) -> None:
        self._choices: dict[int, dict[str, Any]] = {}
        self._usage: Any = None
        self._model: Any = None
        self.tokens = 0
        self.done = False

    def feed(self, line: bytes | str) -> bool:
        """Take one line; True when it carried generated text."""
        if isinstance(line, str):
            line = line.encode()
        if not line.startswith(b"data:"):
            return False  # blank separators, comments (keep-alive pings), event names
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return False
        chunk = loads_reply(data, "stream chunk")
        if not isinstance(chunk, dict):
            raise MalformedResponse("stream chunk is not a JSON object")
        if "error" in chunk and "choices" not in chunk:
            raise MalformedResponse(f"server error in stream: {str(chunk['error'])[:200]}")
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        self._model = chunk.get("model", self._model)
        progressed = False
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and self._delta(choice):
                progressed = True
        self.tokens += progressed
        return progressed

    def _delta(self, choice: dict[str, Any]) -> bool:
        index = choice.get("index", 0)
        if not isinstance(index, int):
            raise MalformedResponse("stream choice has no integer index")
        acc = self._choices.get(index)
        if acc is None:
            acc = self._choices[index] = {"content": [], "reasoning": [], "tools": {},
                                          "finish": None}
        delta = choice.get("delta") or {}
        progressed = False
        if isinstance(delta, dict):
            text = delta.get("content")
            if isinstance(text, str) and text:
                acc["content"].append(text)
                progressed = True
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                acc["reasoning"].append(reasoning)
                progressed = True
            for call in delta.get("tool_calls") or ():
                if isinstance(call, dict):
                    progressed = True
                    self._tool_piece(acc["tools"], call)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            acc["finish"] = finish
        return progressed

    @staticmethod
    def _tool_piece(tools: dict[int, dict[str, Any]], call: dict[str, Any]) -> None:
        slot = call.get("index", len(tools))
        entry = tools.setdefault(slot if isinstance(slot, int) else len(tools),
                                 {"id": None, "name": [], "arguments": []})
        if isinstance(call.get("id"), str):
            entry["id"] = call["id"]
        function = call.get("function") or {}
        if isinstance(function, dict):
            if isinstance(function.get("name"), str):
                entry["name"].append(function["name"])
            if isinstance(function.get("arguments"), str):
                entry["arguments"].append(function["arguments"])

    @property
    def finished(self) -> bool:
        """Every choice seen has a finish reason (a stream cut short has none)."""
        return bool(self._choices) and all(c["finish"] for c in self._choices.values())

    def payload(self) -> dict[str, Any]:
        """The body a non-streamed request would have returned."""
        choices = []
        for index in sorted(self._choices):
            acc = self._choices[index]
            message: dict[str, Any] = {"role": "assistant", "content": "".join(acc["content"])}
            if acc["reasoning"]:
                message["reasoning_content"] = "".join(acc["reasoning"])
            if acc["tools"]:
                message["tool_calls"] = [
                    {"id": t["id"], "type": "function",
                     "function": {"name": "".join(t["name"]),
                                  "arguments": "".join(t["arguments"])}}
                    for _, t in sorted(acc["tools"].items())]
                if not acc["content"]:
                    message["content"] = None
            choices.append({"index": index, "message": message, "finish_reason": acc["finish"]})
        body: dict[str, Any] = {"object": "chat.completion", "model": self._model,
                                "choices": choices}
        if self._usage is not None:
            body["usage"] = self._usage
        return body
