"""A loopback server that logs the order in which request bodies are delivered to it.

Each connection reads whatever the kernel holds in one call (an 8 MB buffer), so a body is
logged as soon as its last byte has been delivered, not after the several reads a server with
smaller buffers would spread it over; every request is answered with a one-word completion, at
once, or after 50 ms when its message ends in " -" (so that a client opens one connection per
such request it keeps in flight).
It runs as its own process (its own interpreter lock: a server thread in the test's process can
be kept from reading for milliseconds at a time) and prints its port, then a line per body in
delivery order: the last word of its final message and the number of its connection (1 for the
first accepted):

    python delivery_log.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

REPLY = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
    "role": "assistant", "content": "ok"}}]}).encode()


class _Recorder(asyncio.BufferedProtocol):
    connections = 0

    def __init__(self) -> None:
        _Recorder.connections += 1
        self.number = _Recorder.connections
        self.buffer = bytearray(8 << 20)
        self.pending = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self.buffer)

    def buffer_updated(self, nbytes: int) -> None:
        self.pending += self.buffer[:nbytes]
        while b"\r\n\r\n" in self.pending:
            head, _, rest = bytes(self.pending).partition(b"\r\n\r\n")
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(rest) < length:
                return
            body = json.loads(rest[:length])
            self.pending = bytearray(rest[length:])
            word = body["messages"][-1]["content"].rsplit(" ", 1)[1]
            print(word, self.number, flush=True)
            assert self.transport is not None
            answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(REPLY) + REPLY)
            if word == "-":
                asyncio.get_running_loop().call_later(0.05, self.transport.write, answer)
            else:
                self.transport.write(answer)


async def serve() -> None:
    server = await asyncio.get_running_loop().create_server(_Recorder, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


class DeliveryLog:
    """``with DeliveryLog() as server:`` runs the server process; ``server.log()`` ends it and
    gives the logged words in delivery order."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen([sys.executable, str(Path(__file__))],
                                      stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self._proc.stdout.readline())}/v1"

    def log(self) -> list[str]:
        self._proc.terminate()
        out, _ = self._proc.communicate(timeout=10)
        return [line.split()[0] for line in out.splitlines()]

    def __enter__(self) -> DeliveryLog:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


if __name__ == "__main__":
    asyncio.run(serve())
