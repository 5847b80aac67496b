"""Egress by allow-list: ``RunLimits(network=[...])`` gives the command a proxy that admits
only the names listed (plain HTTP and ``CONNECT`` tunnels), answers others ``403`` with a
clear reason, audits every request, admitted or refused; a direct connection still reaches
nothing. Servers on loopback stand in for the names (the proxy's resolver maps the test names
to ``127.0.0.1``); the default resolver refuses names that resolve to the host's own network.

Real bubblewrap, real curl and bash inside the sandbox, real servers on loopback.
"""

from __future__ import annotations

import asyncio
import http.server
import shutil
import threading
from collections.abc import AsyncIterator

import pytest
from sandbox_support import require_bwrap

from bastion import MemoryAuditSink, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.core.audit import AuditRecord
from bastion.core.errors import ConfigurationError
from bastion.sandbox import RunLimits

RULES = (Rule.allow("execute", "/**"), Rule.allow("*", "/**"))


class Server:
    """An HTTP server on loopback that answers ``hello from NAME`` and counts requests."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head)
        body = f"hello from {self.name}\n".encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
        )
        await writer.drain()
        writer.close()

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Server, Server]]:
    require_bwrap()
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed on this machine (the sandbox's client)")
    allowed, refused = Server("allowed"), Server("refused")
    await allowed.start()
    await refused.start()
    yield allowed, refused
    await allowed.stop()
    await refused.stop()


async def _loopback(host: str, port: int) -> list[str]:
    """The tests' resolver: every name is a server on loopback."""
    return ["127.0.0.1"]


def _limits(*allow: str) -> RunLimits:
    from bastion.sandbox.egress import Egress

    return RunLimits(network=Egress(allow=allow, resolve=_loopback))


def _workspace(audit: MemoryAuditSink) -> Workspace:
    return Workspace(
        [Mount.of("/scratch", MemoryStore())],
        policy=Policy(rules=RULES),
        principal=Principal.of("agent"),
        audit=audit,
    )


def _egress(audit: MemoryAuditSink) -> list[AuditRecord]:
    return [r for r in audit.records if r.operation == "egress"]


async def test_an_allowed_name_is_reached_and_a_refused_one_gets_403(
    servers: tuple[Server, Server],
) -> None:
    allowed, refused = servers
    audit = MemoryAuditSink()
    ws = _workspace(audit)
    result = await ws.run(
        f"curl -sS http://allowed.test:{allowed.port}/a; "
        f"curl -sS -w '%{{http_code}}' http://refused.test:{refused.port}/b",
        limits=_limits("allowed.test"),
        timeout=60,
    )
    assert result.stdout == (
        "hello from allowed\n"
        "bastion: refused.test is not on the sandbox's network allow-list; ask an operator\n403"
    )
    assert len(allowed.requests) == 1 and refused.requests == []
    sent = allowed.requests[0]
    assert sent.startswith(b"GET /a HTTP/1.1\r\n") and b"Connection: close" in sent
    assert b"proxy-connection" not in sent.lower()
    records = _egress(audit)
    assert [(r.target, r.allowed, r.path) for r in records] == [
        (f"allowed.test:{allowed.port}", True, "/"),
        (f"refused.test:{refused.port}", False, "/"),
    ]
    assert records[0].reason == "GET admitted" and "allow-list" in records[1].reason
    assert all(r.principal == "agent" for r in records)


async def test_https_style_tunnels_follow_the_same_list(servers: tuple[Server, Server]) -> None:
    allowed, refused = servers
    audit = MemoryAuditSink()
    result = await _workspace(audit).run(
        f"curl -sS -p http://allowed.test:{allowed.port}/t; "
        f"curl -sS -p http://refused.test:{refused.port}/t",
        limits=_limits("*.test:" + str(allowed.port)),  # a wildcard, one port
        timeout=60,
    )
    assert result.stdout == "hello from allowed\n"
    assert "CONNECT tunnel failed, response 403" in result.stderr
    assert refused.requests == [] and allowed.requests[0].startswith(b"GET /t HTTP/1.1")
    assert [(r.allowed, r.reason) for r in _egress(audit)] == [
        (True, "CONNECT admitted"),
        (False, "CONNECT refused: refused.test is not on the sandbox's network allow-list"),
    ]


async def test_a_direct_connection_reaches_nothing(servers: tuple[Server, Server]) -> None:
    allowed, _ = servers
    audit = MemoryAuditSink()
    result = await _workspace(audit).run(
        [
            "bash",
            "-c",
            f"curl -sS --noproxy '*' http://127.0.0.1:{allowed.port}/ "
            f"|| echo refused; (exec 3<>/dev/tcp/127.0.0.1/{allowed.port}) || echo closed",
        ],
        limits=_limits("allowed.test"),
        timeout=60,
    )
    assert result.stdout == "refused\nclosed\n"
    assert allowed.requests == [] and _egress(audit) == []


async def test_the_default_resolver_refuses_the_hosts_own_network(
    servers: tuple[Server, Server],
) -> None:
    allowed, _ = servers
    audit = MemoryAuditSink()
    result = await _workspace(audit).run(
        f"curl -sS http://localhost:{allowed.port}/",
        limits=RunLimits(network=["localhost"]),
        timeout=60,
    )
    assert "resolves to a non-public address (127.0.0.1" in result.stdout
    assert allowed.requests == []
    (record,) = _egress(audit)
    assert not record.allowed and "non-public" in record.reason


async def test_an_address_named_in_the_list_is_reached_as_named(
    servers: tuple[Server, Server],
) -> None:
    allowed, _ = servers
    result = await _workspace(MemoryAuditSink()).run(
        f"curl -sS http://127.0.0.1:{allowed.port}/",
        limits=RunLimits(network=[f"127.0.0.1:{allowed.port}"]),
        timeout=60,
    )
    assert result.stdout == "hello from allowed\n"


async def test_a_background_process_has_its_proxy_until_it_ends(
    servers: tuple[Server, Server],
) -> None:
    allowed, _ = servers
    audit = MemoryAuditSink()
    ws = _workspace(audit)
    info = await ws.start_process(
        f"read go; curl -sS http://allowed.test:{allowed.port}/bg",
        limits=_limits("allowed.test"),
        timeout=60,
    )
    await ws.send_input(info.id, "go\n")
    for _ in range(600):
        info = (await ws.processes())[0]
        if info.state != "running":
            break
        await asyncio.sleep(0.05)
    out = await ws.read_output(info.id)
    assert info.exit_code == 0 and out.text == "hello from allowed\n"
    assert [r.allowed for r in _egress(audit)] == [True]


@pytest.mark.parametrize(
    ("request_text", "first_line"),
    [
        ("GET /relative HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        ("GET https://allowed.test/ HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        ("CONNECT allowed.test HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        # the name checked is the one connected to: userinfo and Host headers change nothing
        (
            "GET http://allowed.test@refused.test:{port}/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
            "HTTP/1.1 403 Forbidden",
        ),
        (
            "CONNECT refused.test:{port} HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n",
            "HTTP/1.1 403 Forbidden",
        ),
        ("GET http://allowed.test:{port}/ HTTP/1.1\r\nX: " + "a" * 20000 + "\r\n\r\n", ""),
    ],
)
async def test_hostile_requests_to_the_proxy(
    servers: tuple[Server, Server], request_text: str, first_line: str
) -> None:
    allowed, refused = servers
    text = request_text.replace("{port}", str(refused.port))
    result = await _workspace(MemoryAuditSink()).run(
        [
            "bash",
            "-c",
            'exec 3<>/dev/tcp/127.0.0.1/3128; printf "%b" "$0" >&3; head -n 1 <&3 | tr -d "\\r"',
            text,
        ],
        limits=_limits("allowed.test"),
        timeout=60,
    )
    assert result.stdout.strip() == first_line
    assert refused.requests == [] and allowed.requests == []


def test_the_allow_list_is_checked_when_given() -> None:
    from bastion.sandbox.egress import Egress

    listed = Egress(allow=["Example.COM.", "*.pythonhosted.org", "api.test:8443", "10.0.0.5"])
    assert listed.admits("example.com", 443) and listed.admits("EXAMPLE.com.", 80)
    assert not listed.admits("www.example.com", 443)
    assert listed.admits("files.pythonhosted.org", 443)
    assert not listed.admits("pythonhosted.org", 443)
    assert listed.admits("api.test", 8443) and not listed.admits("api.test", 443)
    assert listed.admits("10.0.0.5", 22) and not listed.admits("10.0.0.6", 22)
    assert RunLimits(network=["a.test"]).egress == Egress(allow=("a.test",))
    assert RunLimits(network=True).egress is None and RunLimits().egress is None
    for bad in (["exa mple.com"], ["a.test:99999"], ["http://a.test"], [""]):
        with pytest.raises(ConfigurationError, match="allow-list entry"):
            RunLimits(network=bad)
    with pytest.raises(ConfigurationError, match="give a list of domains"):
        RunLimits(network="example.com")


async def test_the_execute_tool_runs_with_the_operators_limits(
    servers: tuple[Server, Server],
) -> None:
    from bastion.agents.tools import Toolset

    allowed, refused = servers
    audit = MemoryAuditSink()
    toolset = Toolset(_workspace(audit), run_limits=_limits("allowed.test"))
    out = await toolset.call(
        "execute",
        {
            "command": f"curl -sS http://allowed.test:{allowed.port}/; "
            f"curl -sS http://refused.test:{refused.port}/",
        },
    )
    assert out["stdout"].startswith("hello from allowed\nbastion: refused.test is not on")
    assert [r.allowed for r in _egress(audit)] == [True, False]
    plain = await Toolset(_workspace(audit)).call(
        "execute", {"command": f"curl -sS http://allowed.test:{allowed.port}/"}
    )
    assert plain["exit_code"] != 0 and plain["stdout"] == ""  # no limits given: no network


class _Signal(http.server.BaseHTTPRequestHandler):
    reached = threading.Event()

    def do_GET(self) -> None:
        type(self).reached.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


def test_the_proxy_answers_between_blocking_calls() -> None:
    """A background process started through the blocking facade reaches its host while the
    caller makes no call at all (the proxy's loop is driven between calls)."""
    require_bwrap()
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed on this machine (the sandbox's client)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Signal)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        ws = _workspace(MemoryAuditSink()).sync()
        info = ws.start_process(
            f"curl -sS http://127.0.0.1:{port}/", limits=RunLimits(network=[f"127.0.0.1:{port}"])
        )
        assert _Signal.reached.wait(60), "the request never reached the server"
        ws.kill_process(info.id)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_a_tunnel_held_open_by_the_host_ends_with_the_command() -> None:
    """An admitted host that never answers nor closes does not keep the run (or the proxy's
    connection) alive past the command."""
    require_bwrap()
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read nothing, answer nothing, never close

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        result = await asyncio.wait_for(
            _workspace(MemoryAuditSink()).run(
                [
                    "bash",
                    "-c",
                    "exec 3<>/dev/tcp/127.0.0.1/3128; "
                    f"printf 'CONNECT allowed.test:{port} HTTP/1.1\\r\\n\\r\\n' >&3; "
                    "head -n 1 <&3",
                ],
                limits=_limits("allowed.test"),
                timeout=60,
            ),
            120,  # a guard against a hang, not a measure
        )
        assert result.stdout == "HTTP/1.1 200 Connection established\r\n"
        assert len(held) == 1
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()
