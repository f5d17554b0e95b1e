"""OpenAIEmbedder against a tiny ``/embeddings`` server on the loopback interface."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from clstream.core.errors import SpecError
from clstream.retrieval.dense import (
    DenseIndex,
    EmbeddingError,
    OpenAIEmbedder,
    load_embedder,
    parse_embeddings,
)


class Server:
    """Answers with the statuses queued in ``script`` first, then with real embeddings."""

    def __init__(self) -> None:
        self.script: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                owner.headers.append(dict(self.headers))
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": "not found"})
                if owner.script:
                    status = owner.script.pop(0)
                    return self._send(status, {"error": f"status {status}"})
                data = [{"index": i, "embedding": owner.vector(t)}
                        for i, t in enumerate(body["input"])]
                self._send(200, {"object": "list", "data": list(reversed(data))})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @staticmethod
    def vector(text: str) -> list[float]:
        """Counts of the letters a, b, c: a deterministic bag-of-letters embedding."""
        return [float(text.count(ch)) for ch in "abc"]


@pytest.fixture()
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def embedder(server: Server, **kwargs: Any) -> OpenAIEmbedder:
    options = {"backoff_base": 0.0, "backoff_max": 0.0, "request_timeout": 5.0, **kwargs}
    return OpenAIEmbedder("tiny-embed", base_url=server.url, **options)


def test_embeddings_are_ordered_normalized_and_batched(server: Server) -> None:
    client = embedder(server, batch_size=2)
    vectors = client.embed(["aa", "b", "abc", "cc", "a"])
    assert vectors.shape == (5, 3)
    expected: list[list[float]] = [[1, 0, 0], [0, 1, 0], [3 ** -0.5] * 3, [0, 0, 1], [1, 0, 0]]
    assert np.allclose(vectors, expected)
    assert [b["input"] for b in server.bodies] == [["aa", "b"], ["abc", "cc"], ["a"]]
    assert all(b["model"] == "tiny-embed" for b in server.bodies)
    assert "authorization" not in {k.lower() for k in server.headers[0]}
    client.close()


def test_retries_on_429_and_5xx_then_succeeds(server: Server) -> None:
    server.script = [429, 503, 500]
    vectors = embedder(server, max_retries=3).embed(["ab"])
    assert len(server.bodies) == 4
    assert np.allclose(vectors, [[2 ** -0.5, 2 ** -0.5, 0]])


def test_gives_up_after_the_retries_and_not_on_400(server: Server) -> None:
    server.script = [500, 500, 500]
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        embedder(server, max_retries=2).embed(["a"])
    assert len(server.bodies) == 3
    server.script = [400]
    with pytest.raises(EmbeddingError, match="HTTP 400"):
        embedder(server, max_retries=5).embed(["a"])
    assert len(server.bodies) == 4


def test_api_key_goes_only_in_the_header(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLSTREAM_TEST_EMBED_KEY", "sekrit-123")
    client = embedder(server, api_key_env="CLSTREAM_TEST_EMBED_KEY")
    client.embed(["a"])
    assert server.headers[-1]["Authorization"] == "Bearer sekrit-123"
    assert "sekrit" not in repr(client)
    monkeypatch.delenv("CLSTREAM_TEST_EMBED_KEY")
    with pytest.raises(SpecError, match="CLSTREAM_TEST_EMBED_KEY"):
        embedder(server, api_key_env="CLSTREAM_TEST_EMBED_KEY")


def test_dense_index_over_the_endpoint_embeds_each_text_once(server: Server) -> None:
    cached = load_embedder("openai:tiny-embed", base_url=server.url)
    assert cached.name == "openai:tiny-embed"
    index = DenseIndex(cached)
    index.add_many([(0, "aaa"), (1, "bbb"), (2, "ccc")])
    index.add(3, "aab")
    for _ in range(3):
        assert [d for d, _ in index.search("a", 2)] == [0, 3]
    assert [b["input"] for b in server.bodies] == [["aaa", "bbb", "ccc"], ["aab"], ["a"]]


def test_malformed_bodies_are_rejected() -> None:
    with pytest.raises(ValueError, match="data list of 2"):
        parse_embeddings({"data": [{"index": 0, "embedding": [1.0]}]}, 2)
    with pytest.raises(ValueError, match="indexes"):
        parse_embeddings({"data": [{"index": 0, "embedding": [1.0]},
                                   {"index": 0, "embedding": [2.0]}]}, 2)
    with pytest.raises(ValueError, match="finite"):
        parse_embeddings({"data": [{"index": 0, "embedding": [float("nan")]}]}, 1)
    with pytest.raises(SpecError, match="base_url"):
        OpenAIEmbedder("m", base_url="ftp://x")
