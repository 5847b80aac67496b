"""Red team of the egress allow-list, with real bubblewrap, bash and curl inside and real servers
on loopback: a request admitted for one name carries nothing to another.

Attacks pinned (docs/sandbox.md, "Egress"): a ``Host`` header naming another site on the
admitted address (virtual hosting, a CDN: the proxy used to send the client's ``Host`` on); a
second request pipelined behind the first on one connection (it used to be forwarded raw); a
chunked body; a header smuggled behind a bare LF; HTTP/1.0 with no ``Host``; ``CONNECT`` to
another port of an admitted name; names spelt in upper case, with trailing dots, or as
lookalikes of a wildcard; addresses that carry a private IPv4 address inside an IPv6 one
(mapped, NAT64, 6to4); a slow client holding a connection while another is served; direct UDP
(DNS) and abstract unix sockets of the host.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
from collections.abc import AsyncIterator

import pytest
from sandbox_support import require_bwrap

from bastion import MemoryAuditSink, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.sandbox import RunLimits
from bastion.sandbox.egress import Egress, EgressRefused, public_addresses

RULES = (Rule.allow("execute", "/**"), Rule.allow("*", "/**"))

_RAW = 'exec 3<>/dev/tcp/127.0.0.1/3128; printf "%b" "$0" >&3; cat <&3 | tr -d "\\r"'
"""bash inside: send ``$0`` (with escapes) to the proxy as is, print its whole answer."""


class Recording:
    """An HTTP server on loopback that answers the first request's head, half-closes, and
    records every byte it was sent on the connection until the proxy closes it."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            body = b"hello\n"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
                + body
            )
            await writer.drain()
            writer.write_eof()
            rest = await asyncio.wait_for(reader.read(), 20)
            self.received.append(head + rest)
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            self.received.append(f"error: {exc!r}".encode())
        finally:
            writer.close()

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def text(self) -> str:
        return b"".join(self.received).decode("latin-1")


@pytest.fixture
async def server() -> AsyncIterator[Recording]:
    require_bwrap()
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed on this machine (the sandbox's client)")
    recording = Recording()
    await recording.start()
    yield recording
    await recording.stop()


async def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


def _limits(*allow: str) -> RunLimits:
    return RunLimits(network=Egress(allow=allow, resolve=_loopback))


def _workspace(audit: MemoryAuditSink | None = None) -> Workspace:
    return Workspace(
        [Mount.of("/scratch", MemoryStore())],
        policy=Policy(rules=RULES),
        principal=Principal.of("agent"),
        audit=audit or MemoryAuditSink(),
    )


async def _raw(request: str, limits: RunLimits, audit: MemoryAuditSink | None = None) -> str:
    ws = _workspace(audit)
    result = await ws.run(["bash", "-c", _RAW, request], limits=limits, timeout=60)
    return result.stdout


async def test_the_host_header_is_the_admitted_host_never_the_clients(
    server: Recording,
) -> None:
    port = server.port
    answer = await _raw(
        f"GET http://allowed.test:{port}/x HTTP/1.1\\r\\nHost: refused.test\\r\\n"
        f"HOST: other.test\\r\\nAccept: */*\\r\\n\\r\\n",
        _limits("allowed.test"),
    )
    assert answer.startswith("HTTP/1.1 200 OK") and answer.endswith("hello\n")
    (sent,) = server.received
    assert sent.startswith(f"GET /x HTTP/1.1\r\nHost: allowed.test:{port}\r\n".encode())
    assert b"refused.test" not in sent and b"other.test" not in sent
    assert sent.lower().count(b"host:") == 1 and b"Accept: */*" in sent


async def test_a_pipelined_second_request_is_never_forwarded(server: Recording) -> None:
    port = server.port
    first = f"GET http://allowed.test:{port}/one HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n"
    second = "GET /two HTTP/1.1\\r\\nHost: refused.test\\r\\n\\r\\n"
    answer = await _raw(first + second, _limits("allowed.test"))
    assert answer.startswith("HTTP/1.1 200 OK")
    (sent,) = server.received
    assert b"/two" not in sent and b"refused.test" not in sent


async def test_a_body_goes_by_its_length_and_nothing_after_it(server: Recording) -> None:
    port = server.port
    request = (
        f"POST http://allowed.test:{port}/p HTTP/1.1\\r\\nContent-Length: 5\\r\\n\\r\\n"
        "helloGET /smuggled HTTP/1.1\\r\\nHost: refused.test\\r\\n\\r\\n"
    )
    answer = await _raw(request, _limits("allowed.test"))
    assert answer.startswith("HTTP/1.1 200 OK")
    (sent,) = server.received
    assert sent.endswith(b"\r\n\r\nhello") and b"Content-Length: 5\r\n" in sent
    assert b"smuggled" not in sent and b"refused.test" not in sent


async def test_curl_posts_a_body_through_the_proxy(server: Recording) -> None:
    result = await _workspace().run(
        f"curl -sS -d 'a=1&b=2' http://allowed.test:{server.port}/form",
        limits=_limits("allowed.test"),
        timeout=60,
    )
    assert result.stdout == "hello\n"
    (sent,) = server.received
    assert sent.startswith(b"POST /form HTTP/1.1\r\n") and sent.endswith(b"\r\n\r\na=1&b=2")


@pytest.mark.parametrize(
    ("request_text", "first_line"),
    [
        # a chunked body cannot be bounded without parsing it: refused
        (
            "POST http://allowed.test:{port}/ HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n"
            "0\\r\\n\\r\\n",
            "HTTP/1.1 411 Length Required",
        ),
        # a second header behind a bare LF (read by lenient servers as its own line)
        (
            "GET http://allowed.test:{port}/ HTTP/1.1\\r\\nX: a\\nHost: refused.test\\r\\n\\r\\n",
            "HTTP/1.1 400 Bad Request",
        ),
        # a folded header line
        (
            "GET http://allowed.test:{port}/ HTTP/1.1\\r\\nX: a\\r\\n Host: refused.test\\r\\n\\r\\n",
            "HTTP/1.1 400 Bad Request",
        ),
        (
            "POST http://allowed.test:{port}/ HTTP/1.1\\r\\nContent-Length: 1\\r\\n"
            "Content-Length: 9\\r\\n\\r\\nx",
            "HTTP/1.1 400 Bad Request",
        ),
        ("CONNECT allowed.test:22 HTTP/1.1\\r\\n\\r\\n", "HTTP/1.1 403 Forbidden"),
        ("GET http://evilallowed.test:{port}/ HTTP/1.1\\r\\n\\r\\n", "HTTP/1.1 403 Forbidden"),
        ("GET http://allowed.test.evil:{port}/ HTTP/1.1\\r\\n\\r\\n", "HTTP/1.1 403 Forbidden"),
        ("GET http://127.0.0.1:{port}/ HTTP/1.1\\r\\n\\r\\n", "HTTP/1.1 403 Forbidden"),
        ("GET http://[::1]:{port}/ HTTP/1.1\\r\\n\\r\\n", "HTTP/1.1 403 Forbidden"),
        ("CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\\r\\n\\r\\n", "HTTP/1.1 403 Forbidden"),
    ],
)
async def test_requests_that_would_reach_past_the_list_are_refused(
    server: Recording, request_text: str, first_line: str
) -> None:
    audit = MemoryAuditSink()
    answer = await _raw(
        request_text.replace("{port}", str(server.port)),
        _limits(f"allowed.test:{server.port}"),
        audit,
    )
    assert answer.splitlines()[0] == first_line
    assert server.received == []
    # every request is audited, the ones the proxy cannot read too
    (record,) = [r for r in audit.records if r.operation == "egress"]
    assert not record.allowed and first_line.split(" ", 2)[1] in record.reason + " 403"


async def test_http_1_0_without_host_and_odd_spellings_of_the_name_reach_it(
    server: Recording,
) -> None:
    port = server.port
    answer = await _raw(
        f"GET http://ALLOWED.Test.:{port}/ HTTP/1.0\\r\\n\\r\\n", _limits("allowed.test")
    )
    assert answer.startswith("HTTP/1.1 200 OK")
    (sent,) = server.received
    assert sent.startswith(b"GET / HTTP/1.0\r\nHost: allowed.test.:%d\r\n" % port)


def test_wildcards_and_spellings_of_the_list() -> None:
    listed = Egress(allow=["*.x.org", "pypi.org:443"])
    assert listed.admits("a.x.org", 80) and listed.admits("A.B.X.ORG.", 443)
    assert not listed.admits("x.org", 80) and not listed.admits("evilx.org", 80)
    assert not listed.admits("x.org.evil", 80) and not listed.admits("a.x.org.evil", 80)
    assert listed.admits("PyPI.org..", 443) and not listed.admits("pypi.org", 22)
    assert not listed.admits("xn--pypi-lookalike.org", 443)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "169.254.169.254",
        "10.1.2.3",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a00:1",
        "2002:7f00:1::1",
        "2002:a9fe:a9fe::1",
        "fe80::1",
        "fc00::1",
        "0.0.0.0",
        "100.64.0.1",
    ],
)
async def test_the_default_resolver_refuses_addresses_that_carry_the_hosts_network(
    address: str,
) -> None:
    with pytest.raises(EgressRefused, match="non-public address"):
        await public_addresses(address, 80)


async def test_public_addresses_pass_the_default_resolver() -> None:
    for address in ("1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"):
        assert await public_addresses(address, 443) == [address]


async def test_a_slow_client_does_not_hold_up_another_request(server: Recording) -> None:
    script = (
        "exec 4<>/dev/tcp/127.0.0.1/3128; printf 'GET http://allowed.test:%s/ HTTP/1.1\\r\\n' "
        '"$0" >&4; curl -sS http://allowed.test:$0/fast'
    )
    result = await _workspace().run(
        ["bash", "-c", script, str(server.port)], limits=_limits("allowed.test"), timeout=60
    )
    assert result.stdout == "hello\n"
    assert len(server.received) == 1 and b"GET /fast" in server.received[0]


@pytest.mark.parametrize("network", ["none", "allow-list"])
async def test_direct_udp_dns_and_the_hosts_abstract_sockets_reach_nothing(network: str) -> None:
    require_bwrap()
    name = f"bastion-redteam-{id(network)}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(1)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    script = f"""
import socket
out = []
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect('\\0{name}'); out.append('abstract: connected')
except OSError as e:
    out.append('abstract: ' + type(e).__name__)
for host in ('127.0.0.1', '8.8.8.8'):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.sendto(b'dns?', (host, {udp.getsockname()[1]} if host == '127.0.0.1' else 53))
        out.append('udp ' + host + ': sent')
    except OSError as e:
        out.append('udp ' + host + ': ' + type(e).__name__)
try:
    socket.getaddrinfo('example.com', 80); out.append('dns: resolved')
except OSError as e:
    out.append('dns: ' + type(e).__name__)
print('; '.join(out))
"""
    limits = RunLimits() if network == "none" else _limits("allowed.test")
    try:
        result = await _workspace().run(["python3", "-c", script], limits=limits, timeout=60)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(100)
    finally:
        listener.close()
        udp.close()
    assert "abstract: ConnectionRefusedError" in result.stdout
    assert "connected" not in result.stdout and "resolved" not in result.stdout
    assert "udp 8.8.8.8: OSError" in result.stdout  # no route out: Network is unreachable


@pytest.mark.parametrize("network", ["none", "allow-list"])
async def test_proc_net_shows_the_sandboxs_own_network_only(network: str) -> None:
    require_bwrap()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0bastion-redteam-net-{port}")
    abstract.listen(1)
    limits = RunLimits() if network == "none" else _limits("allowed.test")
    try:
        result = await _workspace().run(
            "cat /proc/net/tcp /proc/net/tcp6 /proc/net/unix", limits=limits, timeout=60
        )
    finally:
        listener.close()
        abstract.close()
    assert f"bastion-redteam-net-{port}" not in result.stdout
    assert result.exit_code == 0, result.stderr
    ports = {
        int(line.split()[1].rsplit(":", 1)[1], 16)
        for line in result.stdout.splitlines()
        if line.strip()[:1].isdigit() and ":" in line.split()[1]
    }
    assert port not in ports
    assert ports <= ({3128} if network == "allow-list" else set())


_FLOOD = """
import socket, subprocess, sys, time
held = []
for _ in range(400):
    s = socket.socket()
    s.connect(('127.0.0.1', 3128))
    held.append(s)

def alive():
    count = 0
    for s in held:
        s.setblocking(False)
        try:
            count += s.recv(1, socket.MSG_PEEK) != b''
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count

for _ in range(100):  # until the proxy has looked at every connection
    if alive() <= int(sys.argv[2]):
        break
    time.sleep(0.2)
print('alive', alive(), flush=True)
for s in held:
    s.close()
url = 'http://allowed.test:%s/after' % sys.argv[1]
for _ in range(100):  # until the proxy has seen them closed
    got = subprocess.run(['curl', '-sS', url], capture_output=True, text=True).stdout
    if got:
        break
    time.sleep(0.2)
print(got, end='')
"""


async def test_a_flood_of_idle_connections_holds_a_bounded_number_open(
    server: Recording,
) -> None:
    from bastion.sandbox.proxy import MAX_CONNECTIONS

    # each connection held open is a descriptor of Bastion's own process: a command opening
    # thousands would starve it (and every other run) of descriptors
    result = await _workspace().run(
        ["python3", "-c", _FLOOD, str(server.port), str(MAX_CONNECTIONS)],
        limits=_limits("allowed.test"),
        timeout=60,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [f"alive {MAX_CONNECTIONS}", "hello"]


def test_an_ipv6_entry_is_all_address_unless_bracketed() -> None:
    listed = Egress(allow=["2001:db8::1:80", "[2001:db8::2]:443", "::1", "1.2.3.4:22"])
    assert listed.admits("2001:db8::1:80", 443) and listed.admits("[2001:db8::1:80]", 80)
    assert not listed.admits("2001:db8::1", 80)  # not the address with a port 80
    assert listed.admits("[2001:db8::2]", 443) and not listed.admits("2001:db8::2", 80)
    assert listed.admits("::1", 8080) and listed.admits("1.2.3.4", 22)
    assert not listed.admits("1.2.3.4", 80)
