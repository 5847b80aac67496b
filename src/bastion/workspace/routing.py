"""Routing and the merged tree of mounts, for one principal.

A :class:`Router` maps a workspace path to the guarded store of its mount and the path inside
that store, and presents the mounts as one tree: ``stat``, the children of a directory merged
across mounts, and walks. Every other part of the workspace reaches a store through it.

Routing hides what the principal may not see at the level of mounts: a mount whose labels do
not admit the principal is not there for it. A path under it is reported exactly like a path
under no mount (or, below a visible mount, like a missing entry of that mount), and it is left
out of listings and of the list of mounts an error suggests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bastion.core.errors import (
    InvalidPathError,
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
    PolicyDeniedError,
    ScopeError,
)
from bastion.core.guard import GuardContext, GuardedStore
from bastion.core.models import Action, EntryKind, FileInfo
from bastion.core.mounts import Mount, MountTable
from bastion.core.operation import Operation, note_refusal
from bastion.core.paths import VPath

__all__ = ["Router", "parse_in", "parse_pair_in", "parse_request"]


def parse_in(op: Operation, raw: str | VPath) -> VPath:
    """Parse a path inside its operation, so a malformed one is counted and audited."""
    vp = VPath.parse(raw)
    op.path = vp
    return vp


def parse_request(ctx: GuardContext, raw: str | VPath, operation: str) -> VPath:
    """Parse a path a caller outside the workspace's methods was given (a tool's argument):
    a well-formed one costs no record (the operation it is then used in makes its own); a
    malformed one is rate-limited and audited as a refused ``operation``, like a malformed
    path given to any workspace method, and raises :class:`InvalidPathError`."""
    try:
        return VPath.parse(raw)
    except InvalidPathError:
        with ctx.operation(operation, raw) as op:
            parse_in(op, raw)  # raises again, inside the operation
        raise


def parse_pair_in(op: Operation, src: str | VPath, dst: str | VPath) -> tuple[VPath, VPath]:
    """Parse a source and a target inside their operation."""
    s, d = VPath.parse(src), VPath.parse(dst)
    op.name_paths(s, d)
    return s, d


class Router:
    """The mounts as one tree, for the principal of ``ctx``."""

    def __init__(self, mounts: MountTable, ctx: GuardContext) -> None:
        self.mounts = mounts
        self.ctx = ctx
        self.guarded = {m.prefix: GuardedStore(m.store, m, ctx) for m in mounts.mounts}
        self._by_parts = {prefix.parts: guarded for prefix, guarded in self.guarded.items()}
        self._visible_mounts = frozenset(m.prefix for m in mounts.mounts if self._mount_visible(m))
        """Prefixes of the mounts this principal may see (and so may be told about)."""
        self._mount_points = frozenset(p for p, g in self.guarded.items() if not g.hidden)
        """Prefixes of the mounts that exist for this principal: all but the label-hidden ones."""

    # -- routing -----------------------------------------------------------------------------

    def route(self, path: VPath) -> tuple[GuardedStore, VPath]:
        """The guarded store that holds ``path`` and the path inside it."""
        mount = self.mounts.find(path)
        if mount is None:
            raise self.missing(path, None)
        prefix = mount.prefix.parts
        guarded = self._by_parts[prefix]
        if guarded.hidden:
            note_refusal(f"hidden: mount {mount.prefix}: labels do not admit the principal")
            raise self.missing(path, mount)
        return guarded, VPath(path.parts[len(prefix) :])

    def missing(self, path: VPath, hidden: Mount | None) -> NotFoundError:
        """How ``path`` looks when no visible mount holds it: not found in the visible mount
        above a hidden one, else under no mount (naming only mounts the principal may see)."""
        mounts = self.mounts
        probe = hidden
        while probe is not None and not probe.prefix.is_root:
            probe = mounts.find(probe.prefix.parent)
            if probe is not None and not self.guarded[probe.prefix].hidden:
                return NotFoundError(f"{path} not found")
        if path.is_root:
            return NotFoundError("/ not found")
        shown = ", ".join(str(m.prefix) for m in mounts if m.prefix in self._visible_mounts)
        return NoMountError(f"{path} is not under any mount; mounted: {shown or '(none)'}")

    def mount_at(self, path: VPath) -> Mount | None:
        """The mount whose prefix is exactly ``path``."""
        mount = self.mounts.find(path)
        return mount if mount is not None and mount.prefix == path else None

    def is_mount_point(self, path: VPath) -> bool:
        """A mount's prefix, or a directory that exists because a mount lies below it. A mount
        whose labels hide it from the principal is no mount point: paths there are not found."""
        n = len(path.parts)
        return any(prefix.parts[:n] == path.parts for prefix in self._mount_points)

    def refuse_mount_points(self, vp: VPath, verb: str) -> None:
        """Refuse to ``verb`` a path that is or holds a mount point."""
        if self.is_mount_point(vp):
            raise PolicyDeniedError(f"cannot {verb} {vp}: it is or contains a mount point")

    def _mount_visible(self, mount: Mount) -> bool:
        ctx = self.ctx
        if ctx.blocked(mount.prefix) is not None or self.guarded[mount.prefix].hidden:
            return False
        return any(
            ctx.allows(action, mount.prefix) for action in (Action.LIST, Action.READ, Action.WRITE)
        )

    def _visible_mount_names(self, vp: VPath) -> set[str]:
        """Names under ``vp`` that lead to a mount the principal may see."""
        n = len(vp.parts)
        return {
            prefix.parts[n]
            for prefix in self._visible_mounts
            if len(prefix.parts) > n and prefix.parts[:n] == vp.parts
        }

    # -- the merged tree ---------------------------------------------------------------------

    async def stat(self, vp: VPath) -> FileInfo:
        """The entry at ``vp``; a directory that exists only because mounts lie below it is
        a directory when the principal may see one of them."""
        mounts = self.mounts
        if self.mount_at(vp) is None and mounts.is_virtual_dir(vp):
            if self._visible_mount_names(vp):
                return FileInfo(vp, EntryKind.DIRECTORY)
            if mounts.find(vp) is None:
                note_refusal("hidden: only hidden mounts lie below")
                raise self.missing(vp, None)
        guarded, rel = self.route(vp)
        return (await guarded.stat(rel)).at(vp)

    async def children(self, vp: VPath) -> list[FileInfo]:
        """Direct children of a directory, merged across mounts; child mounts shadow store
        entries of the same name and appear exactly once."""
        mounts = self.mounts
        mount_names = self._visible_mount_names(vp)
        all_mount_names = mounts.child_mount_names(vp)
        entries: list[FileInfo] = []
        owner = mounts.find(vp)
        if owner is not None and not self.guarded[owner.prefix].hidden:
            guarded, rel = self.guarded[owner.prefix], owner.to_store_path(vp)
            for info in await guarded.list(rel):
                if info.path.name not in all_mount_names:
                    entries.append(info.at(vp.child(info.path.name)))
        elif not mount_names:
            if owner is not None or mounts.is_virtual_dir(vp):
                note_refusal("hidden: no visible mount here")
            raise self.missing(vp, owner)
        entries.extend(FileInfo(vp.child(name), EntryKind.DIRECTORY) for name in mount_names)
        entries.sort(key=lambda i: i.path.parts)
        return entries

    async def walk(
        self, root: VPath, max_depth: int | None, *, strict: bool = False
    ) -> AsyncIterator[FileInfo]:
        """Entries under ``root`` across mounts, depth-first in name order. Directories the
        principal may not list are skipped (``strict`` raises for ``root`` itself)."""
        stack: list[tuple[VPath, int]] = [(root, 1)]
        first = True
        while stack:
            directory, level = stack.pop()
            try:
                children = await self.children(directory)
            except (ScopeError, NotFoundError, NotADirectoryError_):
                if strict and first:
                    raise
                children = []
            first = False
            for child in reversed(children):
                if child.is_dir and (max_depth is None or level < max_depth):
                    stack.append((child.path, level + 1))
            for child in children:
                yield child
