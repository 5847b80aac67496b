"""What every part of the workspace shares: routing, the merged tree of mounts, and the write
helpers. :class:`~bastion.Workspace` is assembled from this base and its siblings
(``tree`` for list, glob and grep; ``transfer`` for copy and move).

Routing hides what the principal may not see at the level of mounts: a mount whose labels do
not admit the principal is not there for it. A path under it is reported exactly like a path
under no mount (or, below a visible mount, like a missing entry of that mount), and it is left
out of listings and of the list of mounts an error suggests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from bastion.core.errors import (
    AlreadyExistsError,
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
    PolicyDeniedError,
    ScopeError,
)
from bastion.core.guard import GuardContext, GuardedStore, Operation
from bastion.core.models import Action, EntryKind, FileInfo, Labels, WriteMode
from bastion.core.mounts import Mount
from bastion.core.operation import note_refusal
from bastion.core.paths import VPath
from bastion.core.sidecars import sidecar_of

if TYPE_CHECKING:
    from bastion.workspace.workspace import _Shared

__all__ = ["WorkspaceBase"]


class WorkspaceBase:
    """Routing and the shared helpers of a workspace view (one principal)."""

    _shared: _Shared
    _ctx: GuardContext
    _guarded: dict[VPath, GuardedStore]
    _by_parts: dict[tuple[str, ...], GuardedStore]
    _visible_mounts: frozenset[VPath]
    """Prefixes of the mounts this principal may see (and so may be told about)."""
    _mount_points: frozenset[VPath]
    """Prefixes of the mounts that exist for this principal: all but the label-hidden ones."""

    def _bind_mounts(self) -> None:
        mounts = self._shared.mounts.mounts
        self._guarded = {m.prefix: GuardedStore(m.store, m, self._ctx) for m in mounts}
        self._by_parts = {prefix.parts: guarded for prefix, guarded in self._guarded.items()}
        self._visible_mounts = frozenset(m.prefix for m in mounts if self._mount_visible(m))
        self._mount_points = frozenset(p for p, g in self._guarded.items() if not g.hidden)

    if TYPE_CHECKING:  # provided by SearchMixin (the knowledge index follows every change)

        async def _changed(self, *paths: VPath) -> None: ...

        async def _removed(self, *paths: VPath) -> None: ...

    # -- operations and paths ----------------------------------------------------------------

    def _op(self, name: str, path: VPath | str, target: VPath | str | None = None) -> Operation:
        return self._ctx.operation(name, path, target)

    @staticmethod
    def _parse(op: Operation, raw: str | VPath) -> VPath:
        """Parse a path inside its operation, so a malformed one is counted and audited."""
        vp = VPath.parse(raw)
        op.path = vp
        return vp

    @staticmethod
    def _parse_pair(op: Operation, src: str | VPath, dst: str | VPath) -> tuple[VPath, VPath]:
        s, d = VPath.parse(src), VPath.parse(dst)
        op.name_paths(s, d)
        return s, d

    # -- routing -----------------------------------------------------------------------------

    def _route(self, path: VPath) -> tuple[GuardedStore, VPath]:
        mount = self._shared.mounts.find(path)
        if mount is None:
            raise self._missing(path, None)
        prefix = mount.prefix.parts
        guarded = self._by_parts[prefix]
        if guarded.hidden:
            note_refusal(f"hidden: mount {mount.prefix}: labels do not admit the principal")
            raise self._missing(path, mount)
        return guarded, VPath(path.parts[len(prefix) :])

    def _missing(self, path: VPath, hidden: Mount | None) -> NotFoundError:
        """How ``path`` looks when no visible mount holds it: not found in the visible mount
        above a hidden one, else under no mount (naming only mounts the principal may see)."""
        mounts = self._shared.mounts
        probe = hidden
        while probe is not None and not probe.prefix.is_root:
            probe = mounts.find(probe.prefix.parent)
            if probe is not None and not self._guarded[probe.prefix].hidden:
                return NotFoundError(f"{path} not found")
        if path.is_root:
            return NotFoundError("/ not found")
        shown = ", ".join(str(m.prefix) for m in mounts if m.prefix in self._visible_mounts)
        return NoMountError(f"{path} is not under any mount; mounted: {shown or '(none)'}")

    def _mount_at(self, path: VPath) -> Mount | None:
        mount = self._shared.mounts.find(path)
        return mount if mount is not None and mount.prefix == path else None

    def _is_mount_point(self, path: VPath) -> bool:
        """A mount's prefix, or a directory that exists because a mount lies below it. A mount
        whose labels hide it from the principal is no mount point: paths there are not found."""
        n = len(path.parts)
        return any(prefix.parts[:n] == path.parts for prefix in self._mount_points)

    def _refuse_mount_points(self, vp: VPath, verb: str) -> None:
        if self._is_mount_point(vp):
            raise PolicyDeniedError(f"cannot {verb} {vp}: it is or contains a mount point")

    def _mount_visible(self, mount: Mount) -> bool:
        ctx = self._ctx
        if ctx.blocked(mount.prefix) is not None or self._guarded[mount.prefix].hidden:
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

    async def _stat(self, vp: VPath) -> FileInfo:
        mounts = self._shared.mounts
        if self._mount_at(vp) is None and mounts.is_virtual_dir(vp):
            if self._visible_mount_names(vp):
                return FileInfo(vp, EntryKind.DIRECTORY)
            if mounts.find(vp) is None:
                note_refusal("hidden: only hidden mounts lie below")
                raise self._missing(vp, None)
        guarded, rel = self._route(vp)
        return (await guarded.stat(rel)).at(vp)

    async def _children(self, vp: VPath) -> list[FileInfo]:
        """Direct children of a directory, merged across mounts; child mounts shadow store
        entries of the same name and appear exactly once."""
        mounts = self._shared.mounts
        mount_names = self._visible_mount_names(vp)
        all_mount_names = mounts.child_mount_names(vp)
        entries: list[FileInfo] = []
        owner = mounts.find(vp)
        if owner is not None and not self._guarded[owner.prefix].hidden:
            guarded, rel = self._guarded[owner.prefix], owner.to_store_path(vp)
            for info in await guarded.list(rel):
                if info.path.name not in all_mount_names:
                    entries.append(info.at(vp.child(info.path.name)))
        elif not mount_names:
            if owner is not None or mounts.is_virtual_dir(vp):
                note_refusal("hidden: no visible mount here")
            raise self._missing(vp, owner)
        entries.extend(FileInfo(vp.child(name), EntryKind.DIRECTORY) for name in mount_names)
        entries.sort(key=lambda i: i.path.parts)
        return entries

    async def _walk(
        self, root: VPath, max_depth: int | None, *, strict: bool = False
    ) -> AsyncIterator[FileInfo]:
        """Entries under ``root`` across mounts, depth-first in name order. Directories the
        principal may not list are skipped (``strict`` raises for ``root`` itself)."""
        stack: list[tuple[VPath, int]] = [(root, 1)]
        first = True
        while stack:
            directory, level = stack.pop()
            try:
                children = await self._children(directory)
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

    # -- writing -----------------------------------------------------------------------------

    async def _write(
        self,
        guarded: GuardedStore,
        rel: VPath,
        data: bytes,
        mode: WriteMode,
        if_version: str | None,
        parents: bool,
    ) -> FileInfo:
        try:
            return await guarded.write(rel, data, mode=mode, if_version=if_version)
        except NotFoundError:
            if not parents or rel.parent.is_root:
                raise
        await self._make_dirs(guarded, rel.parent)
        return await guarded.write(rel, data, mode=mode, if_version=if_version)

    async def _carry_labels(
        self, guarded: GuardedStore, rel: VPath, labels: Labels | None, head: bytes
    ) -> None:
        """Before a file with ``labels`` lands at ``rel``: write the sidecar that keeps it as
        hard to read as it was (a copy, a move, a backup; see ``GuardedStore.carried_labels``)."""
        sidecar = await guarded.carried_labels(rel, labels, head)
        if sidecar is not None:
            await self._write(guarded, sidecar_of(rel), sidecar, WriteMode.OVERWRITE, None, True)

    async def _make_dirs(self, guarded: GuardedStore, rel: VPath, *, exist_ok: bool = True) -> None:
        """Create ``rel`` and its parents without stat (works on write-only mounts too)."""
        for depth in range(1, len(rel.parts) + 1):
            try:
                await guarded.mkdir(VPath(rel.parts[:depth]))
            except AlreadyExistsError:
                if depth == len(rel.parts) and not exist_ok:
                    raise
