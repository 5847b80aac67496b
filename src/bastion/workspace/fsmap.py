"""The filesystem map: a few lines for an agent's system prompt."""

from __future__ import annotations

from collections.abc import Iterable

from bastion.core.guard import GuardContext
from bastion.core.models import Action
from bastion.core.mounts import Mount
from bastion.core.visibility import mount_seen

__all__ = ["filesystem_map"]

_VERBS: tuple[tuple[Action, str], ...] = (
    (Action.READ, "read"),
    (Action.LIST, "list"),
    (Action.SEARCH, "search"),
    (Action.WRITE, "write"),
    (Action.DELETE, "delete"),
)


def filesystem_map(mounts: Iterable[Mount], ctx: GuardContext) -> str:
    """Name each mount the principal can use, its scope, and what the principal may do there.

    The actions shown are those the mount's scope allows and the policy allows at the mount
    (or just inside it); deeper rules may still refuse a particular path.
    """
    lines = ["Filesystem (absolute paths; nothing exists outside these mounts):"]
    shown = 0
    for mount in sorted(mounts, key=lambda m: m.prefix.parts):
        if not mount_seen(ctx, mount):  # a mount it may see nothing of is not there for it
            continue
        probe = mount.prefix.join(mount.prefix.parse("x"))
        verbs = [
            verb
            for action, verb in _VERBS
            if mount.scope.allows(action)
            and (ctx.allows(action, mount.prefix) or ctx.allows(action, probe))
        ]
        if not verbs:
            continue
        shown += 1
        scope = mount.scope.value.replace("_", "-")
        what = f" - {mount.description}" if mount.description else ""
        lines.append(
            f"- {mount.prefix}/  {scope} ({mount.store.describe()}): {', '.join(verbs)}{what}"
        )
    if not shown:
        lines.append("- (no mounts are available to you)")
    return "\n".join(lines)
