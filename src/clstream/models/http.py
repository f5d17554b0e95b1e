"""The HTTP client under the OpenAI-compatible backend's requests: aiohttp where installed,
httpx otherwise, behind one small interface.

Measured on loopback with ~2k-token prompts (``benchmarks/bench_client.py``), a bare loop of
requests costs about 1.1 ms of client CPU each through httpx and 0.09-0.15 ms through aiohttp;
the client's own CPU is what bounds how many requests a run can keep a fast server busy with,
so the run's requests go through aiohttp when it is importable, with httpx (a dependency either
way, used by the endpoint checks) as the fallback. Both keep one connection pool per run
(``async with model:``) and give the same behaviour:

- a read timeout per read, which is a timeout on silence: the wait for the first byte and each
  gap between chunks, never the length of an answer that keeps coming;
- failures mapped to :class:`HttpTimeout` (``connect``: no connection was made) and
  :class:`HttpFailure` (``fatal``: an address that no retry can reach, such as an unsupported
  scheme), with the operating system's reason where it gave one;
- leaving a response before its end closes its connection, so a server stops generating an
  answer nobody reads.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

import httpx

try:  # the fast path; optional
    import aiohttp

    _AIOHTTP = True
except ImportError:  # pragma: no cover - depends on the installation
    _AIOHTTP = False

CONNECT_CAP_S = 30.0  # the wait for a connection is capped whatever the silence timeout


class HttpTimeout(Exception):
    """Nothing came for the read timeout (``connect``: not even a connection)."""

    def __init__(self, connect: bool = False):
        super().__init__("connect timeout" if connect else "read timeout")
        self.connect = connect


class HttpFailure(Exception):
    """The exchange failed: a refused or dropped connection (retryable) or an address no retry
    can reach (``fatal``)."""

    def __init__(self, reason: str, fatal: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal


class Reply(Protocol):
    """A response whose status and headers have arrived; the body is read on demand."""

    status: int
    headers: Mapping[str, str]

    async def body(self) -> bytes: ...

    def lines(self) -> AsyncIterator[bytes]: ...


class HttpClient(Protocol):
    name: str

    def post(self, url: str, content: bytes, headers: Mapping[str, str]
             ) -> Any: ...  # an async context manager giving a Reply

    async def aclose(self) -> None: ...


def os_reason(exc: BaseException) -> str:
    """Why a connection failed, in the operating system's words where the chain of causes
    holds them ("Connection refused"), else the client's own."""
    seen: BaseException | None = exc
    reason = ""
    for _ in range(16):
        if seen is None:
            break
        if isinstance(seen, OSError) and isinstance(seen.errno, int):
            reason = os.strerror(seen.errno) if seen.errno > 0 else seen.strerror or reason
        seen = seen.__cause__ or seen.__context__
    return reason or str(exc) or type(exc).__name__


# -- aiohttp -------------------------------------------------------------------------------------


class _AiohttpReply:
    __slots__ = ("_response", "status", "headers")

    def __init__(self, response: Any):
        self._response = response
        self.status: int = response.status
        self.headers: Mapping[str, str] = response.headers

    async def body(self) -> bytes:
        data: bytes = await self._response.read()
        return data

    async def lines(self) -> AsyncIterator[bytes]:
        try:
            async for line in self._response.content:
                yield line.rstrip(b"\r\n")
        except ValueError as exc:  # a line longer than the reader's limit
            raise HttpFailure(f"malformed stream: {exc}") from exc


class AiohttpClient:
    name = "aiohttp"

    def __init__(self, timeout: float, pool: int, trust_env: bool):
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=pool, limit_per_host=pool),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(timeout, CONNECT_CAP_S),
                                          sock_read=timeout),
            trust_env=trust_env, raise_for_status=False)

    @asynccontextmanager
    async def post(self, url: str, content: bytes, headers: Mapping[str, str]
                   ) -> AsyncIterator[_AiohttpReply]:
        response = None
        finished = False
        try:
            response = await self._session.post(url, data=content, headers=dict(headers))
            yield _AiohttpReply(response)
            finished = True
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise HttpTimeout(connect=isinstance(exc, aiohttp.ConnectionTimeoutError)) from exc
        except aiohttp.InvalidURL as exc:
            raise HttpFailure(f"cannot reach {url}: {exc}", fatal=True) from exc
        except aiohttp.ClientConnectorError as exc:
            raise HttpFailure(f"connection error ({type(exc).__name__}): {os_reason(exc)}"
                              ) from exc
        except aiohttp.ClientError as exc:
            raise HttpFailure(f"connection error ({type(exc).__name__}): {exc}") from exc
        finally:
            if response is not None:
                if finished:
                    response.release()
                else:
                    response.close()  # an answer left unread: drop its connection

    async def aclose(self) -> None:
        await self._session.close()


# -- httpx ---------------------------------------------------------------------------------------


class _HttpxReply:
    __slots__ = ("_response", "status", "headers")

    def __init__(self, response: httpx.Response):
        self._response = response
        self.status = response.status_code
        self.headers = response.headers

    async def body(self) -> bytes:
        return await self._response.aread()

    async def lines(self) -> AsyncIterator[bytes]:
        pending = b""
        async for chunk in self._response.aiter_bytes():
            pending += chunk
            if b"\n" not in chunk:
                continue
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line.rstrip(b"\r")
        if pending:
            yield pending.rstrip(b"\r")


class HttpxClient:
    name = "httpx"

    def __init__(self, timeout: float, pool: int, trust_env: bool):
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_CAP_S), pool=None),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            trust_env=trust_env)

    @asynccontextmanager
    async def post(self, url: str, content: bytes, headers: Mapping[str, str]
                   ) -> AsyncIterator[_HttpxReply]:
        try:
            async with self._client.stream("POST", url, content=content,
                                           headers=headers) as response:
                yield _HttpxReply(response)
        except httpx.TimeoutException as exc:
            raise HttpTimeout(connect=isinstance(exc, httpx.ConnectTimeout)) from exc
        except httpx.UnsupportedProtocol as exc:
            raise HttpFailure(f"cannot reach {url}: {exc}", fatal=True) from exc
        except httpx.TransportError as exc:
            raise HttpFailure(f"connection error ({type(exc).__name__}): {exc}") from exc

    async def aclose(self) -> None:
        await self._client.aclose()


def aiohttp_available() -> bool:
    return _AIOHTTP


def new_client(timeout: float, pool: int, trust_env: bool, prefer: str | None = None
               ) -> AiohttpClient | HttpxClient:
    """A connection pool for a run's requests: aiohttp where installed (or ``prefer``)."""
    if prefer not in (None, "aiohttp", "httpx"):
        raise ValueError(f"unknown HTTP client {prefer!r}")
    if _AIOHTTP and prefer != "httpx":
        return AiohttpClient(timeout, pool, trust_env)
    return HttpxClient(timeout, pool, trust_env)
