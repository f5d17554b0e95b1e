"""The endpoint check of the OpenAI-compatible backend (:mod:`clstream.models.openai_compat`),
and the credentials and httpx clients it shares with the run's requests.

Before a run, :meth:`OpenAICompatModel.preflight` checks the endpoint in seconds instead of
letting every request of the run retry into the same wall: ``GET /models`` (the server is
reachable, the credentials are accepted, the model is listed) and one chat request of one token
with the run's sampling parameters (the model is served and the parameters are accepted). A
definite failure (unreachable, refused credentials, unknown model, rejected parameter, an
answer that is not a chat completion: a static web server's page, JSON without choices, a 5xx
still there after two more tries) raises :class:`EndpointError`, one line quoting the server's
reason (an HTML page by its title and first words); a busy server (429, no answer within the
check's few seconds) is returned as a note and the run goes on, since its requests are retried.

What the server says of itself is read on the way (:mod:`clstream.models.endpoint`): the
context length its model listing gives and, from a llama.cpp ``/props``, its slot count, kept
as :attr:`EndpointCheck.server` for the run's checks and for where the adaptive in-flight limit
starts. With several replicas, every one is checked.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from clstream.core.secrets import redacted_url
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.concurrency import DEFAULT_CEILING
from clstream.models.endpoint import (
    ServerInfo,
    completion_problem,
    looks_like_html,
    merge,
    merge_replicas,
    parse_model_listing,
    parse_props,
    server_root,
)
from clstream.models.http import os_reason
from clstream.models.openai_failures import EndpointError, Secret, response_reason
from clstream.models.retry import parse_retry_after
from clstream.models.wire import build_body

if TYPE_CHECKING:
    import httpx

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

# The endpoint check: seconds per call at most, and the one prompt it sends (one token back).
PREFLIGHT_TIMEOUT = 5.0
PREFLIGHT_PROMPT = "Reply with the word OK."
# Waits before the endpoint check asks again after a 5xx; a server still failing then fails it.
PREFLIGHT_RETRY_WAITS = (1.0, 2.0)
PREFLIGHT_RETRY_AFTER_MAX = 10.0  # seconds of a server's Retry-After the check waits at most


class EndpointCheck:
    """The endpoint check (:meth:`preflight`), the request headers and the httpx clients of
    the OpenAI-compatible backend, which sets the attributes declared here."""

    target: str
    name: str
    base_urls: list[str]
    request_timeout: float
    max_concurrency: int | None
    extra_body: dict[str, Any]
    server: ServerInfo | None
    _key: Secret | None
    _listed_context: int | None

    def _secrets(self) -> list[str]:
        return [] if self._key is None else [self._key.reveal()]

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers


    def _trust_env(self) -> bool:
        """Proxy settings from the environment make no sense for loopback servers."""
        return any((urlsplit(u).hostname or "") not in _LOOPBACK for u in self.base_urls)


    def _new_client(self, timeout: float | None = None) -> httpx.AsyncClient:
        """An httpx client for the endpoint checks (a few requests, before the run). Plain
        http to loopback servers with no proxy uses no TLS at all, so the client does not load
        the certificate store (some 0.03 s of CPU) to verify nothing."""
        import httpx  # with the first client: see clstream.models.http

        seconds = self.request_timeout if timeout is None else timeout
        pool = self.max_concurrency if self.max_concurrency is not None else DEFAULT_CEILING
        trust_env = self._trust_env()
        plain = not trust_env and all(u.startswith("http://") for u in self.base_urls)
        return httpx.AsyncClient(
            # Read: the longest silence; pool: none, the in-flight bound does the waiting.
            timeout=httpx.Timeout(seconds, connect=min(seconds, 30.0), pool=None),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            trust_env=trust_env, verify=not plain,
        )

    async def preflight(self, sampling: SamplingParams) -> list[str]:
        """Check in seconds that a run can use this endpoint (module docstring); raises
        :class:`EndpointError` when it cannot, returns notes on transient trouble."""
        timeout = min(self.request_timeout, PREFLIGHT_TIMEOUT)
        notes: list[str] = []
        infos: list[ServerInfo] = []
        async with self._new_client(timeout) as client:
            for base_url in self.base_urls:  # every replica must serve the model
                where = f"model {self.name} at {redacted_url(base_url)}"
                served = await self._served_models(client, timeout, where, base_url)
                props = await self._props(client, timeout, base_url)
                infos.append(merge((None if served is None else tuple(served),
                                    self._listed_context), props))
                notes += await self._one_token(client, sampling, timeout, where, served,
                                               base_url)
        self.server = infos[0] if len(infos) == 1 else merge_replicas(infos)
        return notes

    async def _props(self, client: httpx.AsyncClient, timeout: float, base_url: str
                     ) -> tuple[int | None, int | None] | None:
        """Context length and slots from a llama.cpp ``/props`` (None where not answered)."""
        import httpx  # with the first client: see clstream.models.http

        try:
            response = await self._check_call(
                client.get(f"{server_root(base_url)}/props", headers=self._headers()),
                timeout)
        except (TimeoutError, httpx.HTTPError):
            return None
        return parse_props(response.content) if response.is_success else None

    async def _check_call(self, call: Any, timeout: float) -> httpx.Response:
        async with asyncio.timeout(timeout + 1.0):  # a guard over the client's own timeouts
            response: httpx.Response = await call
            return response

    def _refused(self, where: str, response: httpx.Response) -> EndpointError:
        hint = "" if self._key is not None else "; give the key with --api-key-env NAME"
        return EndpointError(f"{where}: the server refused the credentials "
                             f"({response_reason(response, self._secrets())}){hint}")

    async def _served_models(
        self, client: httpx.AsyncClient, timeout: float, where: str, base_url: str
    ) -> list[str] | None:
        """The model ids ``GET /models`` lists, or None when the server lists none."""
        import httpx  # with the first client: see clstream.models.http

        try:
            response = await self._check_call(
                client.get(f"{base_url}/models", headers=self._headers()), timeout)
        except (TimeoutError, httpx.TimeoutException):
            raise EndpointError(f"{where}: no answer within {timeout:g}s "
                                "(is the server up and the address right?)") from None
        except httpx.TransportError as exc:
            raise EndpointError(f"{where}: cannot connect ({os_reason(exc)})") from None
        if response.status_code in (401, 403):
            raise self._refused(where, response)
        self._listed_context = None
        if not response.is_success:
            return None
        ids, self._listed_context = parse_model_listing(response.content, self.target)
        return None if ids is None else list(ids)

    async def _one_token(
        self,
        client: httpx.AsyncClient,
        sampling: SamplingParams,
        timeout: float,
        where: str,
        served: list[str] | None,
        base_url: str,
    ) -> list[str]:
        import httpx  # with the first client: see clstream.models.http

        request = GenerationRequest(
            key="preflight", messages=(Message(role="user", content=PREFLIGHT_PROMPT),),
            params=sampling.model_copy(update={"max_tokens": 1}),
        )
        body = build_body(self.target, request, self.extra_body)
        unlisted = served is not None and self.target not in served
        waits = iter(PREFLIGHT_RETRY_WAITS)
        while True:
            try:
                response = await self._check_call(
                    client.post(f"{base_url}/chat/completions", json=body,
                                headers=self._headers()), timeout)
            except (TimeoutError, httpx.TimeoutException):
                if unlisted:
                    self._unlisted(where, served, f"no answer within {timeout:g}s")
                # Slow is not wrong: a busy server is answered by the run's retries.
                return [f"{where}: no answer to a 1-token request within {timeout:g}s; going "
                        "on (requests are retried)"]
            except httpx.TransportError as exc:
                raise EndpointError(f"{where}: a 1-token chat request got no answer "
                                    f"({os_reason(exc)})") from None
            status = response.status_code
            wait = next(waits, None) if status >= 500 and status != 501 else None
            if wait is None:
                break
            after = parse_retry_after(response.headers.get("retry-after"))
            await asyncio.sleep(wait if after is None else min(after, PREFLIGHT_RETRY_AFTER_MAX))
        if response.is_success:
            problem = completion_problem(response.content)
            if problem is None:
                return []  # served, whatever the listing says
            raise EndpointError(f"{where}: a 1-token chat request got HTTP {status} with "
                                f"{problem}, not a chat completion; is this the /v1 URL of an "
                                "OpenAI-compatible server?")
        outcome = response_reason(response, self._secrets())
        if unlisted:
            self._unlisted(where, served, outcome)
        if status in (401, 403):
            raise self._refused(where, response)
        if status == 429:  # the server works and is busy; the run's requests wait their turn
            return [f"{where}: the endpoint check got {outcome}; going on (requests are "
                    "retried)"]
        if status == 404 and not looks_like_html(response.text):
            raise EndpointError(f"{where}: the server does not serve model "
                                f"{self.target!r} ({outcome})")
        if status in (404, 405, 501):
            raise EndpointError(f"{where}: the server does not answer POST /chat/completions "
                                f"({outcome}); is this the /v1 URL of an OpenAI-compatible "
                                "server?")
        if status >= 500:
            raise EndpointError(f"{where}: a 1-token chat request failed "
                                f"{len(PREFLIGHT_RETRY_WAITS) + 1} times ({outcome})")
        raise EndpointError(f"{where}: the server rejected a 1-token request with the run's "
                            f"sampling parameters ({outcome})")

    def _unlisted(self, where: str, served: list[str] | None, outcome: str) -> NoReturn:
        listed = ", ".join(repr(m) for m in (served or [])[:8])
        more = ", ..." if len(served or []) > 8 else ""
        raise EndpointError(f"{where}: the server does not list model {self.target!r} "
                            f"(it serves {listed}{more}) and answered {outcome}")
