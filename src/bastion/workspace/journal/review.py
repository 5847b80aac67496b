"""ChangeReview and undo, for one principal: what changed, the diff, and taking changes back.

Everything goes through the principal's guard. A change list or a diff shows only the entries
the viewer may read now (the mount visible and readable, the policy allowing ``read``, the
labels the file had before and after admitting the viewer); journal content is never read for
any other entry. Undo, revert and restore touch only those entries, and write through the
guarded stores, so the viewer must also be allowed to write there. Each is refused with a
:class:`ConflictError`, before anything is written, when a file is not what the journal says
the changes left there; each write is conditional on the version just checked, so a writer
that comes in between is a conflict too. Each review action is one audited operation; an undo
is itself journalled (and so can be undone).
"""

from __future__ import annotations

import asyncio
import difflib
from dataclasses import dataclass, replace

from bastion.core.errors import (
    ConfigurationError,
    ConflictError,
    DirectoryNotEmptyError,
    InvalidPathError,
    NotFoundError,
)
from bastion.core.guard import GuardContext, GuardedStore
from bastion.core.models import Action, Labels, WriteMode
from bastion.core.overlay_port import Layered, overlay_below
from bastion.core.paths import VPath
from bastion.core.sidecars import labelled_file_of
from bastion.labels.frontmatter import LABEL_BYTES
from bastion.workspace.indexing import IndexFollower
from bastion.workspace.journal.db import (
    Change,
    Checkpoint,
    Journal,
    State,
    digest,
    labels_from_json,
)
from bastion.workspace.routing import Router
from bastion.workspace.writing import carry_labels, make_dirs, write_file

__all__ = ["ANOTHER_TENANT", "ChangeReview", "Rollback"]

ANOTHER_TENANT = "(another tenant)"
"""Who made a change, as a viewer of another tenant is told it (docs/changes.md)."""

_BINARY_PROBE = 8192


@dataclass(frozen=True, slots=True)
class Rollback:
    """What an undo, a revert or a restore did."""

    changes: tuple[int, ...]
    """The changes taken back."""
    restored: tuple[str, ...]
    """Files written back (their earlier content)."""
    removed: tuple[str, ...]
    """Files and folders removed (they did not exist before)."""


class ChangeReview:
    """The journal as the principal of ``router`` may see and change it."""

    def __init__(
        self,
        router: Router,
        index: IndexFollower,
        journal: Journal | None,
        thread: str | None = None,
    ) -> None:
        self._router = router
        self._ctx: GuardContext = router.ctx
        self._index = index
        self._kept = journal
        self._thread = thread
        """The view's thread: a mount with a layer per thread shows it that layer alone."""

    @property
    def _journal(self) -> Journal:
        if self._kept is None:
            raise ConfigurationError(
                "this workspace keeps no change journal; give it one: a [journal] table in "
                "its workspace file, or Journal(path) in Python (docs/changes.md)"
            )
        return self._kept

    # -- seeing ------------------------------------------------------------------------------

    async def _shown(self, changes: list[Change]) -> list[Change]:
        """``changes`` with only the entries the principal may read, those without any left
        out. An entry is shown when its mount and the policy let the principal read the path,
        and every label set the journal ever recorded for the path or for the contents
        (before and after) admits it, and so do the labels of the file there now."""
        paths = {e.path for c in changes for e in c.entries}
        labelled = {path: _labelled(path) for path in paths}  # a sidecar's file, else None
        asked = paths | {f for f in labelled.values() if f is not None}
        hashes = {h for c in changes for e in c.entries for h in (e.before.hash, e.after.hash)}
        by_path, by_hash = await asyncio.to_thread(
            self._journal.labels_seen, asked, [h for h in hashes if h is not None]
        )
        verdict: dict[str, bool] = {}
        for path in asked:
            verdict[path] = await self._path_visible(path, by_path.get(path, set()))
        for path, file in labelled.items():  # a sidecar is shown as its file is
            if file is not None:
                verdict[path] = verdict[path] and verdict[file]
        admits = self._ctx.admits
        shown = []
        for change in changes:
            entries = tuple(
                e
                for e in change.entries
                if verdict[e.path]
                and (change.thread == self._thread or not self._layered(e.path))
                and all(
                    admits(labels)
                    for h in (e.before.hash, e.after.hash)
                    if h is not None
                    for labels in _parsed(by_hash.get(h, set()))
                )
            )
            if entries:
                seen = {e.path for e in entries}
                path = change.path if change.path in seen else entries[0].path
                target = change.target if change.target in seen else None
                shown.append(replace(change, entries=entries, path=path, target=target))
        return [self._told(change) for change in shown]

    def _told(self, change: Change) -> Change:
        """``change`` as the viewer is told it: who made a change of another tenant (to a
        file both may read) and in which thread is that tenant's, never named."""
        if change.tenant == self._ctx.principal.tenant:
            return change
        return replace(change, principal=ANOTHER_TENANT, tenant=None, thread=None)

    def _own_tenant(self, changes: list[Change], narrowed: bool) -> list[Change]:
        """``changes`` of the viewer's tenant alone when a principal or a thread narrowed
        them: ids and thread names are each tenant's, so another's never match."""
        if not narrowed:
            return changes
        tenant = self._ctx.principal.tenant
        return [c for c in changes if c.tenant == tenant]

    def _layered(self, path: str) -> bool:
        """Whether ``path`` is in a mount with a layer per thread (an overlay mount): the
        same path is another file in each thread's layer, so a change there is the thread's
        own (docs/changes.md, "Overlay mounts")."""
        try:
            guarded, _ = self._router.route(VPath.parse(path))
        except (NotFoundError, InvalidPathError):
            return False
        return isinstance(overlay_below(guarded.mount.store), Layered)

    async def _path_visible(self, path: str, seen: set[str]) -> bool:
        ctx = self._ctx
        try:
            vp = VPath.parse(path)
            guarded, rel = self._router.route(vp)
        except (NotFoundError, InvalidPathError):
            return False
        if not guarded.mount.scope.allows(Action.READ) or ctx.blocked(vp) is not None:
            return False
        if not ctx.allows(Action.READ, vp) or not all(ctx.admits(x) for x in _parsed(seen)):
            return False
        try:  # what is there now: the guard's own verdict on it
            now = await guarded.inner.stat(rel)
        except NotFoundError:
            return True
        return guarded.visible(now)

    async def changes(
        self,
        *,
        thread: str | None = None,
        since: float | None = None,
        principal: str | None = None,
        after: int | None = None,
        limit: int = 1000,
    ) -> list[Change]:
        """The first ``limit`` changes the principal may see, oldest first, after the change
        ``after`` (a page: the next starts after the last id) (see :meth:`Workspace.changes`)."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        with self._ctx.operation("changes", "/"):
            shown: list[Change] = []
            while len(shown) < limit:
                batch = await asyncio.to_thread(
                    self._journal.changes,
                    thread=thread,
                    since=since,
                    principal=principal,
                    after_id=after,
                    limit=limit,
                )
                if not batch:
                    break
                shown += await self._shown(
                    self._own_tenant(batch, principal is not None or thread is not None)
                )
                after = batch[-1].id
            return shown[:limit]

    async def _change(self, change: int) -> Change:
        found = await self._shown(await asyncio.to_thread(self._journal.changes, ids=[change]))
        if not found:
            raise NotFoundError(f"change {change} not found; list changes with changes()")
        return found[0]

    async def diff(self, change: int) -> str:
        """A unified diff, file by file, of what the change did (see :meth:`Workspace.diff`)."""
        with self._ctx.operation("diff", "/"):
            found = await self._change(change)
            net: dict[str, tuple[State, State]] = {}
            for e in found.entries:
                first = net.get(e.path, (e.before, e.after))[0]
                net[e.path] = (first, e.after)
            parts = []
            for path, (before, after) in net.items():
                if before.kind != "file" and after.kind != "file":
                    continue
                old = await self._content(before)
                new = await self._content(after)
                # difflib over whole contents holds the loop: worked out in a thread
                parts.append(await asyncio.to_thread(_unified, path, before, after, old, new))
            return "".join(parts)

    async def _content(self, state: State) -> bytes:
        if state.hash is None:
            return b""
        return await asyncio.to_thread(self._journal.content, state.hash)

    # -- undoing -----------------------------------------------------------------------------

    async def undo(self, change: int) -> Rollback:
        """Take one change back (see :meth:`Workspace.undo`)."""
        with self._ctx.operation("undo", "/"):
            found = await self._change(change)
            return await self._roll_back([found])

    async def undo_last(self, thread: str | None) -> Rollback:
        """Take back the principal's own last change (in ``thread``, when given), if it is not
        an undo already taken back (see :meth:`Workspace.undo_last`). Its own: the same id in
        the same tenant (a principal of another tenant may bear the same id)."""
        me = self._ctx.principal
        with self._ctx.operation("undo", "/"):
            below: int | None = None
            while True:  # the newest first, a page at a time, until one is shown
                page = await asyncio.to_thread(
                    self._journal.changes,
                    principal=me.id,
                    thread=thread,
                    before_id=below,
                    limit=64,
                    newest=True,
                )
                if not page:
                    raise NotFoundError("you have no change to undo")
                mine = await self._shown([c for c in page if c.tenant == me.tenant])
                if mine:
                    return await self._roll_back([mine[-1]])
                below = page[0].id

    async def revert(self, thread: str) -> Rollback:
        """Take back every change of ``thread`` (see :meth:`Workspace.revert`)."""
        with self._ctx.operation("revert", "/"):
            found = await self._shown(
                self._own_tenant(
                    await asyncio.to_thread(self._journal.changes, thread=thread), narrowed=True
                )
            )
            if not found:
                raise NotFoundError(f"no change in thread {thread!r} to revert")
            return await self._roll_back(found)

    # Checkpoints are the tenant's: each tenant names its own (a name another tenant took is
    # free, and never told), kept in the journal under the tenant's key (:func:`_key`).

    async def checkpoint(self, name: str) -> Checkpoint:
        """Name the present point of the journal (see :meth:`Workspace.checkpoint`); a name
        another principal of the tenant gave is theirs (a conflict), the principal's own is
        moved."""
        me = self._ctx.principal
        with self._ctx.operation("checkpoint", "/"):
            if not name or len(name) > 200 or not name.isprintable():
                raise ValueError("a checkpoint name is 1 to 200 printable characters")
            key = _key(me.tenant, name)
            try:
                taken = await asyncio.to_thread(self._journal.checkpoint_named, key)
            except NotFoundError:
                taken = None
            if taken is not None and taken.principal != me.id:
                raise ConflictError(
                    f"checkpoint {name!r} is {taken.principal}'s; pick another name"
                )
            made = await asyncio.to_thread(self._journal.checkpoint, key, me.id)
            return (await self._as_seen([replace(made, name=name)]))[0]

    async def checkpoints(self) -> list[Checkpoint]:
        """The tenant's checkpoints, oldest first."""
        tenant = self._ctx.principal.tenant
        with self._ctx.operation("checkpoints", "/"):
            every = await asyncio.to_thread(self._journal.checkpoints)
            return await self._as_seen(
                [replace(cp, name=name) for cp in every if (name := _name(tenant, cp.name))]
            )

    async def _as_seen(self, cps: list[Checkpoint]) -> list[Checkpoint]:
        """``cps``, each after the last change the principal may see at or before it (the
        journal's own id counts every change, those it may not see too): one walk down the
        journal, newest first, a page at a time."""
        seen: dict[int, int] = {}  # a checkpoint's change id -> the last one shown up to it
        waiting = sorted({cp.change_id for cp in cps}, reverse=True)
        below = waiting[0] + 1 if waiting else 0
        while waiting and below > 1:
            page = await asyncio.to_thread(
                self._journal.changes, before_id=below, limit=256, newest=True
            )
            if not page:
                break
            for shown in reversed(await self._shown(page)):
                while waiting and waiting[0] >= shown.id:
                    seen[waiting.pop(0)] = shown.id
            below = page[0].id
        return [replace(cp, change_id=seen.get(cp.change_id, 0)) for cp in cps]

    async def restore(self, name: str) -> Rollback:
        """Take back every change made after the checkpoint (see :meth:`Workspace.restore`)."""
        with self._ctx.operation("restore", "/"):
            key = _key(self._ctx.principal.tenant, name)
            try:
                cp = await asyncio.to_thread(self._journal.checkpoint_named, key)
            except NotFoundError:  # said with the name asked for, never the key
                raise NotFoundError(
                    f"no checkpoint named {name!r}; list them with checkpoints()"
                ) from None
            found = await self._shown(
                await asyncio.to_thread(self._journal.changes, after_id=cp.change_id)
            )
            if not found:
                return Rollback((), (), ())
            return await self._roll_back(found)

    async def _roll_back(self, changes: list[Change]) -> Rollback:
        """Put every path the changes touched back as it was before the first of them, after
        checking that each is still as the last of them left it."""
        expected: dict[str, tuple[State, int]] = {}
        target: dict[str, State] = {}
        for change in reversed(changes):
            for e in reversed(change.entries):
                expected.setdefault(e.path, (e.after, change.id))
                target[e.path] = e.before
        now = {path: await self._check(path, *seen) for path, seen in expected.items()}
        after = {path: seen[0] for path, seen in expected.items()}
        writes = [p for p, s in target.items() if s.kind == "file" and after[p] != s]
        removals = [p for p, s in target.items() if s.kind is None and not after[p].absent]
        folders = [p for p, s in target.items() if s.kind == "dir" and after[p].absent]
        contents: dict[str, bytes] = {}
        for path in writes:  # every write checked against limits and policy before any is made
            guarded, rel, there, _ = now[path]
            contents[path] = await self._content(target[path])
            mode = WriteMode.OVERWRITE if there else WriteMode.CREATE
            await guarded.check_write(rel, len(contents[path]), mode, contents[path])
            if not _sidecar(path):  # labels that cannot hold both refuse it here
                await guarded.carried_labels(rel, target[path].labels, contents[path][:LABEL_BYTES])
        for path in removals:
            guarded, rel, _, _ = now[path]
            if after[path].kind == "file":
                await guarded.check_removal(rel)
        for path in sorted(folders, key=lambda p: p.count("/")):
            guarded, rel, _, _ = now[path]
            await make_dirs(guarded, rel)
        # labels (sidecars) land before the files they label, and go after them
        # and a file comes back at least as hard to read as it was: the labels the journal
        # recorded for that content travel with it, whatever the viewer sees of its sidecar
        for path in sorted(writes, key=lambda p: not _sidecar(p)):
            guarded, rel, there, version = now[path]
            mode = WriteMode.OVERWRITE if there else WriteMode.CREATE
            if not _sidecar(path):
                head = contents[path][:LABEL_BYTES]
                await carry_labels(guarded, rel, target[path].labels, head)
            await write_file(guarded, rel, contents[path], mode, version, True)
        files = sorted((p for p in removals if after[p].kind == "file"), key=_sidecar)
        dirs = sorted((p for p in removals if after[p].kind == "dir"), key=lambda p: -p.count("/"))
        removed = []
        for path in files + dirs:
            guarded, rel, _, _ = now[path]
            try:
                await guarded.delete(rel)
            except (DirectoryNotEmptyError, NotFoundError):
                continue  # a folder someone has put files in since is left as it is
            removed.append(path)
        for path in writes:
            await self._index.changed(VPath.parse(path))
        for path in removed:
            await self._index.removed(VPath.parse(path))
        return Rollback(tuple(c.id for c in changes), tuple(writes), tuple(removed))

    async def _check(
        self, path: str, state: State, change_id: int
    ) -> tuple[GuardedStore, VPath, bool, str | None]:
        """Raise a conflict unless ``path`` is as ``state`` says the change left it; the
        store, the path in it, whether a file is there and its version."""
        guarded, rel = self._router.route(VPath.parse(path))
        found = await guarded.lookup(rel)
        version = None
        if found is None:
            same = state.absent
        elif found.is_dir:
            same = state.kind == "dir"
        else:
            info, data = await guarded.read_file(rel)
            version = info.version
            same = state.kind == "file" and digest(data) == state.hash
        if not same:
            raise ConflictError(
                f"{path} changed after change {change_id}; review it (diff) and undo by hand",
                path=path,
            )
        return guarded, rel, found is not None and found.is_file, version


_TENANT_MARK = "\x1f"
"""Opens and closes a tenant in a checkpoint's key: no name holds it (names are printable)."""


def _key(tenant: str | None, name: str) -> str:
    """The journal's key of the checkpoint ``name`` of ``tenant`` (a principal of no tenant:
    the name itself)."""
    return name if tenant is None else f"{_TENANT_MARK}{tenant}{_TENANT_MARK}{name}"


def _name(tenant: str | None, key: str) -> str | None:
    """The name of the checkpoint kept as ``key`` when it is ``tenant``'s, else ``None``."""
    if tenant is None:
        return None if key.startswith(_TENANT_MARK) else key
    mark = f"{_TENANT_MARK}{tenant}{_TENANT_MARK}"
    rest = key[len(mark) :]
    return rest if key.startswith(mark) and rest and _TENANT_MARK not in rest else None


def _labelled(path: str) -> str | None:
    """The file the sidecar ``path`` labels, else ``None``."""
    try:
        file = labelled_file_of(VPath.parse(path))
    except InvalidPathError:
        return None
    return None if file is None else str(file)


def _sidecar(path: str) -> bool:
    return labelled_file_of(VPath.parse(path)) is not None


def _parsed(seen: set[str]) -> list[Labels]:
    return [labels for raw in seen if (labels := labels_from_json(raw)) is not None]


def _unified(path: str, before: State, after: State, old: bytes, new: bytes) -> str:
    a = "/dev/null" if before.kind != "file" else f"a{path}"
    b = "/dev/null" if after.kind != "file" else f"b{path}"
    if b"\0" in old[:_BINARY_PROBE] or b"\0" in new[:_BINARY_PROBE]:
        return f"Binary files {a} and {b} differ\n"
    lines = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(keepends=True),
        new.decode("utf-8", "replace").splitlines(keepends=True),
        a,
        b,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
