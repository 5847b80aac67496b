"""Hostile requests as bytes on a socket to uvicorn on loopback (the server the command runs):
what no HTTP client library would send. Each answer is a 4xx of one line, never a 5xx.

A request uvicorn itself cannot parse (a NUL or a raw non-ASCII byte in the request line,
two Host headers, a Content-Length that is not a number) is refused by uvicorn with its own plain-text line
(``Invalid HTTP request received.``) before the app runs; everything that reaches the app
is answered in JSON. Bodies stay under 64 KiB, what uvicorn reads ahead of the app, so the
connection ends cleanly after a refusal that leaves the body unread."""

from __future__ import annotations

import json
import socket

import pytest

from .support import Token

_FORM = b"multipart/form-data; boundary=XyZ"


def _part(head: bytes, data: bytes) -> bytes:
    return b"--XyZ\r\n" + head + b"\r\n\r\n" + data + b"\r\n"


def _folder(path: bytes = b"/docs/wire") -> bytes:
    return _part(b'Content-Disposition: form-data; name="path"', path)


def _file(name: bytes, data: bytes = b"x\n") -> bytes:
    head = b'Content-Disposition: form-data; name="file"; filename="' + name + b'"'
    return _part(head, data)


def _chunked(body: bytes, size: int = 4096) -> bytes:
    out = b"".join(
        b"%x\r\n" % len(body[i : i + size]) + body[i : i + size] + b"\r\n"
        for i in range(0, len(body), size)
    )
    return out + b"0\r\n\r\n"


def exchange(server: str, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body``;
    read the answer to the end (``Connection: close``)."""
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    status_line, _, rest = got.partition(b"\r\n")
    raw_headers, _, payload = rest.partition(b"\r\n\r\n")
    headers = {}
    for line in raw_headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        headers[name.decode().lower()] = value.decode().strip()
    if headers.get("transfer-encoding") == "chunked":
        payload = _unchunk(payload)
    return int(status_line.split()[1]), headers, payload


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def _request(
    method: str, target: bytes, token: str, *headers: bytes, host: bytes = b"127.0.0.1"
) -> bytes:
    lines = [
        method.encode() + b" " + target + b" HTTP/1.1",
        b"Host: " + host,
        b"Authorization: Bearer " + token.encode(),
        *headers,
    ]
    return b"\r\n".join(lines)


# name: (method, target, extra headers, body, statuses allowed, code when JSON)
CASES: dict[str, tuple[str, bytes, tuple[bytes, ...], bytes, int, str | None]] = {
    "a broken escape in the query": ("GET", b"/v1/files/read?path=%zz", (), b"", 400, "bad_query"),
    "a lone surrogate in the query": ("GET", b"/v1/files/read?path=%ED%A0%80", (), b"", 400, "bad_query"),
    "Latin-1 in the query": ("GET", b"/v1/files/read?path=caf%E9", (), b"", 400, "bad_query"),
    "a repeated key": ("GET", b"/v1/files/read?path=/docs/handbook.md&path=/x", (), b"", 400, "bad_query"),
    "an escaped NUL in the path": ("GET", b"/v1/files%00", (), b"", 400, "bad_request"),
    "an escaped surrogate in the path": ("GET", b"/v1/%ED%A0%80", (), b"", 400, "bad_request"),
    "a raw NUL in the path": ("GET", b"/v1/fi\x00les", (), b"", 400, None),
    "a raw non-ASCII byte in the path": ("GET", b"/v1/\xff", (), b"", 400, None),
    "a raw non-ASCII byte in the query": ("GET", b"/v1/files?path=\xff", (), b"", 400, None),
    "a Content-Length that is not a number": (
        "POST", b"/v1/files/write", (b"Content-Type: application/json", b"Content-Length: 1x"), b"{}", 400, None,
    ),
    "150 headers": ("GET", b"/v1/me", tuple(b"X-H%d: v" % i for i in range(150)), b"", 431, "headers_too_large"),
    "two Host headers": ("GET", b"/v1/me", (b"Host: evil.example",), b"", 400, None),
    "a foreign origin": ("GET", b"/v1/me", (b"Origin: http://evil.example",), b"", 403, "forbidden_origin"),
    "a chunked JSON body over the limit": (
        "POST", b"/v1/files/write", (b"Content-Type: application/json", b"Transfer-Encoding: chunked"),
        _chunked(b" " * 40_000), 413, "body_too_large",
    ),
    "a chunked body sent as text": (
        "POST", b"/v1/files/write", (b"Content-Type: text/plain", b"Transfer-Encoding: chunked"),
        _chunked(b'{"path": "/docs/wire.md", "content": "x"}'), 415, "unsupported_media_type",
    ),
    "a chunked upload over the limit": (
        "POST", b"/v1/ingest", (b"Content-Type: " + _FORM, b"Transfer-Encoding: chunked"),
        _chunked(_folder() + _file(b"big.md", b"y" * 52_000) + b"--XyZ--\r\n"), 413, "body_too_large",
    ),
    "a chunked upload cut before its end": (
        "POST", b"/v1/ingest", (b"Content-Type: " + _FORM, b"Transfer-Encoding: chunked"),
        _chunked(_folder() + _file(b"cut.md")), 400, "bad_multipart",
    ),
    "an upload without a boundary": (
        "POST", b"/v1/ingest", (b"Content-Type: multipart/form-data", b"Content-Length: 20"),
        b"x" * 20, 400, "bad_multipart",
    ),
    "an upload with a 5,000-character file name": (
        "POST", b"/v1/ingest", (b"Content-Type: " + _FORM, b"Transfer-Encoding: chunked"),
        _chunked(_folder() + _file(b"n" * 5000) + b"--XyZ--\r\n"), 400, "bad_multipart",
    ),
    "an upload of 25 files": (
        "POST", b"/v1/ingest", (b"Content-Type: " + _FORM, b"Transfer-Encoding: chunked"),
        _chunked(_folder() + b"".join(_file(b"f%d.md" % i) for i in range(25)) + b"--XyZ--\r\n"),
        413, "limit_exceeded",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_bytes_on_the_wire_get_one_line(server: str, token: Token, name: str) -> None:
    method, target, extra, body, status, code = CASES[name]
    got, headers, payload = exchange(server, _request(method, target, token(), *extra), body)
    assert got == status, (got, payload[:200])
    assert b"\n" not in payload.strip() and b"Traceback" not in payload
    assert token().encode() not in payload
    if code is not None:
        assert headers["content-type"] == "application/json"
        assert json.loads(payload)["error"]["code"] == code


def test_a_rebinding_host_is_refused_on_the_wire(server: str, token: Token) -> None:
    head = _request("GET", b"/v1/me", token(), host=b"evil.example")
    got, _, payload = exchange(server, head)
    assert got == 421 and json.loads(payload)["error"]["code"] == "misdirected_request"


def test_nothing_of_a_refused_upload_was_written(server: str, token: Token) -> None:
    for name in ("a chunked upload cut before its end", "an upload of 25 files"):
        method, target, extra, body, _, _ = CASES[name]
        assert exchange(server, _request(method, target, token(), *extra), body)[0] >= 400
    got, _, payload = exchange(server, _request("GET", b"/v1/files/stat?path=/docs/wire", token()))
    assert got == 404, payload


def test_a_good_chunked_upload_is_written(server: str, token: Token) -> None:
    body = _chunked(_folder(b"/docs/wire-ok") + _file(b"ok.md", b"# Wire\n") + b"--XyZ--\r\n", 7)
    extra = (b"Content-Type: " + _FORM, b"Transfer-Encoding: chunked")
    got, _, payload = exchange(server, _request("POST", b"/v1/ingest", token(), *extra), body)
    assert got == 201, payload
    assert json.loads(payload)["files"][0]["path"] == "/docs/wire-ok/ok.md"
