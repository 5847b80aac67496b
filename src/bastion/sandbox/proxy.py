"""The egress proxy: an HTTP proxy (``CONNECT`` tunnels for HTTPS, absolute-form requests for
plain HTTP) that admits only the hosts of an :class:`~bastion.sandbox.egress.Egress` list and
records every request, admitted or refused.

A refused request is answered ``403 Forbidden`` with a one-line reason; a request the proxy
cannot read is answered ``400``, a host it cannot reach ``502``. A plain-HTTP request is sent
on with ``Connection: close`` and the ``Proxy-*`` headers removed; a tunnel carries bytes both
ways, unread. One :class:`Proxy` serves one command (``bastion.sandbox.gate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from urllib.parse import urlsplit

from bastion.sandbox.egress import Egress, EgressRefused, Recorder

__all__ = ["Proxy"]

log = logging.getLogger(__name__)

_HEAD_LIMIT = 16 * 1024
"""Most bytes of a request's line and headers."""
_HEAD_SECONDS = 30.0
_CONNECT_SECONDS = 10.0
_CHUNK = 65536
_DROPPED = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


class _BadRequest(ValueError):
    pass


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
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._open.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_SECONDS)
                method, host, port, first = _parse(head)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            except _BadRequest as exc:
                await _answer(writer, 400, "Bad Request", str(exc))
                return
            target = f"{host}:{port}"
            if not self.egress.admits(host, port):
                why = f"{host} is not on the sandbox's network allow-list"
                self._note(target, False, f"{method} refused: {why}")
                await _answer(writer, 403, "Forbidden", f"bastion: {why}; ask an operator")
                return
            try:
                addresses = await self.egress.addresses(host, port)
            except EgressRefused as exc:
                self._note(target, False, f"{method} refused: {exc}")
                await _answer(writer, 403, "Forbidden", f"bastion: {exc}")
                return
            self._note(target, True, f"{method} admitted")
            up_reader, upstream = await _connect(addresses, port)
            if up_reader is None or upstream is None:
                await _answer(writer, 502, "Bad Gateway", f"bastion: cannot reach {target}")
                return
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(first)
            await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
        except (ConnectionError, OSError):
            pass
        finally:
            for end in (upstream, writer):
                if end is not None:
                    end.close()
            self._open.discard(writer)


def _parse(head: bytes) -> tuple[str, str, int, bytes]:
    """(method, host, port, the head to send upstream) of a request head."""
    lines = head.split(b"\r\n")
    try:
        method_b, target_b, version_b = lines[0].split(b" ")
        method, target = method_b.decode("ascii"), target_b.decode("ascii")
    except (ValueError, UnicodeDecodeError):
        raise _BadRequest("the request line is not METHOD TARGET VERSION") from None
    if method == "CONNECT":
        host, _, port_text = target.rpartition(":")
        if not host or not port_text.isdigit():
            raise _BadRequest("CONNECT needs host:port")
        return method, _bare(host), _port(port_text), b""
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise _BadRequest("give an absolute http:// URL (use CONNECT for https)")
    try:
        port = url.port or 80
    except ValueError:
        raise _BadRequest("the URL's port is not a number") from None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [
        line
        for line in lines[1:]
        if line and line.split(b":", 1)[0].strip().lower() not in _DROPPED
    ]
    first = b"\r\n".join(
        [f"{method} {path} ".encode("ascii") + version_b, *kept, b"Connection: close", b"", b""]
    )
    return method, url.hostname, port, first


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


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(_CHUNK):
            dst.write(data)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if dst.can_write_eof():
                dst.write_eof()


async def _answer(writer: asyncio.StreamWriter, code: int, phrase: str, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    writer.write(
        f"HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("ascii")
        + body
    )
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
