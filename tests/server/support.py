"""A real server for the tests: uvicorn on a free loopback port, in a thread."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def running(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on loopback until the block ends; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


Token = Callable[..., str]
"""Makes a signed token: ``token(sub, roles=..., clearance=..., tenant=..., ttl=...)``."""


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
