"""A loopback HTTP proxy that answers ``500 InternalError`` on demand, in front of a real S3
API (moto's server): the S3 endpoint that fails and then recovers.

``fail_next(n)`` fails the next ``n`` requests; ``failing = True`` fails every request until
it is set back. Every other request is passed through unchanged (method, path, headers, body),
so the client's signature and moto's answers are the real ones.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["FlakyProxy"]

_ERROR = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "proxy-connection"})


class FlakyProxy:
    """Start with ``start()`` (returns its URL), stop with ``stop()``."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._lock = threading.Lock()
        self._to_fail = 0
        self.failing = False
        self.failed = 0
        """Requests answered with a 500 so far."""
        self.passed = 0
        """Requests passed through so far."""
        self.url = ""
        """The proxy's own URL, once started."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                del format, args

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if proxy._take_failure():
                    self.send_response(500)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_ERROR)))
                    self.end_headers()
                    if self.command != "HEAD":  # a body after HEAD would break the next answer
                        self.wfile.write(_ERROR)
                    return
                conn = http.client.HTTPConnection(*proxy._upstream, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                self.send_response(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in _HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _take_failure(self) -> bool:
        with self._lock:
            if self.failing or self._to_fail > 0:
                self._to_fail = max(0, self._to_fail - 1)
                self.failed += 1
                return True
            self.passed += 1
            return False

    def fail_next(self, n: int) -> None:
        with self._lock:
            self._to_fail = n

    def start(self) -> str:
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        return self.url

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
