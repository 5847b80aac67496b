"""What a principal may read, and what it is told when it may not: the two answers every part
that shows or refuses something calls (the guard, the index's hit checks, the mount routing,
the agent tools' session). None keeps a copy of either.

* :func:`why_hidden` is the one answer to "may this principal read this entry?": ``None``
  when it may, else why not (for the audit log, never for the caller). A file read through the
  guard and a search hit of the same document are decided by it alike.
* :class:`MountView` is the mount table as one principal sees it: a mount it may see nothing
  of (its labels do not admit it, a blocked segment, no rule that could let it read, list or
  write anything there) is not there for it. :meth:`MountView.absent` and :func:`refused` are
  what the principal is told: *absent* (the answer for a path that does not exist: not found
  in the mount that holds it, else under no mount, naming only mounts it may see) or
  *refused* (in the words of a policy refusal). Everything else that goes wrong is a fault,
  told as the store's failure re-worded for the workspace path (``errors.translated``).
"""

from __future__ import annotations

from collections.abc import Iterable

from bastion.core.errors import NoMountError, NotFoundError, PolicyDeniedError
from bastion.core.models import Action, EntryKind, FileInfo, Labels, Scope, WriteMode
from bastion.core.mounts import Mount, MountTable
from bastion.core.operation import GuardContext, note_refusal
from bastion.core.paths import VPath
from bastion.core.policy import Effect, Policy
from bastion.core.principal import Principal
from bastion.core.sidecars import labelled_file_of

__all__ = [
    "LABELS_HIDE",
    "MountView",
    "absent",
    "blind_mode",
    "may_reach",
    "mount_hidden",
    "mount_seen",
    "prefix_hidden",
    "refused",
    "ruled_out",
    "undated",
    "why_hidden",
]

LABELS_HIDE = "labels do not admit the principal"

SEEING = (Action.READ, Action.LIST, Action.WRITE)
"""The actions that let a principal see something of a mount (what it may search it may
read; what it may delete or run it must first see)."""


# -- may read ---------------------------------------------------------------------------------


def ruled_out(ctx: GuardContext, full: VPath, kind: EntryKind | None) -> str | None:
    """Why a blocked segment or the policy hides the entry at the workspace path ``full``
    (``kind``: a directory is listed, anything else read), or ``None``. A sidecar is hidden
    wherever the file it labels is (``core.sidecars``)."""
    directory = kind is EntryKind.DIRECTORY
    target = None if directory else labelled_file_of(full)
    if target is not None:
        why = ruled_out(ctx, target, EntryKind.FILE)
        if why is not None:
            return f"sidecar of a hidden file: {why}"
    blocked = ctx.blocked(full)
    if blocked is not None:
        return f"blocked segment {blocked!r}"
    decision = ctx.decide(Action.LIST if directory else Action.READ, full)
    return None if decision.allowed else decision.reason


def why_hidden(
    ctx: GuardContext,
    mount: Mount,
    full: VPath,
    kind: EntryKind | None,
    labels: Labels | None,
    *,
    ruled: str | bool | None = False,
) -> str | None:
    """May ``ctx``'s principal read (or, for a directory, list) the entry at the workspace path
    ``full`` in ``mount``, labelled ``labels`` (``None``: the mount's defaults)? ``None`` when
    it may, else why not. The mount's scope must allow reading (a write-only mount shows
    nothing: its writers write blind), the principal must see the mount (:func:`mount_seen`),
    no segment may be blocked, the policy must allow it and the labels must admit the
    principal. ``ruled``: :func:`ruled_out` for this path when the caller remembers it (the
    guard does, per path); ``False`` to work it out here."""
    if mount.scope is Scope.WRITE_ONLY:  # the one scope that does not allow reading
        return f"mount {mount.prefix} is {mount.scope.value}"
    hidden = ctx.mounts_seen.get(mount, _UNKNOWN)
    if hidden is _UNKNOWN:
        hidden = mount_hidden(ctx, mount)
    if hidden is not None:
        return f"mount {mount.prefix}: {hidden}"
    why = ruled_out(ctx, full, kind) if ruled is False else ruled
    if isinstance(why, str):
        return why
    if labels is None:
        labels = mount.labels
    if labels.undetermined:
        return f"labels cannot be determined: {labels.undetermined}"
    return None if ctx.admits(labels) else LABELS_HIDE


# -- what a principal is told -----------------------------------------------------------------


_UNKNOWN = object()
"""Not worked out yet (``None`` is an answer: the mount is seen)."""


def absent(path: VPath, mount: object = None) -> NotFoundError:
    """The answer for ``path`` in a mount the principal sees, when nothing it may see is
    there: the words of a truly missing path, and its attributes (``path``, and ``mount``: the
    prefix of the mount, which the guard gives a missing path too)."""
    return NotFoundError(path=path, mount=None if mount is None else str(mount))


def refused(action: Action, path: VPath, public_reason: str = "") -> PolicyDeniedError:
    """The answer for ``action`` on ``path`` that the policy refuses, or that cannot be done
    without touching something the principal may not see (a write onto a hidden name): the
    same words either way, with the rule's description when it has one."""
    why = f" ({public_reason})" if public_reason else ""
    return PolicyDeniedError(f"{action.value} on {path} is not allowed by policy{why}")


def blind_mode(full: VPath, mode: WriteMode, if_version: str | None) -> WriteMode:
    """The mode a blind write (the writer may not read ``full``) is made in, or its refusal:
    told the same whether or not anything is there. ``create`` replaces what is there, as
    ``overwrite`` does (refusing an existing file would tell that it exists); a condition on
    a version, and a labels sidecar (a relabelling of a file the writer may not see), are
    always refused."""
    why = ""
    if if_version is not None:
        why = "a conditional write (if_version) needs read access"
    elif labelled_file_of(full) is not None:
        why = "a labels sidecar cannot be written where you may not read"
    if why:
        note_refusal(f"blind write: {why}")
        raise PolicyDeniedError(f"write on {full} is not allowed: {why}")
    return WriteMode.OVERWRITE if mode is WriteMode.CREATE else mode


def undated(info: FileInfo) -> FileInfo:
    """``info`` as a principal is shown it: a folder without its modification time, which
    moves when an entry the principal may not see is added or removed (folder times are
    content, as folder names are)."""
    if not info.is_dir or not info.mtime:
        return info
    return FileInfo(info.path, info.kind, 0, 0.0, None, info.labels)


# -- the mounts a principal sees ---------------------------------------------------------------


def may_reach(
    policy: Policy, principal: Principal, roles: frozenset[str], action: Action, prefix: VPath
) -> bool:
    """Could ``policy`` allow ``action`` to ``principal`` (with its effective ``roles``) at
    ``prefix`` or anywhere below it? Rule by rule, first match first: an allow rule that could
    match there says yes, a deny rule that covers the whole tree (``/docs/**``) says no. Deny
    rules that cover it only together do not hide it (an allow rule behind them is taken at
    its word)."""
    return reach(policy, principal, roles, action, prefix) is None


def reach(
    policy: Policy, principal: Principal, roles: frozenset[str], action: Action, prefix: VPath
) -> str | None:
    """:func:`may_reach`: ``None`` when it could, else why not (the rule that denies the
    whole tree, or the default deny)."""
    for index, rule in enumerate(policy.rules):
        if not rule.concerns(principal, roles, action):
            continue
        if rule.effect is Effect.ALLOW:
            if any(g.matches(prefix) or g.could_match_below(prefix) for g in rule.globs):
                return None
        elif any(g.covers(prefix) for g in rule.globs):
            return f"deny {action.value} by {rule.description or f'rule {index + 1}'}"
    return "no rule matched (default deny)"


def mount_seen(ctx: GuardContext, mount: Mount) -> bool:
    """May ``ctx``'s principal see anything of ``mount``? Not when its prefix holds a blocked
    segment, when its labels do not admit the principal (a write-only mount excepted: what
    it holds is never read back, so its labels hide nothing from its writers), or when no
    rule could let the principal read, list or write anything in it."""
    return mount_hidden(ctx, mount) is None


def mount_hidden(ctx: GuardContext, mount: Mount) -> str | None:
    """Why the principal may see nothing of ``mount`` (:func:`mount_seen`), or ``None``.
    Remembered per principal view (a pure function of the principal, the policy and the
    mount)."""
    seen = ctx.mounts_seen
    if mount in seen:
        return seen[mount]
    why = seen[mount] = _hidden(ctx, mount)
    return why


def _hidden(ctx: GuardContext, mount: Mount) -> str | None:
    return prefix_hidden(ctx, mount.prefix, mount.scope, mount.labels)


def prefix_hidden(ctx: GuardContext, prefix: VPath, scope: Scope, labels: Labels) -> str | None:
    """:func:`mount_hidden` of a mount at ``prefix`` with this scope and these labels, for a
    mount described but not opened (``bastion config check``)."""
    blocked = ctx.blocked(prefix)
    if blocked is not None:
        return f"blocked segment {blocked!r}"
    if scope is not Scope.WRITE_ONLY and not ctx.admits(labels):
        return LABELS_HIDE
    why: str | None = "the mount's scope allows none of read, list, write"
    for action in SEEING:
        if scope.allows(action):
            why = reach(ctx.policy, ctx.principal, ctx.roles, action, prefix)
            if why is None:
                return None
    return why


class MountView:
    """The mount table as the principal of ``ctx`` sees it (a mount it may see nothing of is
    not there), and what it is told of a path where nothing it may see is."""

    def __init__(self, table: MountTable, ctx: GuardContext) -> None:
        self.table = table
        self.ctx = ctx
        self.seen = frozenset(m.prefix for m in table if mount_seen(ctx, m))
        """Prefixes of the mounts this principal may see something of: paths there are
        routed to them (elsewhere they are under no mount)."""
        self.listed = frozenset(
            m.prefix
            for m in table
            if m.prefix in self.seen
            and any(m.scope.allows(a) and ctx.allows(a, m.prefix) for a in SEEING)
        )
        """Prefixes of the seen mounts shown as folders (in listings, and in the mounts an
        error names): those the principal may read, list or write at their root, as a
        folder it may see nothing of is not listed even where it may read deeper."""
        self._shown = ", ".join(str(m.prefix) for m in table if m.prefix in self.listed)

    def sees(self, mount: Mount) -> bool:
        return mount.prefix in self.seen

    def find(self, path: VPath) -> Mount | None:
        """The mount that holds ``path`` for the principal: the nearest mount it sees among
        those whose prefix is ``path`` or above it (a mount it may see nothing of is not
        there), else ``None``."""
        table, probe = self.table, self.table.find(path)
        while probe is not None and probe.prefix not in self.seen:
            probe = None if probe.prefix.is_root else table.find(probe.prefix.parent)
        return probe

    def absent(self, path: VPath) -> NotFoundError:
        """What the principal is told of ``path`` when nothing it may see is there: not found
        when a mount it sees holds the path (the nearest one above a hidden one), else under
        no mount, naming only the mounts it sees: a mount it may see nothing of answers as no
        mount at all."""
        holder = self.find(path)
        if holder is not None or path.is_root:
            return absent(path, None if holder is None else holder.prefix)
        return NoMountError(f"{path} is not under any mount; mounted: {self._shown or '(none)'}")

    def may(self, action: Action, path: VPath) -> bool:
        """Whether the mount's scope and the policy may allow ``action`` on ``path`` (a path
        in a mount the principal sees, without a blocked segment)."""
        mount = self.find(path)
        if mount is None or not mount.scope.allows(action):
            return False
        return self.ctx.blocked(path) is None and self.ctx.allows(action, path)

    def child_names(self, path: VPath) -> set[str]:
        """Names directly under ``path`` that lead to a mount shown to the principal."""
        return _names_below(path, self.listed)

    def seen_names(self, path: VPath) -> set[str]:
        """Names directly under ``path`` that lead to a mount the principal sees (they
        shadow entries of the same name in the store of the mount above)."""
        return _names_below(path, self.seen)

    def leads_to_mount(self, path: VPath) -> bool:
        """``path`` is a mount's prefix, or a directory a mount lies below, of a mount the
        principal sees."""
        n = len(path.parts)
        return any(prefix.parts[:n] == path.parts for prefix in self.seen)


def _names_below(path: VPath, prefixes: Iterable[VPath]) -> set[str]:
    n = len(path.parts)
    return {p.parts[n] for p in prefixes if len(p.parts) > n and p.parts[:n] == path.parts}
