"""Health, readiness, who am I, the audit log (operators), and the optional demo login."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bastion.core.audit import AuditRecord, on_behalf
from bastion.core.audit_sinks import audit_page
from bastion.core.errors import PolicyDeniedError
from bastion.core.models import Action, Scope
from bastion.core.overlay_port import overlay_below
from bastion.core.paths import VPath
from bastion.server.errors import ApiError
from bastion.server.handlers import Endpoint, endpoint, ok
from bastion.server.state import ServerState, state_of
from bastion.workspace.explain import explain_access, tenant_users, unknown_user
from bastion.workspace.operations.service import AuditParams, DemoLoginParams
from bastion.workspace.operations.web import ExplainParams

if TYPE_CHECKING:
    from bastion.core.principal import Principal
    from bastion.workspace import Workspace

__all__ = ["ENDPOINTS", "routes"]

E = TypeVar("E", bound=Exception)


@endpoint("health", "GET", "/healthz", public=True, logged=False)
async def health(request: Request, _: object) -> Response:
    """Alive: the process answers (no authentication, nothing about the workspace)."""
    return JSONResponse({"status": "ok"})


@endpoint("ready", "GET", "/readyz", public=True)
async def ready(request: Request, _: object) -> Response:
    """Ready: the workspace is built and each mount answers a stat of its root. A mount that
    does not is named (its prefix, never its URL) with a 503."""
    state = state_of(request)
    down = []
    for mount in state.workspace.mounts:
        try:
            await mount.store.stat(VPath.ROOT)
        except Exception:  # noqa: BLE001 - any failure means not ready
            down.append(str(mount.prefix))
    if down:  # counted, not named: this endpoint answers without a token
        return JSONResponse({"status": "unavailable", "mounts_down": len(down)}, status_code=503)
    return JSONResponse({"status": "ready", "index": state.workspace.has_index})


@endpoint("me", "GET", "/v1/me")
async def me(request: Request, _: object) -> Response:
    """The principal of the token, what it may do, and the mounts it sees (writable and
    overlay ones flagged), for the page."""
    state = state_of(request)
    ws = state.view(request)
    p = ws.principal
    with on_behalf():  # looked up for the page, not asked: not listed in p's own audit view
        top = {str(e.path) for e in await ws.list("/")}  # one listing: no refusal per mount

        async def visible(prefix: VPath) -> bool:
            return str(prefix) in top if len(prefix.parts) == 1 else await ws.exists(prefix)

        mounts = [
            {
                "prefix": str(m.prefix),
                "scope": m.scope.value,
                "description": m.description,
                "overlay": overlay_below(m.store) is not None,
            }
            for m in ws.mounts
            if await visible(m.prefix)
        ]
    return ok(
        {
            "id": p.id,
            "tenant": p.tenant,
            "roles": sorted(ws.policy.effective_roles(p)),
            "clearance": p.clearance,
            "operator": {
                "audit": state.may(ws, Action.AUDIT),
                "reindex": state.may(ws, Action.REINDEX),
            },
            "mounts": mounts,
            "writable": [m["prefix"] for m in mounts if m["scope"] != Scope.READ_ONLY.value],
        }
    )


@endpoint("audit", "GET", "/v1/audit")
async def audit(request: Request, args: AuditParams) -> Response:
    """A page of audit records (operators: the ``audit`` action on ``/``): the newest
    ``limit`` (default 100, at most 1000) before ``cursor`` (the end when absent) that the
    filters admit, oldest first, and ``next``, the cursor of the older page (``null``: there
    is none)."""
    state = state_of(request)
    ws = state.view(request)
    if not state.may(ws, Action.AUDIT):
        raise _refused(
            ws,
            "audit",
            "/",
            PolicyDeniedError("the audit log is for operators: it needs the 'audit' action on /"),
        )
    limit = args.limit
    cursor = args.cursor
    records = getattr(ws.audit, "records", None)
    if records is None:
        raise ApiError(409, "audit_unreadable", "this server's audit sink cannot be read back")
    try:
        page = audit_page(records, limit=limit, cursor=cursor or None, keep=_audit_filter(args))
    except ValueError as exc:
        raise ApiError(400, "bad_field", f"'cursor': {exc}") from None
    return ok(page.to_dict())


def _audit_filter(args: AuditParams) -> Callable[[AuditRecord], bool] | None:
    """The records the filters of ``args`` admit (``None``: no filter)."""
    tests: list[Callable[[AuditRecord], bool]] = []
    if args.principal:
        tests.append(lambda r: r.principal == args.principal)
    if args.operation:
        tests.append(lambda r: r.operation == args.operation)
    if args.outcome:
        tests.append(lambda r: r.allowed is (args.outcome == "allowed"))
    if args.path:
        tests.append(lambda r: r.path.startswith(args.path or ""))
    if args.since is not None:
        tests.append(lambda r: r.time >= (args.since or 0.0))
    if args.until is not None:
        tests.append(lambda r: r.time < (args.until or 0.0))
    if not tests:
        return None
    return lambda record: all(test(record) for test in tests)


@endpoint("explain", "GET", "/v1/explain")
async def explain(request: Request, args: ExplainParams) -> Response:
    """Why ``user`` may or may not do ``action`` on ``path`` (operators: the ``audit`` action
    on ``/``; each answer is an ``explain`` record of the audit log). Of the operator's own
    tenant only: a user of another tenant is an unknown one, and what another tenant's
    labels hold reads as missing (``bastion.workspace.explain``)."""
    state = state_of(request)
    ws = state.view(request)
    if not state.may(ws, Action.AUDIT):
        # the path asked about is not recorded: the refusal is of the operation, on /
        raise _refused(
            ws,
            "explain",
            "/",
            PolicyDeniedError(
                "explaining access is for operators: it needs the 'audit' action on /"
            ),
        )
    try:
        action = Action(args.action)
    except ValueError:
        known = ", ".join(a.value for a in Action)
        raise _refused(
            ws, "explain", "/", ApiError(400, "bad_field", f"'action': choose one of {known}")
        ) from None
    where = ws.parse_path(args.path, operation="explain")  # a malformed path: recorded there
    users = tenant_users(_known_users(state), ws.principal)  # its own tenant's only
    principal = users.get(args.user)
    if principal is None:
        raise _refused(ws, "explain", str(where), unknown_user(args.user, users))
    data = await explain_access(state.workspace, principal, where, action, viewer=ws.principal)
    ws.audit.append(
        AuditRecord(
            time=time.time(),
            principal=ws.principal.id,
            tenant=ws.principal.tenant,
            operation="explain",
            path=str(where),
            allowed=True,
            reason=f"explained {action.value} for {principal.id}",
        )
    )
    return ok(data)


def _refused(ws: Workspace, operation: str, path: str, error: E) -> E:
    """``error``, once the refusal is a record of the audit log under the caller (an
    operator's question that was not answered, or someone who is not one asking)."""
    ws.audit.append(
        AuditRecord(
            time=time.time(),
            principal=ws.principal.id,
            tenant=ws.principal.tenant,
            operation=operation,
            path=path,
            allowed=False,
            reason=str(error),
        )
    )
    return error


def _known_users(state: ServerState) -> dict[str, Principal]:
    """The users an operator may name: the workspace file's ``[users]`` and the demo's."""
    found: dict[str, Principal] = {}
    if state.auth.sessions is not None:
        found.update(state.auth.sessions.users)
    if state.auth.demo is not None:
        found.update(state.auth.demo.users)
    return found


@endpoint("demo_users", "GET", "/v1/auth/demo/users", public=True)
async def demo_users(request: Request, _: object) -> Response:
    state = state_of(request)
    if state.auth.demo is None:
        raise ApiError(404, "not_found", "the demo login is off on this server")
    return ok({"users": [{"id": i, "about": about} for i, about in state.demo_users]})


@endpoint("demo_login", "POST", "/v1/auth/demo", public=True)
async def demo_login(request: Request, args: DemoLoginParams) -> Response:
    state = state_of(request)
    if state.auth.demo is None:
        raise ApiError(404, "not_found", "the demo login is off on this server")
    return ok({"token": state.auth.demo.token_for(args.user), "token_type": "Bearer"})


ENDPOINTS: tuple[Endpoint, ...] = (health, ready, me, audit, explain, demo_users, demo_login)
routes = [e.route() for e in ENDPOINTS]
