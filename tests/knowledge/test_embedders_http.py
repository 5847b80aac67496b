"""HttpEmbedder against a real HTTP server on 127.0.0.1 that follows a script of replies."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np
import pytest

from bastion.core.errors import ConfigurationError, OperationError
from bastion.knowledge.embedders import (
    EmbeddingError,
    EmbeddingRequestError,
    EmbeddingResponseError,
    EmbeddingUnavailableError,
    HashingEmbedder,
    HttpEmbedder,
)
from bastion.knowledge.embedders.http import approx_token_count
from bastion.remote.retry import retry_after as _retry_after

KEY = "sk-test-SECRET-0123456789"
DIM = 8
_VECTORS = HashingEmbedder(DIM)


def _raw_vector(text: str) -> list[float]:
    """What the fake server returns for a text: deterministic and deliberately not unit length."""
    return [float(x) * 3.0 for x in _VECTORS.encode([text])[0]]


@dataclass
class Reply:
    status: int = 200
    body: bytes | None = None  # None: a valid embeddings response for the request
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class FakeEmbeddingsServer:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                payload = json.loads(self.rfile.read(length))
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": payload}
                )
                reply = server.script.popleft() if server.script else Reply()
                if reply.delay:
                    time.sleep(reply.delay)
                body = reply.body
                if body is None:
                    items = [
                        {"object": "embedding", "index": i, "embedding": _raw_vector(t)}
                        for i, t in enumerate(payload["input"])
                    ]
                    random.Random(len(items)).shuffle(items)  # servers may reorder; index rules
                    body = json.dumps({"object": "list", "data": items}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the client hung up on a slow reply: expected in the timeout tests

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def embedder(self, **options: Any) -> HttpEmbedder:
        defaults: dict[str, Any] = {"api_key": KEY, "backoff": 0.01, "timeout": 5.0}
        return HttpEmbedder(self.url, "fake-embed", DIM, **(defaults | options))


@pytest.fixture
def server() -> Iterator[FakeEmbeddingsServer]:
    fake = FakeEmbeddingsServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def _assert_clean(exc: BaseException) -> None:
    message = str(exc)
    assert KEY not in message
    assert "\n" not in message
    assert "secret" not in message.lower()


# -- happy path ------------------------------------------------------------------------------------


async def test_batches_order_and_normalization(server: FakeEmbeddingsServer) -> None:
    texts = [f"text number {i}" for i in range(150)]
    out = await server.embedder(batch_size=64).embed(texts)
    assert out.shape == (150, DIM)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out, _VECTORS.encode(texts), atol=1e-5)
    assert sorted(len(r["json"]["input"]) for r in server.requests) == [22, 64, 64]
    first = server.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["json"]["model"] == "fake-embed"
    assert first["headers"]["Authorization"] == f"Bearer {KEY}"


async def test_empty_input_makes_no_request(server: FakeEmbeddingsServer) -> None:
    out = await server.embedder().embed([])
    assert out.shape == (0, DIM)
    assert server.requests == []


async def test_shared_client(server: FakeEmbeddingsServer) -> None:
    async with httpx.AsyncClient() as client:
        embedder = server.embedder(client=client)
        await embedder.embed(["a"])
        await embedder.embed(["b"])
    assert len(server.requests) == 2


def test_identity_and_token_count(server: FakeEmbeddingsServer) -> None:
    embedder = server.embedder(name="fake-embed:8d", max_tokens=100)
    assert embedder.name == "fake-embed:8d"
    assert embedder.dim == DIM
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("abcdef") == 2
    assert embedder.fits("word " * 10)
    assert not embedder.fits("word " * 1000)
    assert KEY not in repr(embedder)
    assert approx_token_count("é") == 1


# -- retries ---------------------------------------------------------------------------------------


async def test_429_then_success(server: FakeEmbeddingsServer) -> None:
    server.script.extend([Reply(429, b'{"error": {"type": "rate_limit"}}'), Reply()])
    out = await server.embedder().embed(["hello"])
    assert out.shape == (1, DIM)
    assert len(server.requests) == 2


async def test_retry_after_is_honoured(server: FakeEmbeddingsServer) -> None:
    server.script.extend([Reply(503, b"{}", {"Retry-After": "0.4"}), Reply()])
    start = time.monotonic()
    await server.embedder().embed(["hello"])
    assert time.monotonic() - start >= 0.4
    assert len(server.requests) == 2


async def test_retry_after_longer_than_max_wait_gives_up_at_once(
    server: FakeEmbeddingsServer,
) -> None:
    server.script.append(Reply(429, b"{}", {"Retry-After": "3600"}))
    with pytest.raises(EmbeddingUnavailableError, match="retry after 3600 s") as info:
        await server.embedder(max_wait=5).embed(["hello"])
    assert info.value.status == 429
    assert len(server.requests) == 1
    _assert_clean(info.value)


async def test_5xx_until_give_up(server: FakeEmbeddingsServer) -> None:
    server.script.extend(Reply(500, b"oops") for _ in range(10))
    with pytest.raises(EmbeddingUnavailableError, match="after 3 attempts") as info:
        await server.embedder(max_retries=2).embed(["hello"])
    assert len(server.requests) == 3
    assert info.value.status == 500
    assert isinstance(info.value, EmbeddingError)
    assert isinstance(info.value, OperationError)
    _assert_clean(info.value)


async def test_slow_reply_times_out_and_is_retried(server: FakeEmbeddingsServer) -> None:
    server.script.extend([Reply(delay=1.0), Reply(delay=1.0)])
    start = time.monotonic()
    with pytest.raises(EmbeddingUnavailableError, match=r"no reply within 0\.2 s") as info:
        await server.embedder(timeout=0.2, max_retries=1).embed(["hello"])
    assert time.monotonic() - start < 0.9
    assert len(server.requests) == 2
    _assert_clean(info.value)


async def test_slow_reply_then_success(server: FakeEmbeddingsServer) -> None:
    server.script.extend([Reply(delay=1.0), Reply()])
    out = await server.embedder(timeout=0.3, max_retries=1).embed(["hello"])
    assert out.shape == (1, DIM)


async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://user:{KEY}@127.0.0.1:{port}/v1"
    embedder = HttpEmbedder(url, "m", DIM, api_key=KEY, max_retries=2, backoff=0.01)
    with pytest.raises(EmbeddingUnavailableError, match="ConnectError") as info:
        await embedder.embed(["hello"])
    assert info.value.status is None
    assert f"127.0.0.1:{port}" in str(info.value)
    _assert_clean(info.value)


# -- refusals and bad replies ------------------------------------------------------------------------


async def test_client_errors_are_not_retried_and_never_echo_the_key(
    server: FakeEmbeddingsServer,
) -> None:
    echo = {"error": {"message": f"Incorrect API key {KEY}", "type": "auth", "code": KEY}}
    server.script.append(Reply(401, json.dumps(echo).encode()))
    with pytest.raises(EmbeddingRequestError, match="HTTP 401") as info:
        await server.embedder().embed(["hello"])
    assert len(server.requests) == 1
    assert info.value.status == 401
    assert "check the API key" in str(info.value)
    _assert_clean(info.value)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"this is not json", "not JSON"),
        (b'{"data": []}', "expected 1 embeddings"),
        (b'{"data": [{"index": 0, "embedding": [1, 2]}]}', "expected 8 dimensions"),
        (b'{"data": [{"index": 5, "embedding": [1,2,3,4,5,6,7,8]}]}', "bad or repeated index"),
        (b'{"data": [{"index": 0, "embedding": "AAAA"}]}', "no embedding list"),
        (b'{"data": [{"index": 0, "embedding": ["a",2,3,4,5,6,7,8]}]}', "not lists of numbers"),
        (b"[1, 2, 3]", "expected 1 embeddings"),
    ],
)
async def test_malformed_replies(server: FakeEmbeddingsServer, body: bytes, why: str) -> None:
    server.script.append(Reply(200, body))
    with pytest.raises(EmbeddingResponseError, match=why) as info:
        await server.embedder().embed(["hello"])
    assert len(server.requests) == 1  # a bad reply is not retried
    _assert_clean(info.value)


def test_invalid_configuration() -> None:
    with pytest.raises(ConfigurationError):
        HttpEmbedder("ftp://example.com/v1", "m", 8)
    with pytest.raises(ConfigurationError):
        HttpEmbedder("http://127.0.0.1/v1", "m", 0)
    with pytest.raises(ConfigurationError):
        HttpEmbedder("http://127.0.0.1/v1", "m", 8, timeout=0)
    # the same limits as the chat model's: one endpoint checks both
    for bad in ({"max_retries": -1}, {"backoff": -0.5}, {"max_wait": -1.0}):
        with pytest.raises(ConfigurationError, match="HttpEmbedder: max_retries, backoff"):
            HttpEmbedder("http://127.0.0.1/v1", "m", 8, **bad)


@pytest.mark.parametrize(
    ("header", "expected"),
    [(None, None), ("", None), ("3", 3.0), ("0.5", 0.5), ("-2", 0.0), ("soon", None)],
)
def test_retry_after_parsing(header: str | None, expected: float | None) -> None:
    assert _retry_after(header) == expected


def test_retry_after_http_date() -> None:
    from email.utils import formatdate

    seconds = _retry_after(formatdate(time.time() + 30, usegmt=True))
    assert seconds is not None
    assert 25 <= seconds <= 31
