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
  answer nobody reads;
- with a ``turn`` (:class:`clstream.models.concurrency.Turn`), a request waits for it with its
  connection in hand, writes its whole body, and passes the turn on once the operating system
  holds every byte (for a large body, once the server has acknowledged every byte), so
  concurrent requests reach the server in the order their turns were dealt.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import lru_cache
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpx

# Both clients are imported when a pool is made, not with this module: a command that only
# reads a model's settings (``clstream plan`` canonicalizing ``--model openai:NAME``) does not
# pay for them.
_AIOHTTP = find_spec("aiohttp") is not None  # the fast path; optional

CONNECT_CAP_S = 30.0  # the wait for a connection is capped whatever the silence timeout
FLUSH_POLL_S = (0.0001, 0.005)  # a turn checks its body's delivery at growing gaps within these
LARGE_BODY = 64 * 1024  # bodies this large wait for the peer's acknowledgement
DELIVERY_WAIT_S = 0.25  # the longest a turn waits for its body's delivery

if sys.platform == "linux":
    import fcntl

    _SIOCOUTQ: int | None = 0x5411  # TIOCOUTQ on a TCP socket: bytes not yet acknowledged
else:  # pragma: no cover - no portable way to ask; the transport's own buffer still counts
    _SIOCOUTQ = None


class HttpTimeout(Exception):
    """Nothing came for the read timeout (``connect``: not even a connection)."""

    def __init__(self, connect: bool = False):
        super().__init__("connect timeout" if connect else "read timeout")
        self.connect = connect


class HttpFailure(Exception):
    """The exchange failed: a refused or dropped connection (retryable) or an address no retry
    can reach (``fatal``). ``unanswered`` holds the operating system's reason when no response
    came at all (refused, reset before an answer), None when the failure came after one began."""

    def __init__(self, reason: str, fatal: bool = False, unanswered: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal
        self.unanswered = unanswered


class Reply(Protocol):
    """A response whose status and headers have arrived; the body is read on demand."""

    status: int
    headers: Mapping[str, str]

    async def body(self) -> bytes: ...

    def lines(self) -> AsyncIterator[bytes]: ...


class SendTurn(Protocol):
    """A request's place among concurrent writes (:class:`clstream.models.concurrency.Turn`)."""

    @property
    def passed(self) -> bool: ...

    async def ready(self) -> None: ...

    def sent(self) -> None: ...


class HttpClient(Protocol):
    name: str

    def post(self, url: str, content: bytes, headers: Mapping[str, str],
             turn: SendTurn | None = None) -> Any: ...  # an async context manager: a Reply

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


def _unacknowledged(sock: Any) -> int:
    """Bytes the operating system still holds for ``sock``: not yet sent, or sent and not yet
    acknowledged by the peer (``SIOCOUTQ``; 0 where the system cannot tell)."""
    if _SIOCOUTQ is None or sock is None:
        return 0
    try:
        queued = fcntl.ioctl(sock.fileno(), _SIOCOUTQ, b"\0\0\0\0")
    except (OSError, ValueError):
        return 0
    return int(struct.unpack("i", queued)[0])


async def delivered(transport: asyncio.BaseTransport | None, size: int,
                    turn: SendTurn | None = None) -> None:
    """Return once a body just written to ``transport`` has left it, and, for a body of
    ``LARGE_BODY`` bytes or more, once the peer has acknowledged every byte (at most
    ``DELIVERY_WAIT_S``, and no longer than until ``turn`` is passed by the answer's arrival).

    Why both: a body the kernel could not take at once stays partly in the transport, and a
    large body reaches the server over several reads, so a later request on another connection
    could finish arriving first. Waiting for the acknowledgement puts the whole body in the
    server's receive queue before the next request's first byte leaves; on loopback or a LAN
    that takes microseconds, and a body that large takes the server far longer to prefill.
    Small bodies travel in one segment and do not wait for the round trip.
    """
    if transport is None or not isinstance(transport, asyncio.WriteTransport):
        return
    deadline = time.monotonic() + DELIVERY_WAIT_S
    sock = transport.get_extra_info("socket") if size >= LARGE_BODY else None
    gap, longest = FLUSH_POLL_S
    while not transport.is_closing() and (transport.get_write_buffer_size()
                                          or _unacknowledged(sock)):
        if time.monotonic() > deadline or (turn is not None and turn.passed):
            return
        await asyncio.sleep(gap)
        gap = min(2 * gap, longest)


_PASSING: set[asyncio.Future[None]] = set()  # waits for delivery in progress (kept referenced)


async def _pass_when_delivered(transport: asyncio.BaseTransport | None, size: int,
                               turn: SendTurn) -> None:
    try:
        await delivered(transport, size, turn)
    finally:
        turn.sent()


@lru_cache(maxsize=1)
def _ordered_body() -> Any:
    """The class of request bodies written in their turn (made on first use, with aiohttp)."""
    import aiohttp

    class _OrderedBody(aiohttp.BytesPayload):
        """A request body written in its turn: the headers wait in the writer's buffer and go
        out with the body (aiohttp coalesces them), so nothing of the request is on the wire
        before its turn comes; the turn passes once the body is delivered (:func:`delivered`)
        or the answer has begun, whichever comes first."""

        def __init__(self, value: bytes, turn: SendTurn):
            super().__init__(value, content_type="application/json")
            self._turn = turn

        async def write(self, writer: Any) -> None:
            await self.write_with_length(writer, None)

        async def write_with_length(self, writer: Any, content_length: int | None) -> None:
            try:
                await self._turn.ready()
                await super().write_with_length(writer, content_length)
            except BaseException:
                self._turn.sent()
                raise
            transport, size = writer.transport, self.size or 0
            if size < LARGE_BODY and (transport is None or not transport.get_write_buffer_size()):
                self._turn.sent()  # all of it is with the kernel: the common case
                return
            # The wait for delivery runs beside the request: aiohttp drops a connection whose
            # body is still being written when the answer comes.
            task = asyncio.ensure_future(_pass_when_delivered(transport, size, self._turn))
            _PASSING.add(task)
            task.add_done_callback(_PASSING.discard)

    return _OrderedBody


class AiohttpClient:
    name = "aiohttp"

    def __init__(self, timeout: float, pool: int, trust_env: bool):
        import aiohttp

        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=pool, limit_per_host=pool),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(timeout, CONNECT_CAP_S),
                                          sock_read=timeout),
            trust_env=trust_env, raise_for_status=False)

    @asynccontextmanager
    async def post(self, url: str, content: bytes, headers: Mapping[str, str],
                   turn: SendTurn | None = None) -> AsyncIterator[_AiohttpReply]:
        import aiohttp

        response = None
        finished = False
        data: Any = content if turn is None else _ordered_body()(content, turn)
        try:
            response = await self._session.post(url, data=data, headers=dict(headers))
            if turn is not None:
                turn.sent()  # answered, so its body was delivered
            yield _AiohttpReply(response)
            finished = True
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise HttpTimeout(connect=isinstance(exc, aiohttp.ConnectionTimeoutError)) from exc
        except aiohttp.InvalidURL as exc:
            raise HttpFailure(f"cannot reach {url}: {exc}", fatal=True) from exc
        except aiohttp.ClientConnectorError as exc:
            cause = os_reason(exc)
            raise HttpFailure(f"connection error ({type(exc).__name__}): {cause}",
                              unanswered=cause) from exc
        except aiohttp.ClientError as exc:
            raise HttpFailure(f"connection error ({type(exc).__name__}): {exc}",
                              unanswered=None if response is not None else os_reason(exc)
                              ) from exc
        finally:
            if turn is not None:
                turn.sent()  # failed before its body went out
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
        import httpx

        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_CAP_S), pool=None),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            trust_env=trust_env)

    @asynccontextmanager
    async def post(self, url: str, content: bytes, headers: Mapping[str, str],
                   turn: SendTurn | None = None) -> AsyncIterator[_HttpxReply]:
        import httpx

        extensions = {} if turn is None else {"trace": _httpcore_trace(turn)}
        answered = False
        try:
            async with self._client.stream("POST", url, content=content, headers=headers,
                                           extensions=extensions) as response:
                answered = True
                if turn is not None:
                    turn.sent()
                yield _HttpxReply(response)
        except httpx.TimeoutException as exc:
            raise HttpTimeout(connect=isinstance(exc, httpx.ConnectTimeout)) from exc
        except httpx.UnsupportedProtocol as exc:
            raise HttpFailure(f"cannot reach {url}: {exc}", fatal=True) from exc
        except httpx.TransportError as exc:
            raise HttpFailure(f"connection error ({type(exc).__name__}): {exc}",
                              unanswered=None if answered else os_reason(exc)) from exc
        finally:
            if turn is not None:
                turn.sent()

    async def aclose(self) -> None:
        await self._client.aclose()


def _httpcore_trace(turn: SendTurn) -> Any:
    """httpcore's trace hook: wait for the turn before the headers go out, pass it once the
    body has been written."""

    async def trace(event: str, info: Mapping[str, Any]) -> None:
        if event == "http11.send_request_headers.started":
            await turn.ready()
        elif event in ("http11.send_request_body.complete", "http11.send_request_body.failed",
                       "http11.send_request_headers.failed"):
            turn.sent()

    return trace


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
