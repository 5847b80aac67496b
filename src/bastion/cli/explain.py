"""``bastion explain --as USER PATH [ACTION]``: why the guard answers USER as it does on PATH.

One screen: the mount that holds PATH and its scope, the policy rule that decides (first match
wins) and, when it matched through a role, the inheritance steps that gave the user that role,
the document's labels and where they come from (front matter, sidecar, the mount's defaults),
and whether those labels admit the user. It is an operator's tool: run by whoever holds the
workspace file (never with ``--token``, whose holder is a user), and each run is written to
the audit log as an ``explain`` record.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import click

from bastion.cli.common import common_options, options, resolve_principal, settings
from bastion.cli.output import emit, shown
from bastion.workspace.explain import role_path

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig
    from bastion.core.principal import Principal

__all__ = ["explain_command"]

_SCOPE_ALLOWS = {
    "read_only": {"read", "list", "search"},
    "write_only": {"write"},
    "read_write": {"read", "list", "search", "write", "delete", "execute", "label"},
}


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
    policy = config.policy
    roles = policy.effective_roles(principal)
    mount = _mount_of(config, where)
    data: dict[str, Any] = {
        "user": shown(principal),
        "clearance": principal.clearance,
        "roles": sorted(principal.roles),
        "effective_roles": sorted(roles),
        "path": str(where),
        "action": action.value,
        "mount": None,
    }
    if mount is None:
        data.update(allowed=False, decided_by="no mount holds this path")
        return data
    scope_ok = action.value in _SCOPE_ALLOWS.get(mount.scope.value, set())
    data["mount"] = {"prefix": mount.prefix, "scope": mount.scope.value, "allows": scope_ok}
    decision = policy.decide(principal, action, where, roles)
    rule: dict[str, Any] = {"allowed": decision.allowed, "reason": decision.reason}
    if decision.rule is not None:
        found = policy.rules[decision.rule]
        rule.update(
            number=decision.rule + 1,
            effect=found.effect.value,
            paths=list(found.paths),
            roles=sorted(found.roles),
        )
        matched = sorted(found.roles & roles)
        if matched:
            rule["through"] = role_path(policy, principal, matched[0])
    data["rule"] = rule
    labels, source = _labels(config, mount, where)
    data["labels"] = labels
    data["label_source"] = source
    admitted = _admits(config, principal, roles, labels)
    data["labels_admit"] = admitted
    allowed = scope_ok and decision.allowed and admitted is not False
    data["allowed"] = allowed
    if not scope_ok:
        data["decided_by"] = f"the scope of mount {mount.prefix} ({mount.scope.value})"
    elif not decision.allowed:
        data["decided_by"] = decision.reason
    elif admitted is False:
        data["decided_by"] = "the document's labels"
    else:
        data["decided_by"] = decision.reason
    return data


def _mount_of(config: WorkspaceConfig, where: Any) -> Any:
    best = None
    for mount in config.mounts:
        parts = tuple(p for p in mount.prefix.split("/") if p)
        if where.parts[: len(parts)] == parts and (best is None or len(parts) > len(best[0])):
            best = (parts, mount)
    return None if best is None else best[1]


def _labels(config: WorkspaceConfig, mount: Any, where: Any) -> tuple[dict[str, Any], str]:
    """The document's effective labels (read as the owner) and where they come from."""
    from bastion.core.errors import BastionError

    base = mount.labels
    mount_labels = {
        "tenant": base.tenant,
        "classification": base.classification,
        "roles": sorted(base.roles),
        "tags": sorted(base.tags),
    }
    try:
        info, sources = asyncio.run(_read_labels(config, mount, where))
    except BastionError as exc:
        return mount_labels, f"the mount's defaults ({exc.code}: the file was not read)"
    labels = info.labels
    if labels is None:
        return mount_labels, "the mount's defaults"
    found = {
        "tenant": labels.tenant,
        "classification": labels.classification,
        "roles": sorted(labels.roles),
        "tags": sorted(labels.tags),
    }
    if sources:
        return found, " and ".join(sources) + f" over mount {mount.prefix}'s defaults"
    return found, f"mount {mount.prefix}'s defaults"


async def _read_labels(config: WorkspaceConfig, mount: Any, where: Any) -> tuple[Any, list[str]]:
    """The file's info with its labels as the guard sees them (the one resolver,
    :class:`~bastion.labels.store.DocumentLabels`, over the mount's own store: no
    principal's view in between), and the label sources present beside the mount's."""
    from bastion.core.errors import BastionError
    from bastion.core.paths import VPath
    from bastion.core.sidecars import sidecar_of
    from bastion.labels.store import DocumentLabels
    from bastion.stores.mount_checks import close_mounts

    opened = mount.open(config.base)
    try:
        inside = where.relative_to(VPath.parse(mount.prefix))
        store = DocumentLabels(opened.store, mount.labels, config.policy.classifications)
        info = await store.stat(inside)
        sources = []
        try:
            await opened.store.stat(sidecar_of(inside))
            sources.append(f"sidecar {sidecar_of(inside).name}")
        except BastionError:
            pass
        if info.kind.value == "file":
            head = await opened.store.read_range(inside, 0, 8)
            if head.removeprefix(b"\xef\xbb\xbf").startswith(b"---"):
                sources.append("front matter")
        return info, sources
    finally:
        await close_mounts([opened])


def _admits(
    config: WorkspaceConfig, principal: Principal, roles: frozenset[str], labels: dict[str, Any]
) -> bool:
    from bastion.core.models import Labels
    from bastion.core.principal import labels_admit

    record = Labels(
        tenant=labels["tenant"],
        classification=labels["classification"],
        roles=frozenset(labels["roles"]),
        tags=frozenset(labels["tags"]),
    )
    return labels_admit(record, principal, roles, config.policy.classifications)


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
