"""Client CPU per request of the OpenAI-compatible backend, against a bare aiohttp loop.

What a run pays on its own core for each request to a served model, streamed and not: the
backend (:class:`clstream.models.openai_compat.OpenAICompatModel`: body building, cache key,
the in-flight bound, retries' bookkeeping, the stream assembler, usage parsing) against the
floor of a bare loop that only posts the same bodies and reads the answers (aiohttp, and httpx
for comparison), on the same loopback server, which runs in its own process so none of its CPU
is counted. Prompts are ~2k tokens (about 8,000 characters, a window system's size), answers a
few chunks. CPU is this process's user + system time over the requests alone (start-up and
server start excluded); medians of ``--repeats``.

    python benchmarks/bench_client.py [--requests 2400] [--concurrency 8] [--repeats 3]

aiohttp is needed only for its floor rows (skipped when it is not installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import httpx
import orjson

from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.openai_compat import OpenAICompatModel
from clstream.models.wire import build_body, stream_body

ENGINE = Path(__file__).resolve().parents[1] / "tests" / "models" / "loopback_engine.py"
MODEL = "loop"
PROMPT_CHARS = 8000


def requests_of(count: int) -> list[GenerationRequest]:
    filler = ("The harbour log notes the tide, the wind and the ships that came in. " * 200)
    return [GenerationRequest(key=f"bench/{i}", messages=(
        Message(role="system", content="Answer from the passages."),
        Message(role="user", content=f"{filler[:PROMPT_CHARS]}\nQuestion {i}: who came in?")),
        params=SamplingParams(max_tokens=64)) for i in range(count)]


def cpu_of(work: Callable[[], Awaitable[object]]) -> float:
    start = time.process_time()
    asyncio.run(work())  # type: ignore[arg-type]
    return time.process_time() - start


async def clstream_client(url: str, requests: list[GenerationRequest], concurrency: int,
                          stream: bool, http_client: str | None = None) -> None:
    model = OpenAICompatModel(MODEL, base_url=url, max_concurrency=concurrency, stream=stream,
                              http_client=http_client)
    async with model:
        results = await model.generate(requests)
    assert all(r.ok for r in results), next(r.error for r in results if not r.ok)


async def bare_httpx(url: str, requests: list[GenerationRequest], concurrency: int,
                     stream: bool) -> None:
    bodies = [_body(r, stream) for r in requests]
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(
            max_connections=concurrency, max_keepalive_connections=concurrency)) as client:
        async def one(body: bytes) -> None:
            async with gate, client.stream(
                    "POST", f"{url}/chat/completions", content=body,
                    headers={"Content-Type": "application/json"}) as response:
                async for _ in response.aiter_bytes():
                    pass

        await asyncio.gather(*(one(b) for b in bodies))


async def bare_aiohttp(url: str, requests: list[GenerationRequest], concurrency: int,
                       stream: bool) -> None:
    import aiohttp

    bodies = [_body(r, stream) for r in requests]
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one(body: bytes) -> None:
            async with gate, session.post(f"{url}/chat/completions", data=body,
                                          headers={"Content-Type": "application/json"}) as resp:
                if stream:
                    async for _ in resp.content:
                        pass
                else:
                    orjson.loads(await resp.read())

        await asyncio.gather(*(one(b) for b in bodies))


def _body(request: GenerationRequest, stream: bool) -> bytes:
    body = build_body(MODEL, request, {})
    return orjson.dumps(stream_body(body) if stream else body)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=2400)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    try:
        import aiohttp  # noqa: F401
        floors = True
    except ImportError:
        floors = False
    server = subprocess.Popen([sys.executable, str(ENGINE), "--slots", "256", "--service",
                               "0.0", "--tokens", "4"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        requests = requests_of(args.requests)
        clients: dict[str, Callable[..., Awaitable[None]]] = {
            "clstream": clstream_client, "bare httpx": bare_httpx}
        if floors:  # the fallback when aiohttp is not installed
            clients["clstream, httpx"] = partial(clstream_client, http_client="httpx")
        if floors:
            clients["bare aiohttp"] = bare_aiohttp
        rows: dict[str, dict[str, float]] = {}
        for name, client in clients.items():
            for stream in (True, False):
                cpu = [cpu_of(lambda c=client, s=stream: c(url, requests, args.concurrency, s))
                       for _ in range(args.repeats)]
                rows.setdefault(name, {})["stream" if stream else "plain"] = (
                    1000 * statistics.median(cpu) / args.requests)
    finally:
        server.kill()
        server.wait()
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    floor = rows.get("bare aiohttp")
    print(f"client CPU per request, ms ({args.requests} requests, {args.concurrency} in flight,"
          f" ~{PROMPT_CHARS} character prompts)")
    print(f"{'client':<18}{'streamed':>10}{'plain':>10}" + ("   x aiohttp (streamed, plain)"
                                                           if floor else ""))
    for name, row in rows.items():
        ratio = (f"   {row['stream'] / floor['stream']:.2f}, {row['plain'] / floor['plain']:.2f}"
                 if floor else "")
        print(f"{name:<18}{row['stream']:>10.3f}{row['plain']:>10.3f}{ratio}")


if __name__ == "__main__":
    main()
