"""The real app in-process on a background event loop, for tables of hostile requests and for
hypothesis; and the checks every refusal must pass (4xx, one JSON line, nothing echoed)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.applications import Starlette

from bastion.governance.identity import IdentityConfig
from bastion.server import ServerSettings, create_app

from .asgi import Reply, call, lifespan
from .conftest import build_workspace

HIDDEN = "kestrel bonus is 12 percent"
"""The text of a document the test principal may not read: no answer may hold it."""


@dataclass
class Served:
    portal: BlockingPortal
    app: Starlette
    root: Path
    token: str

    def call(
        self,
        method: str,
        path: str,
        *,
        raw_path: bytes | None = None,
        query: bytes = b"",
        headers: Sequence[tuple[bytes, bytes]] = (),
        chunks: Sequence[bytes] = (),
        host: bytes = b"127.0.0.1:8765",
        signed: bool = True,
    ) -> Reply:
        """One request; ``signed`` adds the test principal's token."""
        sent = list(headers)
        if signed:
            sent.append((b"authorization", b"Bearer " + self.token.encode()))
        return self.portal.call(
            lambda: call(
                self.app,
                method,
                path,
                raw_path=raw_path,
                query=query,
                headers=sent,
                chunks=chunks,
                host=host,
            )
        )


@contextlib.contextmanager
def served_app(root: Path, identity: IdentityConfig, token: str) -> Iterator[Served]:
    settings = ServerSettings(
        max_body_bytes=32 * 1024, max_upload_bytes=48 * 1024, requests_per_minute=None
    )
    app = create_app(build_workspace(root), identity=identity, settings=settings)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(lifespan(app)):
        yield Served(portal, app, root, token)


def assert_answered(reply: Reply, served: Served, *, sent: bytes = b"") -> None:
    """Never a 5xx; a refusal is one line of JSON with a code; nothing protected or sent
    comes back (the hidden text, the store's folder, the token, what was sent)."""
    assert reply.status < 500, (reply.status, reply.body[:300])
    text = reply.body.decode("utf-8", "replace")
    assert HIDDEN not in text and str(served.root) not in text
    assert served.token not in text and "Traceback" not in text
    if len(sent) >= 24:  # long enough that an echo is not a coincidence
        assert sent not in reply.body
    if reply.status >= 400 and reply.body:
        assert reply.headers.get("content-type", "").startswith("application/json"), reply
        assert b"\n" not in reply.body.strip()
        error = json.loads(reply.body)["error"]
        assert error.get("code") is not None and error.get("message"), error
