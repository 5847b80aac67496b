"""Access changes apply to the next request: the server follows its workspace file.

The file's identity (inode, size, modification and change times) is compared with the one
last loaded by one ``stat`` in a worker thread, at most every :data:`CHECK_EVERY` seconds per
process: a request that begins that long after the file was replaced sees the new
configuration (requests arriving while a check or a reload runs wait for it, so none overtakes
it); ``SIGHUP`` asks for a reload on the next request whatever the file says. A changed file
is read and checked off the event loop, then:

- **valid**: the policy, the mounts' scopes and labels and the ``[identity]`` replace the
  running ones at once (:meth:`ServerState.reconfigure`); every cache that holds a decision
  belongs to the configuration it was made under, so nothing decided before is reused;
- **invalid**: the running configuration stays, and one log line names the problem.

What cannot change without a restart (a mount's store, a new mount, the index, ``[server]``)
is named in one log line and keeps its running value; a mount taken out of the file is taken
out of the tree at once (less access never waits).

The revoked tokens are refreshed by the same middleware (:mod:`bastion.server.revocations`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.to_thread
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from bastion.core.errors import BastionError
from bastion.server.auth import Authenticator
from bastion.server.sessions import COOKIE

if TYPE_CHECKING:
    from bastion.server.file import ServerFile

__all__ = ["CHECK_EVERY", "ConfigWatch", "Refresh"]

log = logging.getLogger("bastion.server")

Stamp = tuple[int, int, int, int]

CHECK_EVERY = 0.25
"""Seconds between two looks at the workspace file (one ``stat`` each, off the event loop):
the bound on how long after the file is replaced a request may still see the old
configuration."""


class Followed(Protocol):
    """What a reload changes (the server's state)."""

    auth: Authenticator
    generation: int

    def reconfigure(self, server: ServerFile) -> list[str]: ...


def _stamp(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass
class ConfigWatch:
    """The workspace file a server was started from, and the stamp of what it loaded."""

    path: Path
    read: Callable[[Path, Mapping[str, str] | None], ServerFile]
    """Reads and checks the file (``ServerFile.read``)."""
    env: Mapping[str, str] | None = None
    stamp: Stamp | None = None
    forced: bool = False
    """Set by ``SIGHUP``: reload on the next request even if the stamp is the same."""

    every: float = CHECK_EVERY
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if self.stamp is None:
            self.stamp = _stamp(self.path)
        self._lock = anyio.Lock()
        self._checked_at = self.clock()

    def _due(self) -> bool:
        return self.forced or self.clock() - self._checked_at >= self.every

    async def follow(self, state: Followed) -> None:
        """Reload into ``state`` when the file changed (one check at a time; the requests
        that arrive meanwhile wait for it, then see the configuration it leaves)."""
        if not self._due() and not self._lock.locked():
            return
        async with self._lock:
            if not self._due():
                return
            forced, self.forced = self.forced, False
            self._checked_at = self.clock()
            seen = await anyio.to_thread.run_sync(_stamp, self.path)
            if seen == self.stamp and not forced:
                return
            self.stamp = seen
            try:
                server = await anyio.to_thread.run_sync(self.read, self.path, self.env)
                notes = state.reconfigure(server)
            except BastionError as exc:
                log.error("reload refused, the running configuration stays: %s", exc)
                return
            log.warning(
                "reloaded %s (configuration %d)%s",
                self.path.name,
                state.generation,
                "".join(f"; {note}" for note in notes),
            )


class Refresh:
    """ASGI middleware: the file, the revoked tokens and the identity provider's keys are
    brought up to date before each request is handled."""

    def __init__(self, app: ASGIApp, *, state: Followed, watch: ConfigWatch | None) -> None:
        self.app = app
        self.state = state
        self.watch = watch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            state = self.state
            if self.watch is not None:
                await self.watch.follow(state)
            auth = state.auth
            if auth.revocations is not None:
                await auth.revocations.refresh()
            headers = Headers(scope=scope)
            cookie = Request(scope).cookies.get(COOKIE) if "cookie" in headers else None
            await auth.prepare(headers.get("authorization"), cookie)
        await self.app(scope, receive, send)
