"""``bastion serve`` as a real process over a workspace file of ``reload_support``, and raw
HTTP on a socket (a request sent in pieces, a stream read to its end)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

import bastion

from .reload_support import SECRET, rewrite, workspace_file
from .support import free_port

PLAN = "# Plan\n\nThe heron count is twelve.\n"


def serve_file(folder: Path, server: str = "", **kwargs: Any) -> Path:
    """``reload_support.workspace_file`` with ``server`` lines added to its ``[server]``
    table (the file's last)."""
    path = workspace_file(folder, **kwargs)
    rewrite(path, path.read_text() + server)
    return path


class Served:
    """One ``bastion serve --config FILE --port N [args]`` process; its stderr in a file."""

    def __init__(self, config: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = config.parent / f"serve-{self.port}.log"
        source = str(Path(bastion.__file__).resolve().parents[1])
        paths = [source, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = {
            **os.environ,
            "BASTION_TEST_SECRET": SECRET,
            "PYTHONWARNINGS": "error",
            "PYTHONPATH": os.pathsep.join(paths),
        }
        command = [sys.executable, "-m", "bastion.cli", "serve", "--config", str(config)]
        with self.log.open("wb") as err:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port), *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=config.parent,
                env=env,
            )
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(self.log.read_text())
            time.sleep(0.1)
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    def wait(self) -> int:
        """The exit status (a hang is bounded: the test fails rather than waits forever)."""
        return self.process.wait(timeout=90)

    def close(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def in_flight(self) -> int:
        """Requests being answered now, this one left out (``/metrics``)."""
        text = httpx.get(f"{self.url}/metrics").text
        found = re.search(r"^bastion_http_requests_in_flight (\d+)$", text, re.MULTILINE)
        assert found is not None, text
        return int(found.group(1)) - 1

    def wait_in_flight(self, count: int) -> None:
        """Until ``count`` requests are being answered (bounds a hang; measures nothing)."""
        deadline = time.monotonic() + 30
        while self.in_flight() != count:
            assert time.monotonic() < deadline, f"never {count} requests in flight"
            time.sleep(0.05)

    def refuses_connections(self) -> bool:
        """True once a new connection is refused (bounds a hang; measures nothing)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
            except ConnectionRefusedError:
                return True
            time.sleep(0.05)
        return False


class Pending:
    """A ``POST`` with a JSON body sent in two pieces: the headers and the first half now,
    the rest when :meth:`finish` is called. Until then the request is open in the server."""

    def __init__(self, port: int, path: str, body: dict[str, Any], headers: dict[str, str]):
        self.raw = json.dumps(body).encode()
        lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append(f"Content-Length: {len(self.raw)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.half = len(self.raw) // 2
        self.sock.sendall(head + self.raw[: self.half])

    def finish(self) -> tuple[int, bytes]:
        """Send the rest; the status and the body, read until the server closes."""
        self.sock.sendall(self.raw[self.half :])
        return read_response(self.sock)

    def close(self) -> None:
        self.sock.close()


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """Status and body of one response read until the connection closes (chunks joined)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunk(body)
    return status, body


def _unchunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return out


def events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The Server-Sent Events of a body: ``(event, data)`` in order."""
    found = []
    for block in body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}
