"""A loopback OpenAI-compatible server that injects faults, for testing remote model backends.

Serves ``POST /v1/chat/completions``, ``GET /v1/models`` and ``POST /tokenize`` on 127.0.0.1
with an ephemeral port, from a background thread. Completions are deterministic functions of the
request body (messages, seed, choice index), so a test can predict every text. It records every
request body and header set, and the largest number of completion requests in flight at once.

Faults come from a *plan*: a function of (request body, attempt number of that same body,
0-based) returning a fault name or None. Fault names:

- ``"429"``: status 429 with a ``Retry-After`` header (``retry_after``, default ``"0"``)
- ``"500"``, ``"503"``, ``"400"``, ``"404"``: that status with a JSON error body
- ``"malformed"``: status 200 with a body that is not JSON
- ``"missing_choices"``: status 200, JSON without ``choices``
- ``"wrong_n"``: status 200 with one choice fewer than asked (or one more when n == 1)
- ``"no_content"``: status 200, a message without ``content``
- ``"stall"``: answer only after ``stall_s`` seconds (longer than the client's timeout)
- ``"reset"``: drop the connection without a response

Models: with ``model`` given, ``GET /v1/models`` lists it and a chat request naming another
model gets a 404 (as vLLM answers); without it the server answers any name and has no model
listing (``/v1/models`` is a 404, as on servers that do not implement it).

The endpoint check a backend makes before a run (its one-token request with
``PREFLIGHT_PROMPT``) is kept apart: recorded in ``preflights``, not ``requests``, and answered
by ``preflight_plan`` instead of ``plan``, so a run's request log holds only the run's requests.
``reject`` (a function of the body giving a message, or None) answers matching chat requests
with a 400 carrying that message; ``api_key`` makes every route demand ``Bearer <api_key>``;
``echo_headers`` puts the request's headers into every error body (as some proxies do).

LoRA adapters: ``POST /v1/load_lora_adapter`` (vLLM's route; with ``lora_at_root``, only
``POST /load_lora_adapter``, SGLang's) records each body in ``lora_loads`` and from then on
serves the adapter as a model of its ``lora_name``; loading a name again is a 400 saying it is
already loaded, as vLLM answers. ``lora_reject`` (a function of the load body giving a
message, or None) refuses matching loads with a 400.

Tool calls: ``tool_plan`` (a function of the body giving a list of ``(name, arguments)`` pairs,
or None) scripts them: a request that offers ``tools`` and for which the plan gives calls is
answered with those calls (``message.tool_calls``, null content, finish reason
``tool_calls``), as a tool-calling server answers; any other request gets the usual reply.

:class:`StaticWebServer` is the opposite case: a plain static web server (Python's own, 404
with an HTML page on ``/v1/models``, 501 on every POST), which is no OpenAI-compatible server.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from clstream.core.types import GenerationRequest, Message
from clstream.models.builtin import BuiltinReader
from clstream.models.openai_compat import PREFLIGHT_PROMPT
from clstream.models.planning import APPROX_TOKENS_PER_MESSAGE
from clstream.models.tokenizers import approx_tokenizer

Plan = Callable[[dict[str, Any], int], str | None]
ToolPlan = Callable[[dict[str, Any]], list[tuple[str, dict[str, Any]]] | None]

STATUS_FAULTS = {"429": 429, "500": 500, "503": 503, "400": 400, "404": 404}
FAULTS = (*STATUS_FAULTS, "malformed", "missing_choices", "wrong_n", "no_content", "stall", "reset")


def is_preflight(body: Any) -> bool:
    """Whether a chat body is a backend's endpoint check (one token of PREFLIGHT_PROMPT)."""
    return (isinstance(body, dict) and body.get("max_tokens") == 1
            and body.get("messages") == [{"role": "user", "content": PREFLIGHT_PROMPT}])


def fingerprint(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _digest(body: dict[str, Any], index: int, what: str) -> str:
    basis = json.dumps(
        {"messages": body.get("messages"), "seed": body.get("seed"), "i": index, "w": what},
        sort_keys=True,
    )
    return hashlib.sha256(basis.encode()).hexdigest()[:12]


def expected_text(body: dict[str, Any], index: int) -> str:
    """The answer text the server gives for choice ``index`` of ``body``."""
    return f"reply {_digest(body, index, 'text')} ## Answer: {_digest(body, index, 'a')[:6]}"


def expected_reasoning(body: dict[str, Any], index: int) -> str:
    """The reasoning text given when the body asks for thinking ('' otherwise)."""
    kwargs = body.get("chat_template_kwargs") or {}
    if not kwargs.get("enable_thinking"):
        return ""
    return f"let me think {_digest(body, index, 'think')} carefully"


def _words(text: str) -> int:
    return len(text.split())


def expected_usage(body: dict[str, Any]) -> dict[str, int]:
    """The usage numbers the server reports for ``body`` (whitespace words as tokens)."""
    prompt = sum(_words(m.get("content", "")) + 3 for m in body.get("messages", []))
    n = int(body.get("n", 1))
    reasoning = sum(_words(expected_reasoning(body, i)) for i in range(n))
    completion = sum(_words(expected_text(body, i)) for i in range(n)) + reasoning
    return {
        "prompt_tokens": prompt,
        "cached_tokens": prompt // 2,
        "completion_tokens": completion,
        "reasoning_tokens": reasoning,
    }


def first_attempts(count: int, fault: str) -> Plan:
    """Every distinct request fails its first ``count`` attempts with ``fault``."""
    return lambda body, attempt: fault if attempt < count else None


def always(fault: str, when: Callable[[dict[str, Any]], bool] | None = None) -> Plan:
    """Every attempt fails with ``fault`` (only for bodies where ``when`` holds, if given)."""
    return lambda body, attempt: fault if when is None or when(body) else None


def fraction(share: float, faults: tuple[str, ...], max_attempt: int = 3) -> Plan:
    """A deterministic ``share`` of attempts fail, cycling through ``faults``; attempts from
    ``max_attempt`` on always succeed, so every request eventually gets through."""

    def plan(body: dict[str, Any], attempt: int) -> str | None:
        if attempt >= max_attempt:
            return None
        h = int(hashlib.sha256(f"{fingerprint(body)}/{attempt}".encode()).hexdigest(), 16)
        if (h % 10_000) / 10_000 >= share:
            return None
        return faults[(h // 10_000) % len(faults)]

    return plan


class FakeOpenAIServer:
    """Use as a context manager; ``base_url`` ends in ``/v1``."""

    def __init__(
        self,
        plan: Plan | None = None,
        latency: float = 0.0,
        stall_s: float = 2.0,
        report_usage: bool = True,
        reasoning_field: str = "reasoning_content",
        model: str | None = None,
        retry_after: str = "0",
        preflight_plan: Plan | None = None,
        reject: Callable[[dict[str, Any]], str | None] | None = None,
        api_key: str | None = None,
        echo_headers: bool = False,
        tool_plan: ToolPlan | None = None,
        lora_at_root: bool = False,
        lora_reject: Callable[[dict[str, Any]], str | None] | None = None,
    ):
        self.plan = plan
        self.latency = latency
        self.stall_s = stall_s
        self.report_usage = report_usage
        self.reasoning_field = reasoning_field
        self.model = model
        self.retry_after = retry_after
        self.preflight_plan = preflight_plan
        self.reject = reject
        self.api_key = api_key
        self.echo_headers = echo_headers
        self.tool_plan = tool_plan
        self.lora_at_root = lora_at_root
        self.lora_reject = lora_reject
        self.lora_loads: list[dict[str, Any]] = []
        self.loras: set[str] = set()
        self.preflights: list[dict[str, Any]] = []
        self.model_listings = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.faults: list[str] = []
        self.reported: list[dict[str, int]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def completions(self) -> list[dict[str, Any]]:
        """Bodies of the chat-completion requests, in arrival order."""
        return list(self.requests)

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called from handler threads --------------------------------------------------------

    def _admit(self, body: dict[str, Any], headers: dict[str, str]) -> str | None:
        with self._lock:
            if is_preflight(body):
                attempt = sum(1 for sent in self.preflights if sent == body)
                self.preflights.append(body)
                return (self.preflight_plan(body, attempt) if self.preflight_plan is not None
                        else None)
            self.requests.append(body)
            self.headers.append(headers)
            fp = fingerprint(body)
            attempt = self._attempts[fp]
            self._attempts[fp] += 1
            fault = self.plan(body, attempt) if self.plan is not None else None
            if fault is not None:
                self.faults.append(fault)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return fault

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def tool_calls(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The scripted tool calls answering ``body`` (none when it offers no tools)."""
        if not body.get("tools") or self.tool_plan is None:
            return []
        planned = self.tool_plan(body) or []
        return [{"id": f"call_{fingerprint(body)[:8]}_{n}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for n, (name, arguments) in enumerate(planned)]

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        n = int(body.get("n", 1))
        calls = self.tool_calls(body)
        shown = n - 1 if fault == "wrong_n" and n > 1 else n + 1 if fault == "wrong_n" else n
        choices = []
        for i in range(shown):
            message: dict[str, Any] = {"role": "assistant", "content": expected_text(body, i)}
            reasoning = expected_reasoning(body, i)
            if reasoning:
                message[self.reasoning_field] = reasoning
            if fault == "no_content":
                del message["content"]
            finish = "stop"
            if calls:
                message["content"], message["tool_calls"], finish = None, calls, "tool_calls"
            choices.append({"index": i, "message": message, "finish_reason": finish})
        payload: dict[str, Any] = {
            "id": "chatcmpl-" + fingerprint(body)[:16],
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": choices,
        }
        if self.report_usage:
            usage = expected_usage(body)
            payload["usage"] = {
                "prompt_tokens": usage["prompt_tokens"],
                "completion_tokens": usage["completion_tokens"],
                "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
                "prompt_tokens_details": {"cached_tokens": usage["cached_tokens"]},
                "completion_tokens_details": {"reasoning_tokens": usage["reasoning_tokens"]},
            }
        return payload


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAIServer
    protocol_version = "HTTP/1.1"
    # A stream's small writes go out at once, as a real server's do (Nagle's algorithm and the
    # client's delayed ACK would add tens of milliseconds to every streamed reply).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        if self.owner.echo_headers:
            message += f" (request headers: {dict(self.headers.items())})"
        self._json(status, {"error": {"message": message}}, headers)

    def _authorized(self) -> bool:
        key = self.owner.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._error(401, "Incorrect API key provided")
        return False

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"null")

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path.rstrip("/") == "/v1/models" and self.owner.model is not None:
            with self.owner._lock:
                self.owner.model_listings += 1
            self._json(
                200, {"object": "list", "data": [{"id": self.owner.model, "object": "model"}]}
            )
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        body = self._body()
        if not self._authorized():
            return
        if self.path == "/tokenize":
            count = _words(str((body or {}).get("prompt", "")))
            self._json(200, {"count": count, "max_model_len": 32768, "tokens": list(range(count))})
        elif self.path == "/v1/chat/completions":
            self._chat(body)
        elif self.path == ("/load_lora_adapter" if self.owner.lora_at_root
                           else "/v1/load_lora_adapter"):
            self._load_lora(body)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def _load_lora(self, body: dict[str, Any]) -> None:
        owner = self.owner
        name = str(body.get("lora_name"))
        with owner._lock:
            owner.lora_loads.append(body)
            rejected = owner.lora_reject(body) if owner.lora_reject is not None else None
            known = name in owner.loras
            if rejected is None and not known:
                owner.loras.add(name)
        if rejected is not None:
            self._error(400, rejected)
        elif known:
            self._error(400, f"The lora adapter '{name}' has already been loaded.")
        else:
            self._send(200, f"Success: LoRA adapter '{name}' added successfully.".encode())

    def _chat(self, body: dict[str, Any]) -> None:
        owner = self.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault = owner._admit(body, headers)
        if owner.latency:
            owner._stop.wait(owner.latency)
        if fault == "stall":
            owner._leave()  # the client gives up; this request no longer occupies it
            owner._stop.wait(owner.stall_s)
            self._json(200, owner.completion(body, None))
            return
        if fault == "reset":
            owner._leave()
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if fault in STATUS_FAULTS:
            owner._leave()
            extra = {"Retry-After": owner.retry_after} if fault == "429" else None
            self._error(STATUS_FAULTS[fault], f"injected {fault}", extra)
            return
        if owner.model is not None and body.get("model") != owner.model \
                and body.get("model") not in owner.loras:
            owner._leave()
            self._error(404, f"The model `{body.get('model')}` does not exist.")
            return
        rejected = owner.reject(body) if owner.reject is not None else None
        if rejected is not None:
            owner._leave()
            self._error(400, rejected)
            return
        if fault == "malformed":
            owner._leave()
            self._send(200, b'{"choices": [{"index": 0, "message": ')
            return
        if fault == "missing_choices":
            owner._leave()
            self._json(200, {"object": "chat.completion", "model": body.get("model")})
            return
        payload = owner.completion(body, fault)
        if fault is None and owner.report_usage and not is_preflight(body):
            with owner._lock:
                owner.reported.append(expected_usage(body))
        owner._leave()
        self._json(200, payload)


class PolicyServer(FakeOpenAIServer):
    """Answers every chat request with the builtin model's reply to the same messages, and
    reports usage counted with the approximate tokenizer: each message's text plus
    ``APPROX_TOKENS_PER_MESSAGE`` template tokens as prompt, the reply as completion (``n``
    times), half the prompt as cached (``clstream plan`` counts an ``openai:`` model's prompts
    the same way, docs/plan.md §2)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reader = BuiltinReader()
        self.reader_lock = threading.Lock()

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        messages = tuple(Message(role=m["role"], content=m["content"])
                         for m in body["messages"])
        with self.reader_lock:
            text, _ = self.reader.reply(GenerationRequest(key="k", messages=messages))
        for choice in payload["choices"]:
            if "content" in choice["message"] and not choice["message"].get("tool_calls"):
                choice["message"]["content"] = text
        if "usage" in payload:
            tokenizer = approx_tokenizer()
            prompt = sum(tokenizer.count(m["content"]) + APPROX_TOKENS_PER_MESSAGE
                         for m in body["messages"])
            completion = len(payload["choices"]) * tokenizer.count(text)
            payload["usage"] = {
                "prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": prompt // 2},
                "completion_tokens_details": {"reasoning_tokens": 0},
            }
        return payload


class _QuietStatic(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


class StaticWebServer:
    """``python -m http.server`` over ``directory`` on 127.0.0.1; ``base_url`` is its /v1."""

    def __init__(self, directory: str | Path) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "index.html").write_text("<html><body>a page</body></html>")
        self._server = ThreadingHTTPServer(
            ("127.0.0.1", 0),
            lambda *args: _QuietStatic(*args, directory=str(directory)))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StaticWebServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
