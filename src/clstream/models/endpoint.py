"""What an OpenAI-compatible server says about itself: served models, context length, slots.

Servers differ in what they report, and none of it is part of the OpenAI API, so every field is
optional and a server that reports nothing is served as before:

- vLLM lists ``max_model_len`` with each model of ``GET /v1/models`` (SGLang too, in recent
  versions); llama-cpp-python's listing carries nothing of the kind;
- a llama.cpp server answers ``GET /props`` (at the server root, beside ``/v1``) with
  ``total_slots`` (sequences it decodes at once) and the context length in
  ``default_generation_settings.n_ctx`` (older releases) or ``n_ctx`` at the top level.

The slot count is where the adaptive concurrency limit starts
(:mod:`clstream.models.concurrency`); the context length lets a run refuse, before anything is
sent, a system whose prompts cannot fit (``clstream check`` prints both).

A URL that is not such a server at all (a static web server, a proxy's error page) answers with
HTML; :func:`html_summary` makes that page one short line (its title and first words), so an
error quoting the server stays one line (docs/design.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson


@dataclass(frozen=True)
class ServerInfo:
    """What the server reported (None: not reported), and where each figure came from."""

    models: tuple[str, ...] | None = None
    context_length: int | None = None
    slots: int | None = None
    context_source: str | None = None
    slots_source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"models": list(self.models) if self.models is not None else None,
                "context_length": self.context_length, "slots": self.slots,
                "context_source": self.context_source, "slots_source": self.slots_source}


def server_root(base_url: str) -> str:
    """The server root of an API base URL (``http://h:8080/v1`` -> ``http://h:8080``)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def parse_model_listing(content: bytes, target: str) -> tuple[tuple[str, ...] | None, int | None]:
    """Model ids of a ``/models`` body (None when it lists none) and the context length the
    entry for ``target`` reports (``max_model_len``), if any."""
    try:
        data = orjson.loads(content).get("data")
    except (orjson.JSONDecodeError, AttributeError):
        return None, None
    if not isinstance(data, list):
        return None, None
    ids: list[str] = []
    context: int | None = None
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        ids.append(entry["id"])
        if entry["id"] == target:
            context = _count(entry.get("max_model_len"))
    return (tuple(ids) or None), context


def parse_props(content: bytes) -> tuple[int | None, int | None]:
    """(context length, slots) from a llama.cpp ``/props`` body."""
    try:
        props = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(props, dict):
        return None, None
    settings = props.get("default_generation_settings")
    context = _count(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if context is None:
        context = _count(props.get("n_ctx"))
    return context, _count(props.get("total_slots"))


def merge(listing: tuple[tuple[str, ...] | None, int | None],
          props: tuple[int | None, int | None] | None) -> ServerInfo:
    """One :class:`ServerInfo` from a model listing and (where answered) ``/props``."""
    models, listed_context = listing
    props_context, slots = props if props is not None else (None, None)
    if listed_context is not None:
        context, source = listed_context, "max_model_len in /v1/models"
    elif props_context is not None:
        context, source = props_context, "n_ctx in /props"
    else:
        context, source = None, None
    return ServerInfo(models=models, context_length=context, slots=slots,
                      context_source=source,
                      slots_source="total_slots in /props" if slots is not None else None)


def merge_replicas(infos: list[ServerInfo]) -> ServerInfo:
    """What several replicas of one model say together: the models the first lists, the
    shortest context any reports (a request may go to any of them) and their slots added up
    (requests in flight are shared by all; None unless every replica reports its slots)."""
    contexts = [(i.context_length, i.context_source) for i in infos
                if i.context_length is not None]
    context, source = min(contexts, key=lambda c: c[0]) if contexts else (None, None)
    slots = [i.slots for i in infos]
    total = sum(s for s in slots if s is not None) if all(s is not None for s in slots) else None
    return ServerInfo(models=infos[0].models, context_length=context, slots=total,
                      context_source=source,
                      slots_source=(f"total_slots in /props, over {len(infos)} replicas"
                                    if total is not None else None))


HTML_SUMMARY_CHARS = 100
_HTML_READ_CHARS = 20_000  # of a page read for its summary; the head comes first
_HTML_MARKERS = ("<!doctype html", "<html", "<head", "<body", "<title")


class _PageText(HTMLParser):
    """The title and the visible text blocks of an HTML page (no scripts or styles)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text and not self._hidden:
            self.blocks.append(text)


def completion_problem(content: bytes) -> str | None:
    """What keeps a 2xx body from being a chat completion (None: it is one): a body that is
    not JSON (an HTML page summarized), or JSON without a ``choices`` list."""
    try:
        payload = orjson.loads(content)
    except orjson.JSONDecodeError:
        text = content.decode("utf-8", "replace")
        if looks_like_html(text):
            return f"an HTML page ({html_summary(text)})"
        return "a body that is not JSON"
    if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) \
            or not payload["choices"]:
        return "JSON without choices"
    return None


def looks_like_html(body: str) -> bool:
    """Whether a response body is an HTML page (its opening names an HTML element)."""
    opening = body.lstrip()[:512].lower()
    return opening.startswith("<") and any(marker in opening for marker in _HTML_MARKERS)


def html_summary(body: str, limit: int = HTML_SUMMARY_CHARS) -> str:
    """One line for an HTML page: its title and text blocks, each once, joined by ``; `` and
    cut to ``limit`` characters (``Error response; Error code: 501; Message: ...``)."""
    parser = _PageText()
    parser.feed(body[:_HTML_READ_CHARS])
    text = "; ".join(dict.fromkeys(parser.blocks))
    if not text:
        return "an HTML page"
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
