"""Routing and the merged tree of mounts, for one principal.

A :class:`Router` maps a workspace path to the guarded store of its mount and the path inside
that store, and presents the mounts as one tree: ``stat``, the children of a directory merged
across mounts, and walks. Every other part of the workspace reaches a store through it.

Routing hides what the principal may not see at the level of mounts: a mount it may see nothing
of (``core.visibility.MountView``: its labels, a blocked segment, no rule that lets it read,
list or write there) is not there for it. A path under it is reported exactly like a path under
no mount (or, below a visible mount, like a missing entry of that mount), and it is left out of
listings and of the list of mounts an error suggests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from bastion.core.errors import (
    InvalidPathError,
    NotADirectoryError_,
    NotFoundError,
    PolicyDeniedError,
    ScopeError,
)
from bastion.core.guard import GuardContext, GuardedStore
from bastion.core.label_port import LabelPort
from bastion.core.models import Action, EntryKind, FileInfo, WriteMode
from bastion.core.mounts import MountTable
from bastion.core.operation import Operation, note_refusal
from bastion.core.paths import VPath
from bastion.core.visibility import MountView, mount_hidden, refused

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

    def __init__(
        self,
        mounts: MountTable,
        ctx: GuardContext,
        labels: Mapping[VPath, LabelPort] | None = None,
    ) -> None:
        """``labels``: each mount's document labels, by prefix (``Shared.labels``)."""
        self.mounts = mounts
        self.ctx = ctx
        self.view = MountView(mounts, ctx)
        """The mounts as this principal sees them, and what it is told where it sees none."""
        found = labels or {}
        self.guarded = {
            m.prefix: GuardedStore(m.store, m, ctx, found.get(m.prefix)) for m in mounts.mounts
        }
        self._by_parts = {prefix.parts: guarded for prefix, guarded in self.guarded.items()}

    # -- routing -----------------------------------------------------------------------------

    def route(self, path: VPath) -> tuple[GuardedStore, VPath]:
        """The guarded store that holds ``path`` and the path inside it: the store of the
        nearest mount the principal sees (a mount it may see nothing of is not there: a path
        below it is a path of the mount above, where nothing is, or under no mount)."""
        view = self.view
        mount = self.mounts.find(path)
        if mount is not None and mount.prefix in view.seen:
            return self._by_parts[mount.prefix.parts], VPath(path.parts[len(mount.prefix.parts) :])
        if mount is not None:
            note_refusal(f"hidden: mount {mount.prefix}: {mount_hidden(self.ctx, mount)}")
            mount = view.find(path)
        if mount is None:
            raise view.absent(path)
        return self.guarded[mount.prefix], mount.to_store_path(path)

    async def route_change(
        self,
        path: VPath,
        size: int = 0,
        mode: WriteMode = WriteMode.CREATE,
        *,
        is_file: bool,
        parents: bool = True,
    ) -> tuple[GuardedStore, VPath]:
        """:meth:`route`, for a change at ``path`` (a file of ``size`` bytes written in
        ``mode``, or a folder made, with its ``parents``). Under a mount the principal may see
        nothing of that lies below one it sees, the change is refused as that mount would
        refuse it were the hidden one not there (its scope, limits, policy); where it would be
        allowed, in the words of a policy refusal: it cannot be made without touching what the
        principal may not see (docs/security.md, "Writes onto hidden names")."""
        mount, above = self.mounts.find(path), self.view.find(path)
        if mount is None or above is None or above is mount:
            return self.route(path)
        guarded, rel = self.guarded[above.prefix], above.to_store_path(path)
        if is_file:
            await guarded.check_write(rel, size, mode)
        else:  # folders are made one level at a time, the first one checked first
            for depth in range(1 if parents else len(rel.parts), len(rel.parts) + 1):
                guarded.check_mkdir(VPath(rel.parts[:depth]))
        why = mount_hidden(self.ctx, mount)
        note_refusal(f"hidden: mount {mount.prefix}: {why}")
        raise refused(Action.WRITE, path)

    def is_mount_point(self, path: VPath) -> bool:
        """A mount's prefix, or a directory that exists because a mount lies below it. A mount
        the principal may see nothing of is no mount point: paths there are not found."""
        return self.view.leads_to_mount(path)

    def refuse_mount_points(self, vp: VPath, verb: str) -> None:
        """Refuse to ``verb`` a path that is or holds a mount point."""
        if self.is_mount_point(vp):
            raise PolicyDeniedError(f"cannot {verb} {vp}: it is or contains a mount point")

    # -- the merged tree ---------------------------------------------------------------------

    async def stat(self, vp: VPath) -> FileInfo:
        """The entry at ``vp``; a directory that exists only because mounts lie below it is
        a directory when the principal may see one of them."""
        owner = self.view.find(vp)
        if (owner is None or owner.prefix != vp) and self.view.child_names(vp):
            return FileInfo(vp, EntryKind.DIRECTORY)
        guarded, rel = self.route(vp)
        return (await guarded.stat(rel)).at(vp)

    async def children(self, vp: VPath) -> list[FileInfo]:
        """Direct children of a directory, merged across mounts; child mounts shadow store
        entries of the same name and appear exactly once (mounts the principal sees: one it
        may see nothing of is not there)."""
        view = self.view
        mount_names = view.child_names(vp)
        entries: list[FileInfo] = []
        owner = view.find(vp)
        if owner is not None:
            shadowed = view.seen_names(vp)
            guarded, rel = self.guarded[owner.prefix], owner.to_store_path(vp)
            for info in await guarded.list(rel):
                if info.path.name not in shadowed:
                    entries.append(info.at(vp.child(info.path.name)))
        elif not mount_names:
            if self.mounts.find(vp) is not None or self.mounts.is_virtual_dir(vp):
                note_refusal("hidden: no visible mount here")
            raise view.absent(vp)
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
