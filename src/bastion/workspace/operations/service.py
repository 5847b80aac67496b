"""Commands in the sandbox, and the server's own operations: who am I, the audit log, health,
readiness and the demo login."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from bastion.core.errors import (
    AccessDeniedError,
    ConfigurationError,
    InvalidPathError,
    NotFoundError,
    PolicyDeniedError,
    RateLimitError,
    SandboxError,
)
from bastion.workspace.operations.base import Operation, Params, Result
from bastion.workspace.operations.knowledge import NoParams

__all__ = ["MAX_STDIN", "SERVICE_OPERATIONS"]

MAX_STDIN = 100_000
"""Most characters sent to a command's input."""


class RunParams(Params):
    command: str | list[str] = Field(description="Shell line (sh -c), or program and arguments")
    cwd: str = Field("/", description="Working directory, e.g. /scratch")
    stdin: str | None = Field(None, max_length=MAX_STDIN, description="Text sent to input")
    timeout: float = Field(30.0, gt=0, le=300, description="Seconds before it is killed")


class StartParams(Params):
    command: str | list[str] = Field(description="Shell line (sh -c), or program and arguments")
    cwd: str = Field("/", description="Working directory, e.g. /scratch")
    stdin: str | None = Field(None, max_length=MAX_STDIN, description="Text sent to input")
    timeout: float = Field(600.0, gt=0, le=3600, description="Seconds before it is killed")


class RunResult(Result):
    exit_code: int | None
    stdout: str
    stderr: str
    changed: list[str]
    refused: dict[str, str]


class ProcessResult(Result):
    process_id: str
    state: str


class MountSeen(Result):
    prefix: str
    scope: str
    description: str
    overlay: bool = False
    """An overlay mount: its writes wait in a layer for review (docs/changes.md)."""


class Operator(Result):
    audit: bool
    reindex: bool


class Me(Result):
    id: str
    tenant: str | None
    roles: list[str]
    clearance: str
    operator: Operator
    mounts: list[MountSeen]
    writable: list[str]


class AuditParams(Params):
    limit: int = Field(100, ge=1, le=1000, description="Records in the page (the newest first)")
    cursor: str | None = Field(
        None, max_length=64, description="Where the page ends: a page's 'next' (absent: the end)"
    )
    principal: str | None = Field(None, max_length=256, description="Only this principal's")
    operation: str | None = Field(None, max_length=64, description="Only this operation's")
    outcome: Literal["allowed", "refused"] | None = Field(None, description="Only these")
    path: str | None = Field(None, max_length=4096, description="Only paths starting so")
    since: float | None = Field(None, ge=0, description="Not before (seconds since the epoch)")
    until: float | None = Field(None, ge=0, description="Before (seconds since the epoch)")


class AuditResult(Result):
    records: list[dict[str, Any]]
    next: str | None = None


class Health(Result):
    status: str


class Ready(Result):
    status: str
    index: bool | None = None
    mounts_down: int | None = None


class DemoUser(Result):
    id: str
    about: str


class DemoUsers(Result):
    users: list[DemoUser]


class DemoLoginParams(Params):
    user: str = Field(min_length=1, description="A demo user's name")


class LoginParams(Params):
    user: str = Field(min_length=1, max_length=128, description="An account's name")
    password: str = Field(min_length=1, max_length=1024, description="Its password")


class SignedIn(Result):
    user: str


class OidcCallbackParams(Params):
    """What providers send back (RFC 6749, RFC 9207's ``iss``, OpenID Connect session
    management's ``session_state``, and the extras of the common providers)."""

    code: str = Field("", max_length=4096, description="The provider's authorization code")
    state: str = Field("", max_length=512, description="The state this server sent")
    iss: str = Field("", max_length=2048, description="The provider (RFC 9207)")
    session_state: str = Field("", max_length=2048, description="The provider's session")
    scope: str = Field("", max_length=2048, description="Scopes granted")
    authuser: str = Field("", max_length=64, description="Google's account index")
    hd: str = Field("", max_length=256, description="Google's hosted domain")
    prompt: str = Field("", max_length=64, description="The prompt shown")
    error: str = Field("", max_length=256, description="Why the provider refused")
    error_description: str = Field("", max_length=2048, description="Its explanation")
    error_uri: str = Field("", max_length=2048, description="Its page")


class Redirect(Result):
    location: str


class SignInMethods(Result):
    accounts: bool
    oidc: bool


class MetricsText(Result):
    text: str


class Token(Result):
    token: str
    token_type: str


SERVICE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="run",
        summary="Run a command in the sandbox over the principal's view",
        params=RunParams,
        result=RunResult,
        errors=(InvalidPathError, NotFoundError, AccessDeniedError, RateLimitError, SandboxError),
        facade=("run",),
    ),
    Operation(
        name="start_process",
        summary="Start a command in the background in the sandbox",
        params=StartParams,
        result=ProcessResult,
        errors=(InvalidPathError, NotFoundError, AccessDeniedError, RateLimitError, SandboxError),
        facade=("start_process",),
    ),
    Operation(
        name="me",
        summary="The principal of the token and the mounts it sees",
        params=NoParams,
        result=Me,
    ),
    Operation(
        name="audit",
        summary="Latest audit records: operators",
        params=AuditParams,
        result=AuditResult,
        errors=(PolicyDeniedError, ConfigurationError),
    ),
    Operation(name="health", summary="Liveness", params=NoParams, result=Health),
    Operation(
        name="ready", summary="Readiness: every mount answers", params=NoParams, result=Ready
    ),
    Operation(
        name="demo_users",
        summary="Demo users (when the demo login is on)",
        params=NoParams,
        result=DemoUsers,
        errors=(NotFoundError,),
    ),
    Operation(
        name="demo_login",
        summary="A token for a demo user (when the demo login is on)",
        params=DemoLoginParams,
        result=Token,
        errors=(NotFoundError,),
    ),
    Operation(
        name="login",
        summary="Sign in with a local account: a session cookie (HttpOnly, SameSite=Strict)",
        params=LoginParams,
        result=SignedIn,
        errors=(NotFoundError, RateLimitError),
    ),
    Operation(
        name="sign_in_methods",
        summary="How people sign in here: local accounts, an OpenID Connect provider",
        params=NoParams,
        result=SignInMethods,
    ),
    Operation(
        name="oidc_start",
        summary="Sign in at the OpenID Connect provider: a redirect (code flow with PKCE)",
        params=NoParams,
        result=Redirect,
        errors=(NotFoundError,),
    ),
    Operation(
        name="oidc_callback",
        summary="Where the provider sends the browser back: a session cookie, then the page",
        params=OidcCallbackParams,
        result=Redirect,
        errors=(NotFoundError,),
    ),
    Operation(
        name="metrics",
        summary="Prometheus metrics of this process (text): requests, latencies, statuses",
        params=NoParams,
        result=MetricsText,
    ),
    Operation(
        name="logout",
        summary="End this session: its cookie is revoked in every process",
        params=NoParams,
        result=SignedIn,
    ),
)
