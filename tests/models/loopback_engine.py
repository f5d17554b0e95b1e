"""A loopback inference engine with N sequence slots and a queue in front, for testing how a
backend shares a real server.

Real engines (llama.cpp, vLLM, SGLang) decode a fixed number of sequences at once and queue the
rest; a queued request gets no byte until a slot frees, and one whose client hangs up is
dropped without being served. This engine does the same over HTTP/1.1 with keep-alive:

- ``POST /v1/chat/completions``: waits for one of ``slots`` slots, then generates for
  ``service_s`` seconds (``long_s`` for requests whose last message contains ``#long``),
  spread over ``tokens`` evenly spaced chunks: streamed as server-sent events (usage in the
  final chunk, as with ``stream_options.include_usage``) when the body asks for a stream, else
  one JSON body at the end. Texts are the fake server's (:func:`expected_text`), so answers are
  a function of the body alone whatever the timing;
- ``GET /v1/models`` lists ``model`` with ``max_model_len``; ``GET /props`` answers
  ``total_slots`` and ``n_ctx`` only with ``props=True`` (as llama.cpp does; vLLM has none).

With ``interrupt=True`` a stream in progress ends early (``data: [DONE]`` with no finish reason)
as soon as another request waits for a slot, as llama-cpp-python's server does by default
(its ``interrupt_requests`` setting); with ``finish=False`` no stream ever carries a finish
reason.

It counts requests served, queued requests dropped because their client left, streams cut by
the client, streams it interrupted, the most slots busy at once, and the order requests were
admitted in. With ``record=True`` it also keeps every chat request body in the order it was read
off its socket (``arrivals``; the endpoint check's one-token request is left out), the order a
single-loop server such as vLLM's or llama.cpp's would queue them in.

Run it in a background thread (``with LoopbackEngine(...) as engine``) or, for throughput
figures that must not share the test's interpreter lock, as a process:
``python loopback_engine.py --slots 32 --service 0.1`` prints its port on the first line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
import time
from typing import Any

from fake_openai_server import expected_text, is_preflight


class LoopbackEngine:
    def __init__(self, slots: int = 1, service_s: float = 0.02, long_s: float | None = None,
                 tokens: int = 4, model: str = "loop", context: int = 8192,
                 props: bool = False, port: int = 0, interrupt: bool = False,
                 finish: bool = True, record: bool = False):
        self.slots = slots
        self.service_s = service_s
        self.long_s = long_s if long_s is not None else service_s
        self.tokens = tokens
        self.model = model
        self.context = context
        self.props = props
        self.port = port
        self.interrupt = interrupt
        self.finish = finish  # False: streams never say why they ended (a broken server)
        self.interrupted = 0
        self.waiting = 0
        self.served = 0
        self.dropped = 0
        self.cut = 0
        self.busy = 0
        self.max_busy = 0
        self.admitted: list[str] = []
        self.arrivals: list[dict[str, Any]] | None = [] if record else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._slots: asyncio.Semaphore | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle -------------------------------------------------------------------------

    async def serve(self) -> None:
        self._slots = asyncio.Semaphore(self.slots)
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        async with self._server:
            with contextlib.suppress(asyncio.CancelledError):
                await self._server.serve_forever()

    def __enter__(self) -> LoopbackEngine:
        self._thread = threading.Thread(target=lambda: asyncio.run(self.serve()), daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- HTTP ------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                          ) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip()
                           for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                length = int(headers.get("content-length", "0"))
                body = json.loads(await reader.readexactly(length)) if length else None
                if not await self._route(method, path.rstrip("/"), body, reader, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await writer.drain()

    async def _route(self, method: str, path: str, body: Any, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> bool:
        if method == "GET" and path == "/v1/models":
            await self._send(writer, 200, {"object": "list", "data": [
                {"id": self.model, "object": "model", "max_model_len": self.context}]})
        elif method == "GET" and path == "/props" and self.props:
            await self._send(writer, 200, {"total_slots": self.slots,
                                           "default_generation_settings": {"n_ctx": self.context}})
        elif method == "POST" and path == "/v1/chat/completions":
            return await self._chat(body, reader, writer)
        else:
            await self._send(writer, 404, {"error": {"message": f"no route {path}"}})
        return True

    async def _chat(self, body: dict[str, Any], reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> bool:
        assert self._slots is not None
        if body.get("model") != self.model:
            await self._send(writer, 404, {"error": {"message": "no such model"}})
            return True
        if self.arrivals is not None and not is_preflight(body):
            self.arrivals.append(body)
        slot = asyncio.ensure_future(self._slots.acquire())
        self.waiting += 1
        while not slot.done() and not reader.at_eof():  # at_eof: the client hung up
            await asyncio.wait({slot}, timeout=0.005)
        self.waiting -= 1
        if not slot.done():
            slot.cancel()
            self.dropped += 1
            return False
        self.busy += 1
        self.max_busy = max(self.max_busy, self.busy)
        self.admitted.append(body["messages"][-1]["content"])
        try:
            return await self._generate(body, reader, writer)
        except ConnectionError:
            self.cut += 1
            return False
        finally:
            self.busy -= 1
            self._slots.release()

    async def _generate(self, body: dict[str, Any], reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> bool:
        n = int(body.get("n", 1))
        texts = [expected_text(body, i) for i in range(n)]
        long = "#long" in body["messages"][-1]["content"]
        gap = (self.long_s if long else self.service_s) / self.tokens
        usage = {"prompt_tokens": 10, "completion_tokens": self.tokens * n,
                 "total_tokens": 10 + self.tokens * n,
                 "prompt_tokens_details": {"cached_tokens": 0}}
        if not body.get("stream"):
            await asyncio.sleep(gap * self.tokens)
            self.served += 1
            await self._send(writer, 200, {
                "object": "chat.completion", "model": self.model, "usage": usage,
                "choices": [{"index": i, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": t}}
                            for i, t in enumerate(texts)]})
            return True
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        for step in range(self.tokens):
            await asyncio.sleep(gap)
            if reader.at_eof():  # the client closed the stream: stop generating
                raise ConnectionError
            if self.interrupt and self.waiting and step > 0:
                self.interrupted += 1
                writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                await writer.drain()
                return True
            last = step == self.tokens - 1
            choices = [{"index": i,
                        "delta": {"content": t[step * len(t) // self.tokens:
                                               (step + 1) * len(t) // self.tokens]},
                        "finish_reason": "stop" if last and self.finish else None}
                       for i, t in enumerate(texts)]
            self._event(writer, {"model": self.model, "choices": choices})
            await writer.drain()
        self._event(writer, {"model": self.model, "choices": [], "usage": usage})
        writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        self.served += 1
        return True

    @staticmethod
    def _event(writer: asyncio.StreamWriter, obj: Any) -> None:
        writer.write(_chunk(b"data: " + json.dumps(obj).encode() + b"\n\n"))


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--slots", type=int, default=1)
    p.add_argument("--service", type=float, default=0.02)
    p.add_argument("--long", type=float, default=None)
    p.add_argument("--tokens", type=int, default=4)
    p.add_argument("--props", action="store_true")
    p.add_argument("--interrupt", action="store_true")
    p.add_argument("--port", type=int, default=0, help="0: any free port")
    p.add_argument("--context", type=int, default=8192)
    args = p.parse_args()
    engine = LoopbackEngine(args.slots, args.service, args.long, args.tokens, props=args.props,
                            interrupt=args.interrupt, port=args.port, context=args.context)
    with engine:
        print(engine.port, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
