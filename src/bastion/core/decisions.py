"""One principal's decisions on the paths of one mount's store: the guard's vocabulary.

The guard (:mod:`bastion.core.guard`) runs a call; what it may do, and what it is told where it
may not, is decided here, per store path: the mount's scope, blocked segments and limits, the
policy, and the one answer to "may this principal see this entry?"
(:func:`bastion.core.visibility.why_hidden`). Each refusal is noted on the operation in progress
(its audit record) and returned or raised in the words the principal is told.
"""

from __future__ import annotations

from bastion.core.errors import LimitError, NotFoundError, PolicyDeniedError, ScopeError
from bastion.core.models import Action, EntryKind, FileInfo
from bastion.core.mounts import Mount
from bastion.core.operation import GuardContext, Operation, current_operation
from bastion.core.paths import VPath
from bastion.core.visibility import absent, mount_seen, refused, ruled_out, why_hidden

__all__ = ["Decisions"]

_DIR = EntryKind.DIRECTORY
_CACHE_LIMIT = 4096


class Decisions:
    """What the principal of ``ctx`` may do on the store paths of ``mount``."""

    def __init__(self, mount: Mount, ctx: GuardContext) -> None:
        self.mount = mount
        self.ctx = ctx
        self._prefix = mount.prefix.parts
        self._allowed = frozenset(action for action in Action if mount.scope.allows(action))
        self.hidden = not mount_seen(ctx, mount)
        """True when the principal may see nothing of the mount (``core.visibility``): it is
        not there for it."""
        self._seen: dict[tuple[bool, tuple[str, ...]], tuple[VPath, str | None]] = {}
        """Blocked-segment and policy answers per (is directory, store path): pure functions
        of the principal and the path, so each is worked out once."""

    def full(self, path: VPath) -> VPath:
        """The workspace path of the store path ``path``."""
        return VPath(self._prefix + path.parts)

    def scope(self, action: Action, path: VPath) -> None:
        """Refuse ``action`` where the mount's scope does not allow it."""
        if action not in self._allowed:
            kind = self.mount.scope.value.replace("_", "-")
            raise ScopeError(
                f"{self.full(path)}: mount {self.mount.prefix} is {kind}; "
                f"{action.value} is not allowed there"
            )

    def looks(self) -> bool:
        """Whether the mount's scope lets the principal look at entries (read or list)."""
        return Action.READ in self._allowed or Action.LIST in self._allowed

    def why_hidden(self, path: VPath, kind: EntryKind | None, info: FileInfo | None) -> str | None:
        """Why ``path`` is hidden from the principal, or ``None`` when it is visible: the one
        answer (``core.visibility.why_hidden``), its path part remembered per path."""
        key = (kind is _DIR, path.parts)
        try:
            full, ruled = self._seen[key]
        except KeyError:
            full = self.full(path)
            ruled = ruled_out(self.ctx, full, kind)
            if len(self._seen) >= _CACHE_LIMIT:
                self._seen.clear()
            self._seen[key] = (full, ruled)
        labels = None if info is None else info.labels
        return why_hidden(self.ctx, self.mount, full, kind, labels, ruled=ruled)

    def sees(self, info: FileInfo) -> bool:
        """Whether the principal may see this store entry."""
        return self.why_hidden(info.path, info.kind, info) is None

    def blind(self, path: VPath) -> bool:
        """The principal may write ``path`` but not read it (a write-only mount, a drop box by
        policy): nothing there is told, and its writes are blind."""
        return Action.READ not in self._allowed or not self.ctx.allows(Action.READ, self.full(path))

    def hide(self, path: VPath, why: str, op: Operation | None = None) -> NotFoundError:
        """The answer for a path the principal may not see: not found (``why`` is audited)."""
        (op or current_operation()).refuse(f"hidden: {why}")
        return absent(self.full(path), self.mount.prefix)

    def taken(self, path: VPath, action: Action, why: str, op: Operation) -> PolicyDeniedError:
        """The refusal of a change onto an entry the principal may not see: worded as a policy
        refusal, as it would be for a name the policy reserves, so it tells nothing of what is
        there (docs/security.md, "writes onto hidden names")."""
        op.refuse(f"hidden: {why}")
        return refused(action, self.full(path))

    def policy(self, action: Action, path: VPath) -> None:
        """Refuse ``action`` on ``path`` where the policy does not allow it."""
        full = self.full(path)
        decision = self.ctx.decide(action, full)
        if not decision.allowed:
            current_operation().refuse(decision.reason)
            raise refused(action, full, decision.public_reason)

    def writable_target(self, path: VPath, *, is_file: bool) -> None:
        """Refuse a change that makes ``path``: a blocked name, a mount not seen, an extension
        the limits do not allow, or the policy."""
        full = self.full(path)
        limits = self.ctx.policy.limits
        blocked = self.ctx.blocked(full)
        if blocked is not None:
            current_operation().refuse(f"blocked segment {blocked!r}")
            raise LimitError(f"{full}: the name {blocked!r} is blocked by policy; use another path")
        if self.hidden:
            # Writing into a mount the principal may not see would reveal (and clobber)
            # documents it may not read: the mount is not there for this principal.
            raise self.hide(path, f"mount {self.mount.prefix}: nothing there is seen")
        if is_file and not limits.extension_allowed(full):
            allowed = ", ".join(sorted(e or "(none)" for e in limits.allowed_extensions or ()))
            current_operation().refuse("extension not allowed")
            raise LimitError(
                f"{full}: extension {full.suffix or '(none)'} not allowed; use {allowed}"
            )
        self.policy(Action.WRITE, path)
