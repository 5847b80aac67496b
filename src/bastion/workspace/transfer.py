"""Copy and move, all or nothing.

A copy (and a move between mounts, which is a copy and a delete) is planned before anything
changes: every entry to create is checked against the target's scope, limits and policy, and
against what already exists there; a move also checks up front that the source may be deleted
as a whole (nothing under it hidden or protected). Only then are bytes written. A refused copy
or move changes nothing; what can still fail midway is what no check can foresee (another
writer, a full disk).
"""

from __future__ import annotations

from dataclasses import dataclass

from bastion.core.errors import (
    AlreadyExistsError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
)
from bastion.core.guard import GuardContext, GuardedStore
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.sidecars import labelled_file_of
from bastion.labels.frontmatter import LABEL_BYTES
from bastion.workspace.indexing import IndexFollower
from bastion.workspace.routing import Router, parse_pair_in
from bastion.workspace.writing import carry_labels, make_dirs, write_file

__all__ = ["Transfers"]


@dataclass(frozen=True, slots=True)
class _Step:
    """One entry to create: ``src`` (seen as ``info``) copied to ``dst``."""

    src: VPath
    dst: VPath
    info: FileInfo
    exists: bool = False
    """A directory that is already there (merged into, not created)."""


class Transfers:
    """``copy`` and ``move`` within and between the mounts of one router."""

    def __init__(self, router: Router, index: IndexFollower) -> None:
        self._router = router
        self._ctx: GuardContext = router.ctx
        self._index = index

    async def copy(
        self, src: str | VPath, dst: str | VPath, *, overwrite: bool = False
    ) -> FileInfo:
        """Copy a file or a directory tree. (see :meth:`Workspace.copy`)"""
        with self._ctx.operation("copy", src, dst) as op:
            s, d = parse_pair_in(op, src, dst)
            info = await self._router.stat(s)
            if d.is_relative_to(s) and info.is_dir:
                raise NotADirectoryError_(f"cannot copy {s} into itself")
            steps = await self._plan(s, d, info, overwrite=overwrite, merge=True)
            result, op.bytes = await self._run(steps, overwrite=overwrite)
            await self._index.changed(d)
            return result

    async def move(
        self, src: str | VPath, dst: str | VPath, *, overwrite: bool = False
    ) -> FileInfo:
        """Move or rename. (see :meth:`Workspace.move`)"""
        with self._ctx.operation("move", src, dst) as op:
            s, d = parse_pair_in(op, src, dst)
            self._router.refuse_mount_points(s, "move")
            if self._router.is_mount_point(d):
                raise AlreadyExistsError(f"{d} already exists (a mount point)")
            src_store, src_rel = self._router.route(s)
            info = await src_store.stat(src_rel)
            mode = WriteMode.OVERWRITE if overwrite else WriteMode.CREATE
            dst_store, dst_rel = await self._router.route_change(
                d, info.size, mode, is_file=info.is_file
            )
            if d.is_relative_to(s):
                raise NotADirectoryError_(f"cannot move {s} into itself")
            if src_store is dst_store:
                if info.is_file:  # a folder's sidecars move with it; a file's go first
                    await src_store.check_move(src_rel, dst_rel)
                    if not overwrite and await dst_store.lookup(dst_rel) is not None:
                        # refused before the sidecar, which would relabel the file there
                        raise AlreadyExistsError(
                            f"{d} already exists; pick another name or pass overwrite=True",
                            path=d,
                        ).needing("overwrite", True)
                    head = await self._head(src_store, src_rel)
                    await carry_labels(dst_store, dst_rel, info.labels, head)
                await self._rename(src_store, src_rel, dst_rel, d, info, overwrite=overwrite)
                # where the mover may not read, it is told nothing but what it moved
                blind = dst_store.blind(dst_rel)
                result = FileInfo(d, info.kind, info.size) if blind else info.at(d)
            else:
                # Copy then delete, after checking that the delete will be allowed.
                await src_store.check_removal(src_rel, "move")
                replace = overwrite and info.is_file
                steps = await self._plan(s, d, info, overwrite=replace, merge=False)
                result, _ = await self._run(steps, overwrite=replace)
                await src_store.delete(src_rel, recursive=info.is_dir)
            if info.is_file:
                await src_store.drop_sidecar(src_rel)
            await self._index.removed(s)
            await self._index.changed(d)
            return result

    async def _rename(
        self,
        store: GuardedStore,
        src_rel: VPath,
        dst_rel: VPath,
        d: VPath,
        info: FileInfo,
        *,
        overwrite: bool,
    ) -> None:
        if overwrite and info.is_file:
            existing = await store.lookup(dst_rel)
            if existing is not None:
                if existing.is_dir:
                    raise IsADirectoryError_(f"{d} is a directory; it is not replaced")
                # Replacing is delete then rename: check both before deleting anything.
                await store.check_move(src_rel, dst_rel)
                await store.check_removal(dst_rel)
                await store.delete(dst_rel)
        # a file was admitted by check_move (in move, before its labels were carried): its
        # rename is not admitted twice; a folder's is admitted here (hidden entries under it)
        rename = store.rename_checked if info.is_file else store.rename
        try:
            await rename(src_rel, dst_rel)
        except NotFoundError:  # the target's parent is missing: create it, then rename
            if dst_rel.parent.is_root:
                raise
        else:
            return
        await make_dirs(store, dst_rel.parent)
        await rename(src_rel, dst_rel)

    # -- planning and running ----------------------------------------------------------------

    async def _plan(
        self, s: VPath, d: VPath, info: FileInfo, *, overwrite: bool, merge: bool
    ) -> list[_Step]:
        """Every entry to create, checked (raises before anything changes)."""
        sources = [info.at(s)]
        if info.is_dir:
            sources += [entry async for entry in self._router.walk(s, None)]
            # the sidecar of a file that is copied too is not copied: the labels travel with
            # the file (see _run), as tight as they were, whatever the target mount's labels
            files = {e.path for e in sources if e.is_file}
            sources = [e for e in sources if labelled_file_of(e.path) not in files]
        steps = []
        for entry in sources:
            dst = d.join(entry.path.relative_to(s))
            steps.append(
                await self._admit(entry, dst, top=dst == d, overwrite=overwrite, merge=merge)
            )
        return steps

    async def _admit(
        self, entry: FileInfo, dst: VPath, *, top: bool, overwrite: bool, merge: bool
    ) -> _Step:
        if self._router.is_mount_point(dst):
            if entry.is_file:
                raise IsADirectoryError_(f"{dst} is a directory (a mount point)", path=dst)
            if top and not merge:
                raise AlreadyExistsError(f"{dst} already exists (a mount point)", path=dst)
            return _Step(entry.path, dst, entry, exists=True)
        mode = WriteMode.OVERWRITE if overwrite else WriteMode.CREATE
        guarded, rel = await self._router.route_change(dst, entry.size, mode, is_file=entry.is_file)
        existing = None if rel.is_root else await guarded.lookup(rel)
        if rel.is_root and top and not merge:
            raise AlreadyExistsError(f"{dst} already exists (a mount point)", path=dst)
        taken = f"{dst} already exists; pick another name or pass overwrite=True"
        if entry.is_dir:
            if existing is not None and (not existing.is_dir or (top and not merge)):
                raise AlreadyExistsError(taken).needing("overwrite", True)
            if existing is None and not rel.is_root:
                guarded.check_mkdir(rel)
            return _Step(entry.path, dst, entry, exists=existing is not None or rel.is_root)
        if existing is not None:
            if existing.is_dir and not (top and not merge and not overwrite):
                raise IsADirectoryError_(f"{dst} is a directory; it is not replaced", path=dst)
            if not overwrite:
                raise AlreadyExistsError(taken).needing("overwrite", True)
        await guarded.check_write(rel, entry.size, mode)
        return _Step(entry.path, dst, entry)

    async def _run(self, steps: list[_Step], *, overwrite: bool) -> tuple[FileInfo, int]:
        """Create what was planned; the info of the first entry and the bytes copied."""
        mode = WriteMode.OVERWRITE if overwrite else WriteMode.CREATE
        cap = self._ctx.policy.limits.max_file_bytes
        first: FileInfo | None = None
        total = 0
        for step in steps:
            if step.info.is_dir:
                if not step.exists:
                    guarded, rel = self._router.route(step.dst)
                    await self._make_dir(guarded, rel)
                made = FileInfo(step.dst, EntryKind.DIRECTORY)  # undated, as folders are shown
            else:
                src_store, src_rel = self._router.route(step.src)
                seen, data = await src_store.read_file(src_rel, 0, cap + 1)
                dst_store, dst_rel = self._router.route(step.dst)
                await carry_labels(dst_store, dst_rel, seen.labels, data[:LABEL_BYTES])
                written = await write_file(dst_store, dst_rel, data, mode, None, parents=True)
                total += len(data)
                made = written.at(step.dst)
            first = first or made
        assert first is not None
        return first, total

    @staticmethod
    async def _head(store: GuardedStore, rel: VPath) -> bytes:
        """The first bytes of a file, as many as its labels depend on."""
        _, head = await store.read_file(rel, 0, LABEL_BYTES)
        return head

    async def _make_dir(self, guarded: GuardedStore, rel: VPath) -> None:
        """Create ``rel``, and its parents only when they are missing."""
        try:
            await guarded.mkdir(rel)
        except AlreadyExistsError:
            return
        except NotFoundError:
            if rel.parent.is_root:
                raise
            await make_dirs(guarded, rel)
