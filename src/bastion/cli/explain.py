"""``bastion explain --as USER PATH [ACTION]``: why the guard answers USER as it does on PATH.

One screen: the mount that holds PATH and its scope, the policy rule that decides (first match
wins) and, when it matched through a role, the inheritance steps that gave the user that role,
the document's labels and where they come from (front matter, sidecar, the mount's defaults),
and whether those labels admit the user. It is an operator's tool: run by whoever holds the
workspace file (never with ``--token``, whose holder is a user), and each run is written to
the audit log as an ``explain`` record.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from bastion.cli.common import common_options, options, resolve_principal, settings
from bastion.cli.output import emit

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig
    from bastion.core.principal import Principal

__all__ = ["explain_command"]


@click.command("explain")
@click.argument("path")
@click.argument("action", default="read")
@common_options()
def explain_command(path: str, action: str) -> None:
    """Explain the guard's answer to --as USER for ACTION (default read) on PATH: the mount,
    its scope, the deciding rule and role inheritance, the labels and their source
    (operators only; audited)."""
    from bastion.core.models import Action
    from bastion.core.paths import VPath

    if options().token is not None:
        raise click.UsageError("explain is an operator's tool: name the user with --as USER")
    if options().user is None:
        raise click.UsageError("name the user to explain with --as USER")
    try:
        chosen = Action(action)
    except ValueError:
        known = ", ".join(a.value for a in Action)
        raise click.BadParameter(
            f"{action!r}; choose one of {known}", param_hint="ACTION"
        ) from None
    config = settings()
    assert config is not None
    principal = resolve_principal(config)
    assert principal is not None
    where = VPath.parse(path)
    data = _explain(config, principal, where, chosen)
    _audit(config, principal, where, chosen, data)
    emit(data, lambda: _screen(data))


def _explain(
    config: WorkspaceConfig, principal: Principal, where: Any, action: Any
) -> dict[str, Any]:
    """The library's explanation (``bastion.workspace.explain``, which ``GET /v1/explain``
    answers too), on the workspace the file describes, seen by its owner."""
    from bastion.cli.session import open_session
    from bastion.workspace.blocking import run_blocking
    from bastion.workspace.explain import explain_access

    with open_session(config, None, owner_note=False) as session:
        return run_blocking(explain_access(session.ws.aio, principal, where, action))


def _audit(
    config: WorkspaceConfig, principal: Principal, where: Any, action: Any, data: dict[str, Any]
) -> None:
    """One ``explain`` record in the workspace's audit log (when it has one)."""
    if config.audit is None:
        return
    from bastion.core.audit import AuditRecord
    from bastion.core.audit_sinks import JsonLinesAuditSink

    sink = JsonLinesAuditSink(config.audit)
    try:
        sink.append(
            AuditRecord(
                time=time.time(),
                principal="owner",
                tenant="default",
                operation="explain",
                path=str(where),
                allowed=True,
                reason=f"explained {action.value} for {principal.id}: {data['decided_by']}",
                internal=True,
            )
        )
    finally:
        sink.close()


def _screen(data: dict[str, Any]) -> str:
    verdict = "ALLOWED" if data["allowed"] else "REFUSED"
    lines = [
        f"{data['user']} (clearance {data['clearance']}, roles "
        f"{', '.join(data['roles']) or '(none)'}) {data['action']} {data['path']}: {verdict}",
        f"  decided by: {data['decided_by']}",
    ]
    mount = data["mount"]
    if mount is None:
        return "\n".join(lines)
    lines.append(
        f"  mount:  {mount['prefix']} ({mount['scope']}: "
        f"{'allows' if mount['allows'] else 'does not allow'} {data['action']})"
    )
    rule = data["rule"]
    if "number" in rule:
        who = f" for roles {', '.join(rule['roles'])}" if rule["roles"] else ""
        lines.append(
            f"  rule:   {rule['number']}: {rule['effect']} on {', '.join(rule['paths'])}{who}"
            f" ({rule['reason']})"
        )
        if rule.get("through"):
            lines.append(f"  role:   {' -> '.join(rule['through'])} (inherited in that order)")
    else:
        lines.append(f"  rule:   {rule['reason']}")
    labels = data["labels"]
    lines.append(
        f"  labels: tenant {labels['tenant'] or '(any)'}, {labels['classification']}, roles "
        f"{', '.join(labels['roles']) or '(any)'}: from {data['label_source']}; "
        f"{'admit' if data['labels_admit'] else 'do not admit'} {data['user']}"
    )
    lines.append(f"  effective roles: {', '.join(data['effective_roles']) or '(none)'}")
    return "\n".join(lines)
