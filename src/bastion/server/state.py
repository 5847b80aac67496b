"""What every request shares: the workspace, the authenticator, the settings, the limiters.

A request is turned into a principal view of the one workspace (``with_principal``), so the
guard decides on every call for the principal of that request's token, and mounts, index,
audit and the policy's rate limits are shared by every view.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.requests import Request

from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.core.policy import RateLimit
from bastion.core.ratelimit import RateLimiter
from bastion.server.auth import Authenticator
from bastion.server.metrics import Metrics
from bastion.server.sessions import COOKIE, LoginLimiter
from bastion.server.settings import ServerSettings

if TYPE_CHECKING:
    from bastion.governance.identity import Identity
    from bastion.server.accounts import Accounts
    from bastion.server.file import ServerFile
    from bastion.workspace import Workspace

__all__ = ["IndexJob", "ServerState", "state_of"]

log = logging.getLogger("bastion.server")


@dataclass
class IndexJob:
    """The one index repair a server runs at a time, and how far it got."""

    running: bool = False
    done: int = 0
    total: int = 0
    started_by: str = ""
    tenant: str = ""
    """The tenant of the principal who started it: an operator of another tenant is told only
    that a repair runs (the index is shared), never who started it or what it found."""
    result: dict[str, int] = field(default_factory=dict)
    error: str = ""
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def to_dict(self, tenant: str | None = None) -> dict[str, object]:
        """The job as an operator of ``tenant`` is shown it (``None``: all of it)."""
        if tenant is not None and tenant != self.tenant:
            return {
                "running": self.running,
                "done": 0,
                "total": 0,
                "started_by": "",
                "result": {},
                "error": "",
            }
        return {
            "running": self.running,
            "done": self.done,
            "total": self.total,
            "started_by": self.started_by,
            "result": dict(self.result),
            "error": self.error,
        }


class ServerState:
    """Shared by every request of one server process."""

    def __init__(
        self,
        workspace: Workspace,
        auth: Authenticator,
        settings: ServerSettings,
        *,
        demo_users: tuple[tuple[str, str], ...] = (),
        source: ServerFile | None = None,
    ) -> None:
        self.workspace = workspace
        self.auth = auth
        self.settings = settings
        self.source = source
        """The checked workspace file the running configuration came from (``None``: built
        by a program, never reloaded)."""
        self.generation = 0
        """Bumped by every reload: whatever is remembered per configuration carries it."""
        self.demo_users = demo_users
        """``(id, about)`` of each demo user, listed only when the demo login is on."""
        rpm = settings.requests_per_minute
        self.limiter = RateLimiter(RateLimit(rpm, 60.0)) if rpm is not None else None
        self.index_job = IndexJob()
        self.accounts: Accounts | None = None
        """The local accounts (with :attr:`Authenticator.sessions`), when the server has a
        shared state and a workspace file."""
        self.logins = LoginLimiter()
        self.metrics = Metrics()

    def view(self, request: Request) -> Workspace:
        """The workspace acting for this request's principal (401 without a valid token;
        429 past the per-principal request rate)."""
        identity = self.identify(request)
        return self.workspace.with_principal(identity.principal)

    def identify(self, request: Request) -> Identity:
        identity = self.auth.authenticate_request(
            request.headers.get("authorization"),
            request.cookies.get(COOKIE),
            unsafe=request.method not in ("GET", "HEAD"),
            origin="origin" in request.headers,
        )
        request.state.principal = identity.principal.id
        if self.limiter is not None:
            self.limiter.check(identity.principal)
        return identity

    def reconfigure(self, server: ServerFile) -> list[str]:
        """Replace the policy, the mounts' scopes and labels and the identity with those of
        ``server`` at once; what waits for a restart is returned as notes."""
        from bastion.server.reconfigure import reconfigured

        workspace, auth, notes = reconfigured(self.workspace, self.auth, self.source, server)
        self.workspace, self.auth, self.source = workspace, auth, server
        self.generation += 1
        self.metrics.reloads += 1
        return notes

    @staticmethod
    def may(ws: Workspace, action: Action) -> bool:
        """True when the policy grants this view's principal the operator ``action`` on ``/``."""
        return ws.policy.decide(ws.principal, action, VPath.ROOT).allowed


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.bastion
    return state
