"""Why the guard answers a principal as it does on a path: the operator's explanation over a
built workspace (the server's ``GET /v1/explain``; ``bastion explain`` gives the same facts
from the workspace file).

The answer names the mount that holds the path and whether its scope allows the action, the
policy rule that decides (first match wins) and the inheritance steps that gave the principal
the rule's role, the document's effective labels (the one resolver,
:class:`~bastion.labels.store.DocumentLabels`, which every mount of a workspace
carries) and whether they admit the principal. It reads as the owner: only an operator may
ask (the caller checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bastion.core.audit import on_behalf
from bastion.core.errors import BastionError, NotFoundError
from bastion.core.models import Action, EntryKind
from bastion.core.principal import labels_admit

if TYPE_CHECKING:
    from bastion.core.models import Labels
    from bastion.core.mounts import Mount
    from bastion.core.paths import VPath
    from bastion.core.policy import Decision, Policy
    from bastion.core.principal import Principal
    from bastion.workspace.workspace import Workspace

__all__ = ["explain_access", "role_path"]


def role_path(policy: Policy, principal: Principal, role: str) -> list[str]:
    """How ``principal`` holds ``role``: ``[given, parent, ..., role]`` (the shortest chain of
    inheritance from a role it was given), ``[]`` when it does not."""
    inherits = policy.roles.inherits
    paths = [[given] for given in sorted(principal.roles)]
    seen: set[str] = set()
    while paths:
        path = paths.pop(0)
        if path[-1] == role:
            return path
        if path[-1] in seen:
            continue
        seen.add(path[-1])
        paths += [[*path, parent] for parent in sorted(inherits.get(path[-1], ()))]
    return []


def _mount_of(ws: Workspace, where: VPath) -> Mount | None:
    best: Mount | None = None
    for mount in ws.mounts:
        parts = mount.prefix.parts
        if where.parts[: len(parts)] == parts and (
            best is None or len(parts) > len(best.prefix.parts)
        ):
            best = mount
    return best


def _labels_dict(labels: Any) -> dict[str, Any]:
    return {
        "tenant": labels.tenant,
        "classification": labels.classification,
        "roles": sorted(labels.roles),
        "tags": sorted(labels.tags),
    }


def _rule(
    policy: Policy, principal: Principal, roles: frozenset[str], decision: Decision
) -> dict[str, Any]:
    """The deciding rule (first match wins) and the role chain that made it match."""
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
    return rule


async def _document(mount: Mount, where: VPath) -> tuple[Labels, str, bool, str]:
    """The labels of ``where`` read past the guard, where they come from, whether it is a
    folder, and the error code when it cannot be opened (a link, a special file, a store
    that fails; ``""`` when it can, or is not there)."""
    try:
        info = await mount.store.stat(where.relative_to(mount.prefix))
    except NotFoundError as exc:
        return mount.labels, f"the mount's defaults ({exc.code}: the file was not read)", False, ""
    except BastionError as exc:
        source = f"the mount's defaults ({exc.code}: the file was not read)"
        return mount.labels, source, False, exc.code
    folder = info.kind is EntryKind.DIRECTORY
    if info.labels is not None and info.labels != mount.labels:
        return info.labels, "the document's own (front matter or sidecar)", folder, ""
    return mount.labels, "the mount's defaults", folder, ""


async def explain_access(
    ws: Workspace, principal: Principal, where: VPath, action: Action
) -> dict[str, Any]:
    """The explanation of ``principal``'s ``action`` on ``where`` in ``ws`` (its owner view:
    the labels are read past the guard)."""
    policy = ws.policy
    roles = policy.effective_roles(principal)
    data: dict[str, Any] = {
        "user": principal.id,
        "clearance": principal.clearance,
        "roles": sorted(principal.roles),
        "effective_roles": sorted(roles),
        "path": str(where),
        "action": action.value,
        "mount": None,
    }
    mount = _mount_of(ws, where)
    if mount is None:
        return data | {"allowed": False, "decided_by": "no mount holds this path"}
    scope_ok = mount.scope.allows(action)
    data["mount"] = {"prefix": str(mount.prefix), "scope": mount.scope.value, "allows": scope_ok}
    decision = policy.decide(principal, action, where, roles)
    data["rule"] = _rule(policy, principal, roles, decision)
    labels, source, folder, unopened = await _document(mount, where)
    admitted = labels_admit(labels, principal, roles, policy.classifications)
    shown = _labels_dict(labels)
    if labels.undetermined:  # the guard hides the file from everybody (fail closed)
        shown["undetermined"] = labels.undetermined
        source = "the document's own, which cannot be determined: hidden from everybody"
    data.update(labels=shown, label_source=source, labels_admit=admitted)
    data["allowed"] = scope_ok and decision.allowed and admitted
    if not scope_ok:
        data["decided_by"] = f"the scope of mount {mount.prefix} ({mount.scope.value})"
    elif not decision.allowed:
        data["decided_by"] = decision.reason
    elif unopened:
        data["allowed"] = False
        data["decided_by"] = f"the file cannot be opened ({unopened}); no access reaches it"
    elif labels.undetermined:
        data["decided_by"] = f"the document's labels cannot be determined: {labels.undetermined}"
    elif not admitted:
        data["decided_by"] = "the document's labels"
    else:
        data["decided_by"] = decision.reason
    if data["allowed"] and folder and action in (Action.READ, Action.LIST):
        # a folder whose every entry is hidden from the principal is hidden too (it reads as
        # a missing one): asked as the principal would, a check on its behalf
        with on_behalf():
            seen = await ws.with_principal(principal).exists(where)
        if not seen:
            data["allowed"] = False
            data["decided_by"] = (
                f"every entry of this folder is hidden from {principal.id}; "
                "a folder of hidden entries only is hidden"
            )
    return data
