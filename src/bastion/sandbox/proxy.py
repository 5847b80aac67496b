"""The egress proxy: an HTTP proxy (``CONNECT`` tunnels for HTTPS, absolute-form requests for
plain HTTP) that admits only the hosts of an :class:`~bastion.sandbox.egress.Egress` list and
records every request, admitted or refused.

A refused request is answered ``403 Forbidden`` with a one-line reason; a request the proxy
cannot read is answered ``400``, a host it cannot reach ``502``. A plain-HTTP request is sent
on with ``Connection: close``, the ``Proxy-*`` headers removed and its ``Host`` header set to
the host that was admitted (a ``Host`` naming another site on the same address is not sent);
only that one request goes: its body is what ``Content-Length`` says (a chunked body is
refused, ``411``), and anything the client sends after it (a second, pipelined request) is
never forwarded. A head with a bare CR or LF, or a folded header line, is refused. A tunnel
carries bytes both ways, unread. A command holds at most :data:`MAX_CONNECTIONS` connections
to it at once (a slow or idle one is dropped after 30 s without a whole head). One
:class:`Proxy` serves one command (``bastion.sandbox.gate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from urllib.parse import urlsplit

from bastion.sandbox.egress import Egress, EgressRefused, Recorder

__all__ = ["MAX_CONNECTIONS", "Proxy"]

log = logging.getLogger(__name__)

_HEAD_LIMIT = 16 * 1024
"""Most bytes of a request's line and headers."""
MAX_CONNECTIONS = 64
"""Most connections one command holds open to its proxy at once (each one, and its upstream,
is a descriptor of Bastion's own process); past it a new one is closed at once."""
_HEAD_SECONDS = 30.0
_CONNECT_SECONDS = 10.0
_LINGER_SECONDS = 1.0
_CHUNK = 65536
_DROPPED = (
    b"proxy-connection",
    b"proxy-authorization",
    b"connection",
    b"keep-alive",
    b"host",
    b"content-length",
    b"transfer-encoding",
)


class _BadRequest(ValueError):
    code = 400
    phrase = "Bad Request"


class _LengthRequired(_BadRequest):
    code = 411
    phrase = "Length Required"


class Proxy:
    """One command's proxy; :meth:`serve` on a listening socket, :meth:`close` at the end."""

    def __init__(self, egress: Egress, record: Recorder | None = None) -> None:
        self.egress = egress
        self.record = record
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self, sock: socket.socket) -> None:
        """Accept connections on ``sock`` (listening) until :meth:`close`."""
        self._server = await asyncio.start_server(self._handle, sock=sock, limit=_HEAD_LIMIT)

    async def close(self) -> None:
        """Stop accepting and end every connection still open (an upstream that keeps a
        tunnel open does not keep it past the command)."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._open):
            writer.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    def _note(self, target: str, allowed: bool, reason: str) -> None:
        if self.record is None:
            return
        try:
            self.record(target, allowed, reason)
        except Exception:  # an audit sink failing must not leave the tunnel open unaudited
            log.exception("recording an egress request failed")
            raise

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._open) >= MAX_CONNECTIONS:  # each holds descriptors of Bastion's process
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._open.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_SECONDS)
                method, host, port, first, body = _parse(head)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            except _BadRequest as exc:  # audited too: a request, though not one to forward
                self._note("-", False, f"refused ({exc.code}): {exc}")
                await _answer(reader, writer, exc.code, exc.phrase, str(exc))
                return
            target = f"{host}:{port}"
            if not self.egress.admits(host, port):
                why = f"{host} is not on the sandbox's network allow-list"
                self._note(target, False, f"{method} refused: {why}")
                await _answer(reader, writer, 403, "Forbidden", f"bastion: {why}; ask an operator")
                return
            try:
                addresses = await self.egress.addresses(host, port)
            except EgressRefused as exc:
                self._note(target, False, f"{method} refused: {exc}")
                await _answer(reader, writer, 403, "Forbidden", f"bastion: {exc}")
                return
            self._note(target, True, f"{method} admitted")
            up_reader, upstream = await _connect(addresses, port)
            if up_reader is None or upstream is None:
                await _answer(reader, writer, 502, "Bad Gateway", f"bastion: cannot reach {target}")
                return
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(first)
            await asyncio.gather(_pipe(reader, upstream, body), _pipe(up_reader, writer))
            if body is not None:  # what the client sent after the request is read and dropped
                await _linger(reader)
        except (ConnectionError, OSError):
            pass
        finally:
            for end in (upstream, writer):
                if end is not None:
                    end.close()
            self._open.discard(writer)


def _parse(head: bytes) -> tuple[str, str, int, bytes, int | None]:
    """(method, host, port, the head to send upstream, the body's length: ``None`` for a
    tunnel) of a request head."""
    lines = head[:-4].split(b"\r\n")
    if any(b"\r" in line or b"\n" in line or line[:1] in (b" ", b"\t") for line in lines):
        raise _BadRequest("a bare CR or LF, or a folded header line, in the request head")
    try:
        method_b, target_b, version_b = lines[0].split(b" ")
        method, target = method_b.decode("ascii"), target_b.decode("ascii")
    except (ValueError, UnicodeDecodeError):
        raise _BadRequest("the request line is not METHOD TARGET VERSION") from None
    if method == "CONNECT":
        host, _, port_text = target.rpartition(":")
        if not host or not port_text.isdigit():
            raise _BadRequest("CONNECT needs host:port")
        return method, _bare(host), _port(port_text), b"", None
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise _BadRequest("give an absolute http:// URL (use CONNECT for https)")
    try:
        port = url.port or 80
    except ValueError:
        raise _BadRequest("the URL's port is not a number") from None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [(line.split(b":", 1)[0].strip().lower(), line) for line in lines[1:]]
    if any(name == b"transfer-encoding" for name, _ in headers):
        raise _LengthRequired("a chunked request body is not proxied; send a Content-Length")
    lengths = {
        line.split(b":", 1)[1].strip() for name, line in headers if name == b"content-length"
    }
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        raise _BadRequest("the Content-Length is not one number")
    kept = [line for name, line in headers if line and name not in _DROPPED]
    authority = url.hostname if url.port is None else f"{url.hostname}:{url.port}"
    if ":" in url.hostname:  # an IPv6 address
        authority = f"[{url.hostname}]" + ("" if url.port is None else f":{url.port}")
    length = int(lengths.pop()) if lengths else 0
    sized = [f"Content-Length: {length}".encode("ascii")] if length else []
    first = b"\r\n".join(
        [
            f"{method} {path} ".encode("ascii") + version_b,
            f"Host: {authority}".encode("ascii"),
            *kept,
            *sized,
            b"Connection: close",
            b"",
            b"",
        ]
    )
    return method, url.hostname, port, first, length


def _bare(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _port(text: str) -> int:
    port = int(text)
    if not 0 < port < 65536:
        raise _BadRequest("the port is out of range")
    return port


async def _connect(
    addresses: list[str], port: int
) -> tuple[asyncio.StreamReader | None, asyncio.StreamWriter | None]:
    for address in addresses:
        try:
            return await asyncio.wait_for(asyncio.open_connection(address, port), _CONNECT_SECONDS)
        except (OSError, TimeoutError):
            continue
    return None, None


async def _pipe(
    src: asyncio.StreamReader, dst: asyncio.StreamWriter, limit: int | None = None
) -> None:
    """Copy ``src`` to ``dst`` until its end, or ``limit`` bytes (then stop reading ``src``:
    what follows is never forwarded)."""
    try:
        while limit is None or limit > 0:
            data = await src.read(_CHUNK if limit is None else min(_CHUNK, limit))
            if not data:
                break
            if limit is not None:
                limit -= len(data)
            dst.write(data)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if limit is None and dst.can_write_eof():  # a request's end is its length
                dst.write_eof()


async def _answer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, code: int, phrase: str, text: str
) -> None:
    """Answer with ``code`` and a one-line ``text``, then close our side and let the client
    finish sending (:func:`_linger`)."""
    body = (text + "\n").encode("utf-8")
    writer.write(
        f"HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("ascii")
        + body
    )
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    await _linger(reader)


async def _linger(reader: asyncio.StreamReader) -> None:
    """Read and drop what the client still sends, until it closes (a second at most, 256 KiB
    at most): a socket closed with unread input is reset, and the reset can destroy an answer
    the client has not read yet (a request pipelined behind the one that was forwarded)."""
    with contextlib.suppress(ConnectionError, OSError, RuntimeError, TimeoutError):
        deadline = asyncio.get_running_loop().time() + _LINGER_SECONDS
        left = _CHUNK * 4
        while left > 0:
            timeout = deadline - asyncio.get_running_loop().time()
            data = await asyncio.wait_for(reader.read(_CHUNK), max(timeout, 0))
            if not data:
                break
            left -= len(data)
