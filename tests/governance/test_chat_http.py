"""HttpChatModel against a real OpenAI-compatible HTTP server on 127.0.0.1 that follows a
script of replies: whole answers, Server-Sent Events, rate limits, 5xx, hangs and broken
streams. The last test asks a workspace a question through it, end to end."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import ConfigurationError, OperationError
from bastion.governance.answer import (
    AnswerStatus,
    ChatRequestError,
    ChatResponseError,
    ChatUnavailableError,
    HttpChatModel,
    Message,
)
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

KEY = "sk-test-SECRET-0123456789"
ASK = [Message("system", "Be brief."), Message("user", "Say hello.")]


@dataclass
class Reply:
    status: int = 200
    content: str = "Hello there."
    body: bytes | None = None
    """Raw body instead of a completion built from ``content``."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (a hang, when longer than the client's timeout)."""
    events: list[str] | None = None
    """For a streamed reply: the raw ``data:`` payloads, sent one by one."""
    event_delay: float = 0.0
    """Seconds between events (a stall mid-answer)."""


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


def _delta(text: str | None = None, *, finish: str | None = None, **extra: Any) -> str:
    delta: dict[str, Any] = dict(extra)
    if text is not None:
        delta["content"] = text
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


class FakeChatServer:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.answerer: Any = None
        """When set and the script is empty: ``answerer(payload) -> content``."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                payload = json.loads(self.rfile.read(length))
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": payload}
                )
                if server.script:
                    reply = server.script.popleft()
                elif server.answerer is not None:
                    reply = Reply(content=server.answerer(payload))
                else:
                    reply = Reply()
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.events is not None:
                    self._stream(reply)
                    return
                body = reply.body if reply.body is not None else _completion(reply.content)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _stream(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.write(b": keep-alive comment\n\n")
                for data in reply.events or []:
                    if reply.event_delay:
                        time.sleep(reply.event_delay)
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the client hung up on a slow reply: expected in the timeout tests

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def model(self, **options: Any) -> HttpChatModel:
        defaults: dict[str, Any] = {"api_key": KEY, "backoff": 0.01, "timeout": 5.0}
        return HttpChatModel(self.url, "fake-chat", **(defaults | options))


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    fake = FakeChatServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def _assert_clean(exc: BaseException) -> None:
    message = str(exc)
    assert KEY not in message
    assert "\n" not in message
    assert "Say hello" not in message and "Be brief" not in message


async def _collect(model: HttpChatModel) -> list[str]:
    return [delta async for delta in model.stream(ASK)]


# -- whole replies ---------------------------------------------------------------------------------


async def test_complete_sends_an_openai_request_and_returns_the_content(
    server: FakeChatServer,
) -> None:
    model = server.model(max_tokens=64)
    assert await model.complete(ASK) == "Hello there."
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["json"] == {
        "model": "fake-chat",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello."},
        ],
        "temperature": 0.0,
        "stream": False,
        "max_tokens": 64,
    }
    assert KEY not in repr(model) and "fake-chat" in repr(model)


async def test_a_shared_client_is_used_and_left_open(server: FakeChatServer) -> None:
    async with httpx.AsyncClient() as client:
        model = server.model(client=client)
        assert await model.complete(ASK) == "Hello there."
        assert await model.complete(ASK, max_tokens=5) == "Hello there."
        assert not client.is_closed
    assert server.requests[1]["json"]["max_tokens"] == 5


async def test_rate_limit_is_retried_after_what_retry_after_asks(server: FakeChatServer) -> None:
    server.script.extend([Reply(status=429, body=b"{}", headers={"Retry-After": "0"}), Reply()])
    assert await server.model().complete(ASK) == "Hello there."
    assert len(server.requests) == 2


async def test_server_errors_are_retried_then_succeed(server: FakeChatServer) -> None:
    server.script.extend([Reply(status=503, body=b"busy"), Reply(status=502, body=b""), Reply()])
    assert await server.model(max_retries=2).complete(ASK) == "Hello there."
    assert len(server.requests) == 3


async def test_retries_are_bounded(server: FakeChatServer) -> None:
    server.script.extend([Reply(status=500, body=b"{}") for _ in range(5)])
    with pytest.raises(ChatUnavailableError) as caught:
        await server.model(max_retries=2).complete(ASK)
    assert len(server.requests) == 3
    assert caught.value.status == 500
    assert "after 3 attempts" in str(caught.value) and "HTTP 500" in str(caught.value)
    assert isinstance(caught.value, OperationError)
    _assert_clean(caught.value)


async def test_a_long_retry_after_gives_up_at_once(server: FakeChatServer) -> None:
    server.script.append(Reply(status=429, body=b"{}", headers={"Retry-After": "120"}))
    with pytest.raises(ChatUnavailableError) as caught:
        await server.model(max_wait=5.0).complete(ASK)
    assert len(server.requests) == 1
    assert "retry after 120 s" in str(caught.value)


async def test_a_hanging_server_times_out_and_is_retried(server: FakeChatServer) -> None:
    server.script.extend([Reply(delay=1.5), Reply(delay=1.5)])
    with pytest.raises(ChatUnavailableError) as caught:
        await server.model(timeout=0.2, max_retries=1).complete(ASK)
    assert "no reply within 0.2 s" in str(caught.value)
    assert len(server.requests) == 2
    _assert_clean(caught.value)


async def test_client_errors_are_not_retried_and_never_echo_the_key(
    server: FakeChatServer,
) -> None:
    body = json.dumps({"error": {"type": f"invalid_api_key {KEY}", "code": "bad_key"}}).encode()
    server.script.append(Reply(status=401, body=body))
    with pytest.raises(ChatRequestError) as caught:
        await server.model().complete(ASK)
    assert len(server.requests) == 1
    assert caught.value.status == 401
    assert "HTTP 401" in str(caught.value) and "check the API key" in str(caught.value)
    _assert_clean(caught.value)


@pytest.mark.parametrize(
    "body", [b"not json", b"{}", b'{"choices": []}', b'{"choices": [{"message": {}}]}']
)
async def test_an_invalid_reply_is_a_response_error(server: FakeChatServer, body: bytes) -> None:
    server.script.append(Reply(body=body))
    with pytest.raises(ChatResponseError) as caught:
        await server.model().complete(ASK)
    assert "invalid reply" in str(caught.value)
    _assert_clean(caught.value)


async def test_a_refused_connection_is_unavailable() -> None:
    model = HttpChatModel("http://127.0.0.1:9/v1", "m", timeout=1.0, max_retries=1, backoff=0.01)
    with pytest.raises(ChatUnavailableError) as caught:
        await model.complete(ASK)
    assert "after 2 attempts" in str(caught.value)


async def test_credentials_in_the_url_never_reach_a_message(server: FakeChatServer) -> None:
    port = server.url.split(":")[2].split("/")[0]
    url = f"http://user:{KEY}@127.0.0.1:{port}/v1?key={KEY}"
    server.script.append(Reply(401, body=b'{"error": {"type": "auth"}}'))
    model = HttpChatModel(url, "m", api_key=KEY, max_retries=0)
    with pytest.raises(ChatRequestError, match="HTTP 401") as caught:
        await model.complete(ASK)
    assert f"http://127.0.0.1:{port}/v1/chat/completions refused" in str(caught.value)
    _assert_clean(caught.value)
    assert KEY not in repr(model)
    # the path goes before the base URL's query, which is kept (``?api-version=`` proxies)
    assert server.requests[0]["path"] == f"/v1/chat/completions?key={KEY}"


@pytest.mark.parametrize("url", ["not a url", "ftp://example.org/v1", "http:///v1", "http://[::1"])
def test_a_bad_base_url_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError):
        HttpChatModel(url, "m")


def test_bad_limits_are_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        HttpChatModel("http://127.0.0.1/v1", "m", timeout=0)
    with pytest.raises(ConfigurationError):
        HttpChatModel("http://127.0.0.1/v1", "m", max_retries=-1)


# -- streaming ------------------------------------------------------------------------------------


async def test_stream_yields_content_deltas_and_drops_reasoning(server: FakeChatServer) -> None:
    events = [
        _delta(role="assistant"),
        _delta(reasoning_content="first I will think"),
        _delta("The "),
        _delta("answer"),
        _delta("."),
        _delta(finish="stop"),
        "[DONE]",
    ]
    server.script.append(Reply(events=events))
    assert await _collect(server.model()) == ["The ", "answer", "."]
    request = server.requests[0]
    assert request["json"]["stream"] is True
    assert request["headers"]["Accept"] == "text/event-stream"


async def test_stream_ends_on_a_finish_reason_without_done(server: FakeChatServer) -> None:
    server.script.append(Reply(events=[_delta("Hi"), _delta("!", finish="stop")]))
    assert "".join(await _collect(server.model())) == "Hi!"


async def test_stream_retries_a_rate_limit_before_it_starts(server: FakeChatServer) -> None:
    server.script.extend(
        [
            Reply(status=429, body=b"{}", headers={"Retry-After": "0"}),
            Reply(events=[_delta("ok"), "[DONE]"]),
        ]
    )
    assert await _collect(server.model()) == ["ok"]
    assert len(server.requests) == 2


async def test_a_stream_cut_short_is_an_error_not_a_short_answer(server: FakeChatServer) -> None:
    server.script.append(Reply(events=[_delta("The answer is"), _delta(" partly")]))
    received: list[str] = []
    with pytest.raises(ChatUnavailableError) as caught:
        async for delta in server.model().stream(ASK):
            received.append(delta)
    assert received == ["The answer is", " partly"]
    assert "ended the stream before the answer was complete" in str(caught.value)


async def test_a_stream_that_stalls_mid_answer_times_out(server: FakeChatServer) -> None:
    server.script.append(Reply(events=[_delta("Hel"), _delta("lo"), "[DONE]"], event_delay=1.5))
    with pytest.raises(ChatUnavailableError) as caught:
        await _collect(server.model(timeout=0.3))
    assert "stalled mid-answer" in str(caught.value)
    _assert_clean(caught.value)


async def test_a_stream_error_event_is_a_response_error(server: FakeChatServer) -> None:
    error = json.dumps({"error": {"message": "overloaded"}})
    server.script.append(Reply(events=[_delta("Hel"), error]))
    with pytest.raises(ChatResponseError):
        await _collect(server.model())


async def test_a_stream_refused_outright_is_a_request_error(server: FakeChatServer) -> None:
    server.script.append(Reply(status=404, body=b'{"error": {"code": "model_not_found"}}'))
    with pytest.raises(ChatRequestError) as caught:
        await _collect(server.model())
    assert "model_not_found" in str(caught.value)


# -- end to end: a workspace answers through the HTTP model --------------------------------------

_MARKER = re.compile(r"^§([0-9a-f]{32})$", re.MULTILINE)


def _cite_first_block(payload: dict[str, Any]) -> str:
    """A stand-in model: the first sentence of the first context block, with its marker."""
    user = payload["messages"][-1]["content"]
    match = _MARKER.search(user)
    assert match is not None
    body = user[match.end() :].strip().split("\n\n")
    sentence = next(p for p in body if not p.startswith("#")).split(". ")[0].rstrip(".")
    return f"{sentence}. §{match.group(1)}"


async def test_workspace_ask_through_the_http_chat_model(server: FakeChatServer) -> None:
    server.answerer = _cite_first_block
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=Principal.of("lead"),
    )
    await ws.write("/docs/oncall.md", "# On-call\n\nPages are answered within 15 minutes.\n")
    answer = await ws.ask("How fast are pages answered?", chat=server.model())
    assert answer.status is AnswerStatus.ANSWERED
    assert answer.generator == "chat:fake-chat"
    assert answer.verified, answer.verification
    assert answer.answer.startswith("Pages are answered within 15 minutes.")
    assert [c.path for c in answer.citations] == ["/docs/oncall.md"]
    sent = server.requests[0]["json"]["messages"]
    assert sent[0]["role"] == "system" and "§" in sent[0]["content"]
    assert "Question: How fast are pages answered?" in sent[1]["content"]
