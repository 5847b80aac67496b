"""Why the guard answers a principal as it does on a path: the operator's explanation over a
built workspace (the server's ``GET /v1/explain``; ``bastion explain`` gives the same facts
from the workspace file).

The answer names the mount that holds the path and whether its scope allows the action, the
policy rule that decides (first match wins) and the inheritance steps that gave the principal
the rule's role, the document's effective labels (the one resolver,
:class:`~bastion.labels.store.DocumentLabels`, which every mount of a workspace
carries) and whether they admit the principal. It reads as the owner: only an operator may
ask (the caller checks).

Tenancy is a hard boundary here too. Asked for a ``viewer`` (the operator asking: the server's
``GET /v1/explain``), the explanation is of a user of the viewer's own tenant only (another
tenant's user is an unknown one, :func:`tenant_users`), and it tells nothing the viewer's tenant
may not see: a mount whose labels name another tenant is no mount, and a document (or a
sidecar of one) labelled for another tenant, a folder that holds only such documents, and a
document whose labels cannot be determined in a mount that is not the viewer's tenant's, are
explained as a missing path is, word for word. Without a viewer (``bastion explain``, run by
whoever holds the workspace file: the owner) every tenant is explained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bastion.core.audit import on_behalf
from bastion.core.errors import BastionError, NotFoundError, OperationError
from bastion.core.hidden_tree import file_above, shown_dir
from bastion.core.models import Action, EntryKind, FileInfo, Scope
from bastion.core.principal import labels_admit
from bastion.core.sidecars import labelled_file_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from bastion.core.models import Labels
    from bastion.core.mounts import Mount
    from bastion.core.paths import VPath
    from bastion.core.policy import Decision, Policy
    from bastion.core.principal import Principal
    from bastion.workspace.workspace import Workspace

__all__ = ["explain_access", "role_path", "tenant_users", "unknown_user"]


def tenant_users(users: Mapping[str, Principal], viewer: Principal | None) -> dict[str, Principal]:
    """The users of ``users`` that ``viewer`` may have explained: those of its tenant (every
    one for the owner, ``viewer`` ``None``)."""
    return {k: p for k, p in users.items() if viewer is None or p.tenant == viewer.tenant}


def unknown_user(name: str, users: Mapping[str, Principal]) -> NotFoundError:
    """The answer for a user that is not one of ``users`` (already those of the viewer's
    tenant): it names only them."""
    names = ", ".join(sorted(users)) or "(none)"
    return NotFoundError(f"unknown user {name!r}; users of this server: {names}")


def _tenant_sees(labels: Labels | None, viewer: Principal | None) -> bool:
    """Whether labels (``None``: the mount's, checked apart) belong to ``viewer``'s tenant or
    to every tenant (always, for the owner)."""
    return viewer is None or labels is None or labels.tenant in (None, viewer.tenant)


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


def _mount_of(ws: Workspace, where: VPath, viewer: Principal | None) -> Mount | None:
    """The mount that holds ``where`` (longest prefix), passing over a mount of another tenant
    than ``viewer``'s (a write-only mount, which shows nothing, excepted), as the mount routing
    passes over a mount a principal may see nothing of."""
    best: Mount | None = None
    for mount in ws.mounts:
        parts = mount.prefix.parts
        if mount.scope is not Scope.WRITE_ONLY and not _tenant_sees(mount.labels, viewer):
            continue
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


_ABSENT = "the mount's defaults (not_found: the file was not read)"


async def _document(
    mount: Mount, where: VPath, viewer: Principal | None
) -> tuple[Labels, str, bool, str]:
    """The labels of ``where`` read past the guard, where they come from, whether it is a
    folder, and the error code when it cannot be opened (a link, a special file, a store
    that fails; ``""`` when it can, or is not there). What ``viewer``'s tenant may not see
    reads as a missing path."""
    path = where.relative_to(mount.prefix)
    sees = _tenant_view(mount, viewer)
    try:
        if sees is not None:
            above = await file_above(mount.store, path)
            if above is not None and above[1] is not None and not sees(above[1]):
                raise NotFoundError(path=path)  # below a file of another tenant
        info = await mount.store.stat(path)
        if sees is not None and not await _tenant_shown(mount, path, info, sees):
            raise NotFoundError(path=path)
    except NotFoundError:
        return mount.labels, _ABSENT, False, ""
    except BastionError as exc:
        source = f"the mount's defaults ({exc.code}: the file was not read)"
        return mount.labels, source, False, exc.code
    folder = info.kind is EntryKind.DIRECTORY
    if info.labels is not None and info.labels != mount.labels:
        return info.labels, "the document's own (front matter or sidecar)", folder, ""
    return mount.labels, "the mount's defaults", folder, ""


def _tenant_view(mount: Mount, viewer: Principal | None) -> Callable[[FileInfo], bool] | None:
    """Whether ``viewer``'s tenant may know of an entry of ``mount``: its labels are of that
    tenant or of every tenant; labels that cannot be determined only in a mount whose own
    labels name that tenant (in a mount shared by tenants, whose document it is cannot be
    told). ``None`` for the owner (every entry)."""
    if viewer is None:
        return None

    def sees(entry: FileInfo) -> bool:
        labels = entry.labels or mount.labels
        if labels.undetermined and mount.labels.tenant != viewer.tenant:
            return False  # whose it is cannot be told: fail closed
        return _tenant_sees(labels, viewer)

    return sees


async def _tenant_shown(
    mount: Mount, path: VPath, info: FileInfo, sees: Callable[[FileInfo], bool]
) -> bool:
    """Whether the tenant of :func:`_tenant_view` may know of the entry ``info`` at ``path``:
    a sidecar when it may know of the file it labels; a folder only when it is empty or holds
    such an entry (folder names are content)."""
    target = labelled_file_of(path)
    if target is not None:
        try:
            labelled = await mount.store.stat(target)
        except OperationError:
            labelled = None
        if labelled is not None and not sees(labelled):
            return False
    if info.kind is EntryKind.DIRECTORY:
        return await shown_dir(mount.store, path, sees, mount.store.list)
    return sees(info)


async def explain_access(
    ws: Workspace,
    principal: Principal,
    where: VPath,
    action: Action,
    *,
    viewer: Principal | None = None,
) -> dict[str, Any]:
    """The explanation of ``principal``'s ``action`` on ``where`` in ``ws`` (its owner view:
    the labels are read past the guard), for ``viewer`` (the operator asking: the explanation
    tells nothing of another tenant's, and ``principal`` must be of its tenant; ``None``: the
    owner, every tenant)."""
    if viewer is not None and principal.tenant != viewer.tenant:
        raise unknown_user(principal.id, {})
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
    mount = _mount_of(ws, where, viewer)
    if mount is None:
        return data | {"allowed": False, "decided_by": "no mount holds this path"}
    scope_ok = mount.scope.allows(action)
    data["mount"] = {"prefix": str(mount.prefix), "scope": mount.scope.value, "allows": scope_ok}
    decision = policy.decide(principal, action, where, roles)
    data["rule"] = _rule(policy, principal, roles, decision)
    labels, source, folder, unopened = await _document(mount, where, viewer)
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
