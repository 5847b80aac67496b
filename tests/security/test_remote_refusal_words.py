"""A remote service's refusal is told in Bastion's words: the HTTP status with its standard
phrase, the error type and code only when they are short words (``invalid_request_error``),
never the server's own reason phrase or free text. A hostile or broken server (or a proxy in
front of it) cannot put a URL with credentials, terminal control sequences, a bidirectional
override or a long body into the one-line error an agent, a log or a terminal shows. The URL
the client was given keeps no user info nor query either.

Real servers on loopback (``asyncio`` streams) answer with crafted status lines and bodies;
the embedder and the chat model share the client (``bastion.remote.openai``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from bastion.core.errors import RemoteError, RemoteRequestError
from bastion.governance.answer.chat import Message
from bastion.governance.answer.http_chat import HttpChatModel
from bastion.knowledge.embedders.http import HttpEmbedder

CREDENTIAL_URL = "http://admin:hunter2@internal.example/x"
HOSTILE = [CREDENTIAL_URL, "hunter2", "\x1b[31m", "\u202e", "\x07", "QSECRET", "sk-KEY"]


@asynccontextmanager
async def _server(status_line: bytes, body: bytes) -> AsyncIterator[str]:
    """A server that answers every request with ``status_line`` and ``body``; yields the
    base URL a client is given (with user info and a query, which no message may repeat)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            status_line + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
        )
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://user:QSECRET@127.0.0.1:{port}/v1?key=QSECRET"
    finally:
        server.close()
        await server.wait_closed()


def _embed(url: str) -> Awaitable[object]:
    return HttpEmbedder(url, "m", 4, api_key="sk-KEY", max_retries=0).embed(["x"])


def _chat(url: str) -> Awaitable[object]:
    model = HttpChatModel(url, "m", api_key="sk-KEY", max_retries=0)
    return model.complete([Message("user", "hello")])


CLIENTS: dict[str, Callable[[str], Awaitable[object]]] = {"embedder": _embed, "chat": _chat}

BODY = json.dumps(
    {"error": {"type": f"{CREDENTIAL_URL} \x1b[31mred", "code": "sk-KEY \u202egnp.exe"}}
).encode()

REFUSALS = {
    "a reason phrase with a URL": (b"HTTP/1.1 400 Bad " + CREDENTIAL_URL.encode(), BODY, 400),
    "a reason phrase with control characters": (b"HTTP/1.1 401 \x1b[31mEVIL\x07", BODY, 401),
    "a very long reason phrase": (b"HTTP/1.1 403 " + b"A" * 4000, b"{}", 403),
    "a very long error type": (
        b"HTTP/1.1 404 Not Found",
        json.dumps({"error": {"type": "x" * 100_000}}).encode(),
        404,
    ),
    "an unknown status": (b"HTTP/1.1 499 " + CREDENTIAL_URL.encode(), BODY, 499),
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("case", sorted(REFUSALS))
async def test_a_refusal_repeats_nothing_the_server_wrote(client: str, case: str) -> None:
    status_line, body, status = REFUSALS[case]
    async with _server(status_line, body) as url:
        with pytest.raises(RemoteRequestError) as caught:
            await CLIENTS[client](url)
    error = caught.value
    told = repr((str(error), error.args, error.path, error.reason, error.__cause__))
    for word in HOSTILE:
        assert word not in told
    assert error.status == status
    assert f"HTTP {status}" in str(error)
    assert len(str(error)) < 300
    assert str(error).isprintable()


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_a_refusal_keeps_the_standard_phrase_and_a_word_like_code(client: str) -> None:
    body = json.dumps(
        {"error": {"type": "invalid_request_error", "code": "model_not_found"}}
    ).encode()
    async with _server(b"HTTP/1.1 404 Nope " + CREDENTIAL_URL.encode(), body) as url:
        with pytest.raises(RemoteError) as caught:
            await CLIENTS[client](url)
    message = str(caught.value)
    assert "HTTP 404 Not Found (invalid_request_error, model_not_found)" in message
    assert "Nope" not in message
    assert "127.0.0.1" in message  # the service is named, by its URL without credentials
