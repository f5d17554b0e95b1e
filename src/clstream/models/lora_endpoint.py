"""Loading a LoRA adapter into an OpenAI-compatible server at runtime (docs/parametric.md §3).

vLLM (started with ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``) answers
``POST /v1/load_lora_adapter``; SGLang (``--enable-lora``) answers ``POST /load_lora_adapter``
at the server root. Both take ``{"lora_name", "lora_path"}`` and from then on serve the adapter
as a model of that name. The route under the API base is tried first and the root one when
that is not found. A reply saying the adapter is already loaded (by an earlier run against the
same server, say) counts as loaded: the name is content-addressed, so a name already there is
these weights.

:class:`RuntimeAdapters` asks once per adapter name: requests of one event loop waiting for the
same adapter share one load, a load that succeeded is never repeated by the model object, and
one that failed is tried again by the next call that needs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from clstream.core.types import Adapter
from clstream.models.endpoint import server_root

if TYPE_CHECKING:
    import httpx

ROUTE = "load_lora_adapter"
Reason = Callable[["httpx.Response"], str]
"""The server's reason for a failed response, on one line (secrets scrubbed)."""


def load_urls(base_url: str) -> list[str]:
    """Where a load is asked: under the API base (vLLM), then at the server root (SGLang)."""
    urls = [f"{base_url}/{ROUTE}"]
    root = f"{server_root(base_url)}/{ROUTE}"
    return urls if root in urls else [*urls, root]


def already_loaded(response: httpx.Response) -> bool:
    """Whether a refused load says the adapter is there already."""
    return response.status_code < 500 and "already" in response.text.lower()


async def load_lora_adapter(client: httpx.AsyncClient, base_url: str,
                            headers: dict[str, str], adapter: Adapter, reason: Reason
                            ) -> str | None:
    """Ask the server to load ``adapter``: None when it holds it afterwards, else why not."""
    import httpx  # with the first load: see clstream.models.http

    payload = {"lora_name": adapter.name, "lora_path": adapter.path}
    failures: list[str] = []
    for url in load_urls(base_url):
        try:
            response = await client.post(url, json=payload, headers=headers)
        except (TimeoutError, httpx.HTTPError) as exc:
            failures.append(f"{url}: {type(exc).__name__}: {exc}".strip())
            break
        if response.is_success or already_loaded(response):
            return None
        failures.append(f"{url}: {reason(response)}")
        if response.status_code != 404:  # the route exists and refused: no other to ask
            break
    return "; ".join(failures)


class RuntimeAdapters:
    """The adapters a server was asked to load by one model object (module docstring)."""

    def __init__(self, load: Callable[[Adapter], Awaitable[str | None]]):
        self._load = load
        self.loaded: set[str] = set()
        self._pending: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[str | None]]] = {}

    async def ensure(self, adapter: Adapter) -> str | None:
        """None once the server holds ``adapter``; else why it could not load it."""
        if adapter.name in self.loaded:
            return None
        loop = asyncio.get_running_loop()
        pending = self._pending.get(adapter.name)
        if pending is None or pending[0] is not loop:
            pending = (loop, asyncio.ensure_future(self._load(adapter)))
            self._pending[adapter.name] = pending
        task = pending[1]
        try:
            # One waiting request cancelled must not cancel the load the others wait for.
            why = await asyncio.shield(task)
        finally:
            if task.done() and self._pending.get(adapter.name) is pending:
                del self._pending[adapter.name]
        if why is None:
            self.loaded.add(adapter.name)
        return why
