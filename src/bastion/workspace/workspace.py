"""The workspace: one virtual filesystem over many mounts, every call guarded and audited.

This is the async API, the real one. ``bastion.SyncWorkspace`` derives a blocking facade from
it mechanically. A workspace is bound to one principal; :meth:`Workspace.with_principal`
gives a view for another principal that shares mounts, policy, audit and rate limits.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bastion.core.audit import AuditSink, MemoryAuditSink
from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    EditError,
    IsADirectoryError_,
    LimitError,
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
    PolicyDeniedError,
    ScopeError,
)
from bastion.core.globs import Glob
from bastion.core.guard import GuardContext, GuardedStore, Operation
from bastion.core.models import Action, EntryKind, FileInfo, WriteMode
from bastion.core.mounts import Mount, MountTable
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.core.ratelimit import RateLimiter
from bastion.workspace.fsmap import filesystem_map
from bastion.workspace.grep import GrepMatch, GrepResult, clip, compile_matcher
from bastion.workspace.knowledge import KnowledgeLink
from bastion.workspace.searching import SearchMixin

if TYPE_CHECKING:
    from bastion.knowledge.service import Knowledge
    from bastion.workspace.sync import SyncWorkspace

__all__ = ["EditResult", "Workspace"]

_LINE_CHUNK = 64 * 1024
_BINARY_SNIFF = 8192


@dataclass(frozen=True, slots=True)
class EditResult:
    """What an edit changed."""

    path: str
    replacements: int
    version: str | None


class _Shared:
    """State shared by every principal view of one workspace."""

    def __init__(
        self, mounts: MountTable, policy: Policy, audit: AuditSink, knowledge: Knowledge | None
    ) -> None:
        self.mounts = mounts
        self.policy = policy
        self.audit = audit
        self.limiter = RateLimiter(policy.rate_limit) if policy.rate_limit else None
        self.knowledge = KnowledgeLink(knowledge, mounts) if knowledge is not None else None


class Workspace(SearchMixin):
    """A governed virtual filesystem for one principal.

    >>> from bastion import Workspace, Mount, MemoryStore, Policy
    >>> ws = Workspace([Mount.of("/scratch", MemoryStore())], policy=Policy.allow_all())
    """

    def __init__(
        self,
        mounts: Iterable[Mount] | MountTable,
        *,
        policy: Policy,
        principal: Principal | None = None,
        audit: AuditSink | None = None,
        knowledge: Knowledge | None = None,
    ) -> None:
        table = mounts if isinstance(mounts, MountTable) else MountTable(mounts)
        sink = audit if audit is not None else MemoryAuditSink()
        self._shared = _Shared(table, policy, sink, knowledge)
        self._bind(principal or Principal.of("local"))

    def _bind(self, principal: Principal) -> None:
        shared = self._shared
        self.principal = principal
        self._ctx = GuardContext(principal, shared.policy, shared.audit, shared.limiter)
        self._knowledge = shared.knowledge
        self._guarded = {
            m.prefix: GuardedStore(m.store, m, self._ctx) for m in shared.mounts.mounts
        }

    def with_principal(self, principal: Principal) -> Workspace:
        """A view of the same workspace acting for ``principal``."""
        view = object.__new__(Workspace)
        view._shared = self._shared
        view._bind(principal)
        return view

    def sync(self) -> SyncWorkspace:
        """The blocking facade over this workspace."""
        from bastion.workspace.sync import SyncWorkspace

        return SyncWorkspace(self)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        return self._shared.mounts.mounts

    @property
    def policy(self) -> Policy:
        return self._shared.policy

    @property
    def audit(self) -> AuditSink:
        return self._shared.audit

    def filesystem_map(self) -> str:
        """A short text for an agent's system prompt: each mount, its scope, what it may do."""
        return filesystem_map(self._shared.mounts.mounts, self._ctx)

    # -- routing -----------------------------------------------------------------------------

    def _route(self, path: VPath) -> tuple[GuardedStore, VPath]:
        mount = self._shared.mounts.resolve(path)
        return self._guarded[mount.prefix], mount.to_store_path(path)

    def _mount_at(self, path: VPath) -> Mount | None:
        mount = self._shared.mounts.find(path)
        return mount if mount is not None and mount.prefix == path else None

    def _op(self, name: str, path: VPath | str, target: VPath | str | None = None) -> Operation:
        return self._ctx.operation(name, path, target)

    # -- stat ----------------------------------------------------------------------------------

    async def stat(self, path: str | VPath) -> FileInfo:
        """Size, kind, modification time and version of one entry."""
        vp = VPath.parse(path)
        async with self._op("stat", vp):
            return await self._stat(vp)

    async def _stat(self, vp: VPath) -> FileInfo:
        mounts = self._shared.mounts
        if self._mount_at(vp) is None and mounts.is_virtual_dir(vp):
            if self._visible_mount_names(vp):
                return FileInfo(vp, EntryKind.DIRECTORY)
            if mounts.find(vp) is None:
                raise NotFoundError(f"{vp} not found")
        guarded, rel = self._route(vp)
        return (await guarded.stat(rel)).at(vp)

    async def exists(self, path: str | VPath) -> bool:
        """True when the entry exists and the principal may see it."""
        vp = VPath.parse(path)
        async with self._op("exists", vp):
            if self._shared.mounts.find(vp) is None and not self._shared.mounts.is_virtual_dir(vp):
                return False
            try:
                await self._stat(vp)
            except NotFoundError:
                return False
            return True

    # -- read --------------------------------------------------------------------------------

    async def read_bytes(
        self, path: str | VPath, *, start: int | None = None, end: int | None = None
    ) -> bytes:
        """The file's bytes, or the byte range ``[start, end)``; only the range is loaded."""
        vp = VPath.parse(path)
        if (start is not None and start < 0) or (end is not None and end < 0):
            raise ValueError("start and end must be non-negative")
        async with self._op("read", vp):
            guarded, rel = self._route(vp)
            info = await guarded.stat(rel)
            if info.is_dir:
                raise IsADirectoryError_(f"{vp} is a directory; use list to see its entries")
            ranged = start is not None or end is not None
            self._check_whole_read(vp, info, ranged=ranged)
            first = start or 0
            length = None if end is None else max(end - first, 0)
            return await guarded.read_range(rel, first, length)

    async def read_text(
        self,
        path: str | VPath,
        *,
        offset: int = 0,
        limit: int | None = None,
        encoding: str = "utf-8",
    ) -> str:
        """The file as text, or ``limit`` lines starting after ``offset`` lines.

        A line range streams the file in 64 KiB pages and stops once it has the lines, so a
        range of a large file never loads the whole file. Undecodable bytes become U+FFFD.
        """
        vp = VPath.parse(path)
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must be non-negative")
        async with self._op("read", vp):
            guarded, rel = self._route(vp)
            info = await guarded.stat(rel)
            if info.is_dir:
                raise IsADirectoryError_(f"{vp} is a directory; use list to see its entries")
            if offset == 0 and limit is None:
                self._check_whole_read(vp, info, ranged=False)
                return (await guarded.read_range(rel, 0, None)).decode(encoding, "replace")
            return await self._read_lines(guarded, rel, vp, offset, limit, encoding)

    async def _read_lines(
        self,
        guarded: GuardedStore,
        rel: VPath,
        vp: VPath,
        offset: int,
        limit: int | None,
        encoding: str,
    ) -> str:
        import codecs

        decoder = codecs.getincrementaldecoder(encoding)("replace")
        cap = self._shared.policy.limits.max_file_bytes
        skipped = 0
        kept: list[str] = []
        pending = ""
        position = 0
        while limit is None or len(kept) < limit:
            page = await guarded.read_range(rel, position, _LINE_CHUNK)
            position += len(page)
            pending += decoder.decode(page, final=not page)
            lines = pending.split("\n")
            pending = lines.pop()
            for line in lines:
                if skipped < offset:
                    skipped += 1
                elif limit is None or len(kept) < limit:
                    kept.append(line + "\n")
            if len(pending) > cap:
                raise LimitError(f"{vp}: a single line is longer than {cap} bytes; read bytes")
            if not page:
                break
        if pending and skipped >= offset and (limit is None or len(kept) < limit):
            kept.append(pending)
        return "".join(kept)

    def _check_whole_read(self, vp: VPath, info: FileInfo, *, ranged: bool) -> None:
        cap = self._shared.policy.limits.max_file_bytes
        if not ranged and info.size > cap:
            raise LimitError(
                f"{vp} is {info.size} bytes, over the {cap}-byte read limit; "
                "read a range (offset/limit lines or start/end bytes)"
            )

    # -- write -------------------------------------------------------------------------------

    async def write(
        self,
        path: str | VPath,
        content: str | bytes,
        *,
        mode: WriteMode | str = WriteMode.OVERWRITE,
        parents: bool = True,
        backup: bool = False,
        if_version: str | None = None,
    ) -> FileInfo:
        """Create, overwrite or append to a file.

        ``mode="create"`` fails if the file exists; ``if_version`` fails with a conflict when
        the file changed since that version; ``backup=True`` keeps the previous content as
        ``NAME.bak`` beside it.
        """
        vp = VPath.parse(path)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        write_mode = WriteMode(mode)
        async with self._op("write", vp) as op:
            if self._mount_at(vp) is not None or self._shared.mounts.is_virtual_dir(vp):
                raise IsADirectoryError_(f"{vp} is a directory (a mount point)")
            guarded, rel = self._route(vp)
            if backup and write_mode is not WriteMode.CREATE:
                await self._backup(guarded, rel, vp, if_version)
            info = await self._write(guarded, rel, data, write_mode, if_version, parents)
            op.bytes = len(data)
            await self._changed(vp)
            return info.at(vp)

    async def append(
        self, path: str | VPath, content: str | bytes, *, parents: bool = True
    ) -> FileInfo:
        """Add ``content`` to the end of a file (creating it if needed)."""
        return await self.write(path, content, mode=WriteMode.APPEND, parents=parents)

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

    async def _make_dirs(self, guarded: GuardedStore, rel: VPath, *, exist_ok: bool = True) -> None:
        """Create ``rel`` and its parents without stat (works on write-only mounts too)."""
        for depth in range(1, len(rel.parts) + 1):
            try:
                await guarded.mkdir(VPath(rel.parts[:depth]))
            except AlreadyExistsError:
                if depth == len(rel.parts) and not exist_ok:
                    raise

    async def _backup(
        self, guarded: GuardedStore, rel: VPath, vp: VPath, if_version: str | None
    ) -> None:
        try:
            info = await guarded.stat(rel)
        except NotFoundError:
            return
        if if_version is not None and info.version != if_version:
            raise ConflictError(f"{vp} changed since version {if_version}; read it again")
        old = await guarded.read_range(rel, 0, None)
        await guarded.write(rel.parent.child(rel.name + ".bak"), old, mode=WriteMode.OVERWRITE)

    async def edit(
        self,
        path: str | VPath,
        old: str,
        new: str,
        *,
        replace_all: bool = False,
        if_version: str | None = None,
    ) -> EditResult:
        """Replace the exact text ``old`` with ``new``; ``old`` must occur once unless
        ``replace_all``. The write is conditional on the version read, so a concurrent change
        gives a conflict instead of a lost update."""
        vp = VPath.parse(path)
        if not old:
            raise EditError("the text to replace is empty; give the exact text to change")
        async with self._op("edit", vp) as op:
            guarded, rel = self._route(vp)
            info = await guarded.stat(rel)
            if info.is_dir:
                raise IsADirectoryError_(f"{vp} is a directory")
            if if_version is not None and info.version != if_version:
                raise ConflictError(f"{vp} changed since version {if_version}; read it again")
            self._check_whole_read(vp, info, ranged=False)
            text = (await guarded.read_range(rel, 0, None)).decode("utf-8", "replace")
            count = text.count(old)
            shown = old if len(old) <= 60 else old[:57] + "..."
            if count == 0:
                raise EditError(
                    f"{shown!r} not found in {vp}; read the file and copy the exact text"
                )
            if count > 1 and not replace_all:
                raise EditError(
                    f"{shown!r} occurs {count} times in {vp}; add surrounding text to make it "
                    "unique, or pass replace_all=True"
                )
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            data = updated.encode("utf-8")
            written = await guarded.write(
                rel, data, mode=WriteMode.OVERWRITE, if_version=info.version
            )
            op.bytes = len(data)
            await self._changed(vp)
            return EditResult(str(vp), count if replace_all else 1, written.version)

    # -- directories, delete, copy, move -----------------------------------------------------

    async def mkdir(
        self, path: str | VPath, *, parents: bool = True, exist_ok: bool = True
    ) -> None:
        """Create a directory (and its parents unless ``parents=False``)."""
        vp = VPath.parse(path)
        async with self._op("mkdir", vp):
            if self._mount_at(vp) is not None or self._shared.mounts.is_virtual_dir(vp):
                if exist_ok:
                    return
                raise AlreadyExistsError(f"{vp} already exists (a mount point)")
            guarded, rel = self._route(vp)
            if parents:
                await self._make_dirs(guarded, rel, exist_ok=exist_ok)
            else:
                try:
                    await guarded.mkdir(rel)
                except AlreadyExistsError:
                    if not exist_ok:
                        raise

    async def delete(self, path: str | VPath, *, recursive: bool = False) -> None:
        """Delete a file or an empty directory; a whole tree only with ``recursive=True``,
        and then only if every entry in it may be deleted by this principal."""
        vp = VPath.parse(path)
        async with self._op("delete", vp):
            self._refuse_mount_points(vp, "delete")
            guarded, rel = self._route(vp)
            await guarded.delete(rel, recursive=recursive)
            await self._removed(vp)

    def _refuse_mount_points(self, vp: VPath, verb: str) -> None:
        mounts = self._shared.mounts
        if self._mount_at(vp) is not None or mounts.is_virtual_dir(vp):
            raise PolicyDeniedError(f"cannot {verb} {vp}: it is or contains a mount point")

    async def copy(
        self, src: str | VPath, dst: str | VPath, *, overwrite: bool = False
    ) -> FileInfo:
        """Copy a file or a directory tree; never overwrites unless ``overwrite=True``."""
        s, d = VPath.parse(src), VPath.parse(dst)
        async with self._op("copy", s, d) as op:
            info = await self._stat(s)
            if d.is_relative_to(s) and info.is_dir:
                raise NotADirectoryError_(f"cannot copy {s} into itself")
            op.bytes = await self._copy(s, d, info, overwrite=overwrite)
            await self._changed(d)
            return await self._stat(d)

    async def _copy(self, s: VPath, d: VPath, info: FileInfo, *, overwrite: bool) -> int:
        if info.is_file:
            src_store, src_rel = self._route(s)
            data = await src_store.read_range(src_rel, 0, None)
            mode = WriteMode.OVERWRITE if overwrite else WriteMode.CREATE
            dst_store, dst_rel = self._route(d)
            await self._write(dst_store, dst_rel, data, mode, None, parents=True)
            return len(data)
        await self._mkdir_for_copy(d)
        total = 0
        for child in await self._children(s):
            total += await self._copy(
                child.path, d.child(child.path.name), child, overwrite=overwrite
            )
        return total

    async def _mkdir_for_copy(self, d: VPath) -> None:
        if self._mount_at(d) is not None or self._shared.mounts.is_virtual_dir(d):
            return
        guarded, rel = self._route(d)
        await self._make_dirs(guarded, rel)

    async def move(
        self, src: str | VPath, dst: str | VPath, *, overwrite: bool = False
    ) -> FileInfo:
        """Move or rename. Refuses to replace an existing target unless ``overwrite=True``."""
        s, d = VPath.parse(src), VPath.parse(dst)
        async with self._op("move", s, d):
            self._refuse_mount_points(s, "move")
            if self._mount_at(d) is not None or self._shared.mounts.is_virtual_dir(d):
                raise AlreadyExistsError(f"{d} already exists (a mount point)")
            src_store, src_rel = self._route(s)
            dst_store, dst_rel = self._route(d)
            info = await src_store.stat(src_rel)
            if d.is_relative_to(s):
                raise NotADirectoryError_(f"cannot move {s} into itself")
            if overwrite and info.is_file:
                try:
                    existing = await dst_store.stat(dst_rel)
                except NotFoundError:
                    pass
                else:
                    if existing.is_dir:
                        raise IsADirectoryError_(f"{d} is a directory; it is not replaced")
                    await dst_store.delete(dst_rel)
            if src_store is dst_store:
                try:
                    await src_store.rename(src_rel, dst_rel)
                except NotFoundError:
                    await self._make_dirs(dst_store, dst_rel.parent)
                    await src_store.rename(src_rel, dst_rel)
            else:
                await self._move_across(s, d, info, src_store, src_rel, dst_store, dst_rel)
            await self._removed(s)
            await self._changed(d)
            return await self._stat(d)

    async def _move_across(
        self,
        s: VPath,
        d: VPath,
        info: FileInfo,
        src_store: GuardedStore,
        src_rel: VPath,
        dst_store: GuardedStore,
        dst_rel: VPath,
    ) -> None:
        """Copy then delete, after checking up front that the delete will be allowed."""
        src_store._scope(Action.DELETE, src_rel)
        if not self._ctx.allows(Action.DELETE, s):
            raise PolicyDeniedError(f"delete on {s} is not allowed by policy; cannot move it")
        if await dst_store.exists(dst_rel):
            raise AlreadyExistsError(
                f"{d} already exists; pick another name or pass overwrite=True"
            )
        await self._copy(s, d, info, overwrite=False)
        await src_store.delete(src_rel, recursive=info.is_dir)

    # -- listing and search ------------------------------------------------------------------

    def _visible_mount_names(self, vp: VPath) -> set[str]:
        """Names under ``vp`` that lead to a mount the principal may see."""
        names: set[str] = set()
        n = len(vp.parts)
        for mount in self._shared.mounts.mounts:
            below = len(mount.prefix.parts) > n and mount.prefix.parts[:n] == vp.parts
            if below and self._mount_visible(mount):
                names.add(mount.prefix.parts[n])
        return names

    def _mount_visible(self, mount: Mount) -> bool:
        if self._shared.policy.limits.blocked(mount.prefix) is not None:
            return False
        if mount.scope is not mount.scope.WRITE_ONLY and not self._ctx.admits(mount.labels):
            return False
        return any(
            self._ctx.allows(action, mount.prefix)
            for action in (Action.LIST, Action.READ, Action.WRITE)
        )

    async def _children(self, vp: VPath) -> list[FileInfo]:
        """Direct children of a directory, merged across mounts; child mounts shadow store
        entries of the same name and appear exactly once."""
        mounts = self._shared.mounts
        mount_names = self._visible_mount_names(vp)
        all_mount_names = mounts.child_mount_names(vp)
        entries: list[FileInfo] = []
        owner = mounts.find(vp)
        if owner is not None:
            guarded, rel = self._route(vp)
            for info in await guarded.list(rel):
                if info.path.name not in all_mount_names:
                    entries.append(info.at(vp.child(info.path.name)))
        elif not mount_names:
            if mounts.is_virtual_dir(vp):
                raise NotFoundError(f"{vp} not found")
            mounts.resolve(vp)
        entries.extend(FileInfo(vp.child(name), EntryKind.DIRECTORY) for name in mount_names)
        entries.sort(key=lambda i: i.path.parts)
        return entries

    async def list(
        self,
        path: str | VPath = "/",
        *,
        recursive: bool = False,
        depth: int | None = None,
    ) -> list[FileInfo]:
        """Entries under ``path``: direct children, or the whole tree with ``recursive=True``
        (``depth`` levels at most). Mounts below ``path`` appear as directories."""
        vp = VPath.parse(path)
        max_depth = depth if depth is not None else (None if recursive else 1)
        async with self._op("list", vp):
            info = await self._stat(vp)
            if not info.is_dir:
                raise NotADirectoryError_(f"{vp} is a file; use stat or read")
            entries = [entry async for entry in self._walk(vp, max_depth, strict=True)]
            return sorted(entries, key=lambda e: e.path.parts)

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

    async def glob(
        self, pattern: str, *, path: str | VPath = "/", limit: int | None = None
    ) -> builtins.list[FileInfo]:
        """Entries matching a glob (``**/*.md``); relative patterns start at ``path``."""
        base = VPath.parse(path)
        full = pattern if pattern.startswith("/") else f"{str(base).rstrip('/')}/{pattern}"
        compiled = Glob.compile(full)
        async with self._op("glob", base):
            start = compiled.literal_prefix
            try:
                start_info = await self._stat(start)
            except (NotFoundError, ScopeError, NoMountError):
                return []
            if not start_info.is_dir:
                return [start_info] if compiled.matches(start) else []
            found: builtins.list[FileInfo] = []
            async for entry in self._walk_pruned(start, compiled):
                if compiled.matches(entry.path):
                    found.append(entry)
                    if limit is not None and len(found) >= limit:
                        break
            return sorted(found, key=lambda i: i.path.parts)

    async def _walk_pruned(self, root: VPath, compiled: Glob) -> AsyncIterator[FileInfo]:
        stack = [root]
        while stack:
            directory = stack.pop()
            try:
                children = await self._children(directory)
            except (ScopeError, NotFoundError, NotADirectoryError_):
                continue
            for child in children:
                yield child
                if child.is_dir and compiled.could_match_below(child.path):
                    stack.append(child.path)

    async def grep(
        self,
        pattern: str,
        path: str | VPath = "/",
        *,
        regex: bool = False,
        ignore_case: bool = False,
        context: int = 0,
        glob: str | None = None,
        max_per_file: int = 100,
        max_total: int = 1000,
    ) -> GrepResult:
        """Lines matching ``pattern`` (plain text, or an RE2 regular expression with
        ``regex=True``) in the files under ``path``, as ``path:line: text``."""
        vp = VPath.parse(path)
        matcher = compile_matcher(pattern, regex=regex, ignore_case=ignore_case)
        name_glob = Glob.compile(glob if glob.startswith("/") else "/**/" + glob) if glob else None
        context = max(context, 0)
        async with self._op("grep", vp):
            info = await self._stat(vp)
            files = [info] if info.is_file else [e async for e in self._walk(vp, None) if e.is_file]
            matches: list[GrepMatch] = []
            skipped: list[str] = []
            searched = matched_files = total = 0
            truncated = False
            cap = self._shared.policy.limits.max_file_bytes
            for entry in files:
                if name_glob is not None and not name_glob.matches(entry.path):
                    continue
                if entry.size > cap:
                    skipped.append(f"{entry.path}: over the {cap}-byte size limit")
                    continue
                guarded, rel = self._route(entry.path)
                try:
                    data = await guarded.read_range(rel, 0, None)
                except (NotFoundError, ScopeError):
                    continue
                if b"\x00" in data[:_BINARY_SNIFF]:
                    skipped.append(f"{entry.path}: binary")
                    continue
                searched += 1
                lines = data.decode("utf-8", "replace").splitlines()
                hits = [i for i, line in enumerate(lines) if matcher(line)]
                if not hits:
                    continue
                matched_files += 1
                if len(hits) > max_per_file:
                    hits = hits[:max_per_file]
                    truncated = True
                room = max_total - total
                if len(hits) > room:
                    hits = hits[:room]
                    truncated = True
                total += len(hits)
                matches.extend(_with_context(str(entry.path), lines, hits, context))
                if total >= max_total:
                    truncated = truncated or entry is not files[-1]
                    break
            return GrepResult(tuple(matches), searched, matched_files, truncated, tuple(skipped))


def _with_context(path: str, lines: list[str], hits: list[int], context: int) -> list[GrepMatch]:
    hit_set = set(hits)
    shown: list[int] = []
    for i in hits:
        for j in range(max(i - context, 0), min(i + context + 1, len(lines))):
            if not shown or j > shown[-1]:
                shown.append(j)
    return [GrepMatch(path, j + 1, clip(lines[j]), is_context=j not in hit_set) for j in shown]
