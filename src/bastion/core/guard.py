"""The access guard: wraps a store, has the store's interface, decides every call.

A request is allowed only if the mount's scope allows the action, the policy allows the
principal on the full workspace path, no path segment is blocked, and the document's labels
admit the principal (what it may read, and what it is told: :mod:`bastion.core.visibility`).
What it may not read is *not found*, never listed; a scope refusal is reported plainly. Every
operation is rate-limited and audited once (:mod:`bastion.core.operation`).

The guard is the edge between store paths and workspace paths: a store's errors name store
paths, so every error that leaves the guard is re-worded to name the workspace path asked for.
A failure that could only happen because something hidden is there (a path *below* a hidden
file, a hidden link) is reported as not found too."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager, suppress

from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    InvalidPathError,
    IsADirectoryError_,
    LabelError,
    LimitError,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    ScopeError,
    UnsupportedFileError,
    reworded,
)
from bastion.core.hidden_tree import (
    delete_visible,
    file_above,
    move_visible,
    shown_dir,
    shown_paths,
    unshown_folder,
)
from bastion.core.models import Action, EntryKind, FileInfo, Labels, WriteMode
from bastion.core.mounts import Mount
from bastion.core.operation import GuardContext, Operation, current_operation, folded
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.core.sidecars import joined, labelled_file_of, sidecar_of, sidecar_text, tightens
from bastion.core.visibility import (
    LABELS_HIDE,
    absent,
    blind_mode,
    mount_seen,
    refused,
    ruled_out,
    undated,
    why_hidden,
)

__all__ = ["GuardContext", "GuardedStore", "Operation"]

_FILE, _DIR = EntryKind.FILE, EntryKind.DIRECTORY
_CACHE_LIMIT = 4096
_UNSHOWN = "a folder that holds nothing the principal may see"
_IN_THE_WAY = (AlreadyExistsError, IsADirectoryError_, NotADirectoryError_, UnsupportedFileError)
"""What a write finds in its way: on a blind write, told as a refusal in policy words."""


class GuardedStore(Store):
    """A store seen through the guard, for one mount and one principal."""

    def __init__(self, store: Store, mount: Mount, ctx: GuardContext) -> None:
        self.inner = store
        self.mount = mount
        self.ctx = ctx
        self.kind = store.kind
        self._prefix = mount.prefix.parts
        self._allowed = frozenset(action for action in Action if mount.scope.allows(action))
        self._keeps_labels = bool(getattr(store, "keeps_labels", False))
        self.hidden = not mount_seen(ctx, mount)
        """True when the principal may see nothing of the mount (``core.visibility``): it is
        not there for it."""
        self._seen: dict[tuple[bool, tuple[str, ...]], tuple[VPath, str | None]] = {}
        """Blocked-segment and policy answers per (is directory, store path): pure functions
        of the principal and the path, so each is worked out once."""

    def describe(self) -> str:
        return self.inner.describe()

    def change_mark(self) -> object | None:
        return self.inner.change_mark()

    # -- checks ------------------------------------------------------------------------------

    def _full(self, path: VPath) -> VPath:
        return VPath(self._prefix + path.parts)

    def _op(
        self, name: str, path: VPath, target: VPath | None = None
    ) -> AbstractContextManager[Operation]:
        """This primitive's operation, or the one in progress that it is folded into."""
        nested = folded()
        if nested is not None:
            return nested
        full_target = None if target is None else self._full(target)
        return self.ctx.operation(name, self._full(path), full_target)

    def _scope(self, action: Action, path: VPath) -> None:
        if action not in self._allowed:
            scope = self.mount.scope
            kind = scope.value.replace("_", "-")
            raise ScopeError(
                f"{self._full(path)}: mount {self.mount.prefix} is {kind}; "
                f"{action.value} is not allowed there"
            )

    def _visibility(self, path: VPath, kind: EntryKind | None, info: FileInfo | None) -> str | None:
        """Why ``path`` is hidden from the principal, or ``None`` when it is visible: the one
        answer (``core.visibility.why_hidden``), its path part remembered per path."""
        key = (kind is _DIR, path.parts)
        try:
            full, ruled = self._seen[key]
        except KeyError:
            full = self._full(path)
            ruled = ruled_out(self.ctx, full, kind)
            if len(self._seen) >= _CACHE_LIMIT:
                self._seen.clear()
            self._seen[key] = (full, ruled)
        labels = None if info is None else info.labels
        return why_hidden(self.ctx, self.mount, full, kind, labels, ruled=ruled)

    def blind(self, path: VPath) -> bool:
        """The principal may write ``path`` but not read it (a write-only mount, a drop box by
        policy): nothing there is told, and its writes are blind (``_admit_write``)."""
        scope = self.mount.scope
        return not scope.allows(Action.READ) or not self.ctx.allows(Action.READ, self._full(path))

    def _hide(self, path: VPath, why: str, op: Operation | None = None) -> NotFoundError:
        (op or current_operation()).refuse(f"hidden: {why}")
        return absent(self._full(path))

    def _policy(self, action: Action, path: VPath) -> None:
        full = self._full(path)
        decision = self.ctx.decide(action, full)
        if not decision.allowed:
            current_operation().refuse(decision.reason)
            raise refused(action, full, decision.public_reason)

    def _writable_target(self, path: VPath, *, is_file: bool) -> None:
        full = self._full(path)
        limits = self.ctx.policy.limits
        blocked = self.ctx.blocked(full)
        if blocked is not None:
            current_operation().refuse(f"blocked segment {blocked!r}")
            raise LimitError(f"{full}: the name {blocked!r} is blocked by policy; use another path")
        if self.hidden:
            # Writing into a mount the principal may not see would reveal (and clobber)
            # documents it may not read: the mount is not there for this principal.
            raise self._hide(path, f"mount {self.mount.prefix}: nothing there is seen")
        if is_file and not limits.extension_allowed(full):
            allowed = ", ".join(sorted(e or "(none)" for e in limits.allowed_extensions or ()))
            current_operation().refuse("extension not allowed")
            raise LimitError(
                f"{full}: extension {full.suffix or '(none)'} not allowed; use {allowed}"
            )
        self._policy(Action.WRITE, path)

    async def _check_tree(self, path: VPath, verb: str) -> bool:
        """Refuse when an entry under ``path`` that the principal sees may not be deleted;
        ``True`` when hidden entries are under it. Those are not there for the principal: they
        are neither told nor touched (the folder stays, holding only them: it is not shown)."""
        hidden_inside = False
        async for info in self.inner.walk(path):
            if self._visibility(info.path, info.kind, info) is not None:
                hidden_inside = True
                continue
            if self.ctx.allows(Action.DELETE, self._full(info.path)):
                continue
            if info.is_dir and await self._unshown(info.path, info):
                hidden_inside = True  # a folder of hidden entries only: not there either
                continue
            current_operation().refuse(f"protected descendant {self._full(info.path)}")
            raise PolicyDeniedError(
                f"cannot {verb} {self._full(path)}: it contains entries you may not {verb}"
            )
        return hidden_inside

    async def _unshown(self, path: VPath, info: FileInfo | None = None) -> str | None:
        """Why the folder at ``path`` is not there: it holds only hidden entries; else None."""
        return _UNSHOWN if await unshown_folder(self.inner, path, self._sees, info) else None

    async def _hidden_above(self, path: VPath) -> str | None:
        """Why the first non-directory above ``path`` is hidden, if there is one and it is."""
        found = await file_above(self.inner, path)
        return None if found is None else self._visibility(found[0], _FILE, found[1])

    def _sees(self, info: FileInfo) -> bool:
        """Whether the principal may see this store entry."""
        return self._visibility(info.path, info.kind, info) is None

    def _taken(self, path: VPath, action: Action, why: str, op: Operation) -> PolicyDeniedError:
        """The refusal of a change onto an entry the principal may not see: worded as a policy
        refusal, as it would be for a name the policy reserves, so it tells nothing of what is
        there (docs/security.md, "writes onto hidden names")."""
        op.refuse(f"hidden: {why}")
        return refused(action, self._full(path))

    async def _stat_visible(self, path: VPath, op: Operation) -> FileInfo:
        blocked = self.ctx.blocked(self._full(path))
        if blocked is not None:
            raise self._hide(path, f"blocked segment {blocked!r}", op)
        try:
            info = await self.inner.stat(path)
        except OperationError as exc:
            raise await self._failed(exc, path, op) from None
        hidden = self._visibility(path, info.kind, info)
        if hidden is None and info.is_dir:
            hidden = await self._unshown(path, info)
        if hidden is not None:
            raise self._hide(path, hidden, op)
        return info

    # -- store errors, in workspace terms ----------------------------------------------------

    async def _failed(
        self,
        exc: OperationError,
        path: VPath,
        op: Operation,
        *,
        writing: bool = False,
        also: tuple[VPath, ...] = (),
    ) -> OperationError:
        """The error to raise for a store failure on ``path`` (re-raise it ``from None``: the
        store's own message names store paths). ``also``: the other paths of the call (a
        move's source), which the message may name too."""
        if isinstance(exc, NotADirectoryError_ | IsADirectoryError_ | UnsupportedFileError):
            # "is a file", "is a directory", "is a link" say something is there: if that
            # something is hidden, the answer is the plain not found.
            why = self._visibility(path, _FILE, None) or self._visibility(path, _DIR, None)
            if why is None:
                why = await self._hidden_above(path)
            if why is None and isinstance(exc, IsADirectoryError_):
                why = await self._unshown(path)
            if why is not None:
                return self._hide(path, why, op)
        full = self._full(path)
        if isinstance(exc, NotFoundError):
            if writing:
                return NotFoundError(f"parent directory {full.parent} does not exist")
            return NotFoundError(f"{full} not found")
        shown = shown_paths(
            (path, *also), self._full, lambda p: not self._visibility(p, _DIR, None)
        )
        return reworded(exc, path, full, also=shown)

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        with self._op("stat", path) as op:
            if not (self.mount.scope.allows(Action.READ) or self.mount.scope.allows(Action.LIST)):
                self._scope(Action.READ, path)
            return undated(await self._stat_visible(path, op))

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        # the labels checked are those of the bytes read (a stat, then a read, would let a
        # change in between be read under the labels of the version before it)
        return (await self.read_file(path, offset, length))[1]

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        with self._op("read", path) as op:
            self._scope(Action.READ, path)
            hidden = self._visibility(path, _FILE, None)
            if hidden is not None:
                raise self._hide(path, hidden, op)
            refused: list[BaseException] = []
            admit = check
            if self._keeps_labels:

                def admit(info: FileInfo) -> None:
                    try:
                        if info.labels is not None:
                            why = self._visibility(path, info.kind, info)
                            if why is not None:
                                raise self._hide(path, why, op)
                        if check is not None:
                            check(info)
                    except BaseException as exc:
                        refused.append(exc)
                        raise

            try:
                info, data = await self.inner.read_file(path, offset, length, check=admit)
            except AccessDeniedError:
                raise  # the check's refusal (a store never refuses access itself)
            except OperationError as exc:
                if refused and exc is refused[0]:
                    raise
                raise await self._failed(exc, path, op) from None
            if info.labels is not None:  # a store that labels without saying so: still checked
                why = self._visibility(path, info.kind, info)
                if why is not None:
                    raise self._hide(path, why, op)
            op.bytes += len(data)
            return info, data

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        with self._op("write", path) as op:
            blind = await self._admit_write(path, len(data), mode, op)
            if blind:
                mode = blind_mode(self._full(path), mode, if_version)
            else:
                await self._admit_relabel(path, data, op, append=mode is WriteMode.APPEND)
            try:
                info = await self.inner.write(path, data, mode=mode, if_version=if_version)
            except OperationError as exc:
                if blind and isinstance(exc, _IN_THE_WAY):
                    raise self._taken(path, Action.WRITE, f"blind write onto {exc}", op) from None
                await self._refuse_onto_hidden(exc, path, op)
                raise await self._failed(exc, path, op, writing=True) from None
            op.bytes += len(data)
            if blind:  # nothing of what was there, nor of the file now, but what was written
                return FileInfo(info.path, _FILE, len(data))
            if info.labels is not None and self._visibility(path, info.kind, info) is not None:
                # the file is not there for the writer now (a sidecar it may not read made it
                # stricter, a drop box): its labels are not told
                info = FileInfo(info.path, info.kind, info.size, info.mtime, info.version)
            return info

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        with self._op("delete", path) as op:
            info, hidden_inside = await self._admit_removal(path, "delete", op, recursive=recursive)
            await self._admit_relabel(path, None, op)
            try:
                if hidden_inside:
                    await delete_visible(self.inner, path, self._sees)
                    return
                await self.inner.delete(path, recursive=recursive and info.is_dir)
            except OperationError as exc:
                raise await self._failed(exc, path, op) from None

    async def list(self, path: VPath) -> list[FileInfo]:
        with self._op("list", path) as op:
            await self._admit_listing(path, op)
            try:
                entries = await self.inner.list(path)
            except OperationError as exc:
                raise await self._failed(exc, path, op) from None
            return [
                undated(e)
                for e in entries
                if self._visibility(e.path, e.kind, e) is None
                and (not e.is_dir or await shown_dir(self.inner, e.path, self._sees))
            ]

    async def entries(self, path: VPath) -> builtins.list[FileInfo]:
        return await self.list(path)  # what list shows: never an entry it has not checked

    async def _admit_listing(self, path: VPath, op: Operation) -> None:
        self._scope(Action.LIST, path)
        if not path.is_root:
            await self._stat_visible(path, op)
        else:
            hidden = self._visibility(path, _DIR, None)
            if hidden is not None:
                raise self._hide(path, hidden, op)

    async def odd_names(self, path: VPath) -> frozenset[str]:
        """The store's odd names in the folder ``path`` (:meth:`Store.odd_names`) that the
        principal may see: checked as a listing, each name as the file it would be."""
        with self._op("list", path) as op:
            await self._admit_listing(path, op)
            try:
                names = await self.inner.odd_names(path)
            except OperationError as exc:
                raise await self._failed(exc, path, op) from None
            shown: set[str] = set()
            for name in names:
                with suppress(InvalidPathError):  # a name no path can hold is never shown
                    if self._visibility(path.child(name), _FILE, None) is None:
                        shown.add(name)
            return frozenset(shown)

    async def relabelling(self, path: VPath, data: bytes | None) -> tuple[Labels, Labels] | None:
        """The store's answer (:meth:`Store.relabelling`) when the principal may see the file
        the sidecar ``path`` describes, else ``None``, as for a sidecar of no file: the labels
        of a file the principal may not see are not told."""
        with self._op("stat", path) as op:
            if not (self.mount.scope.allows(Action.READ) or self.mount.scope.allows(Action.LIST)):
                self._scope(Action.READ, path)
            target = labelled_file_of(path)
            if target is None or self._visibility(target, _FILE, None) is not None:
                return None
            try:
                pair = await self.inner.relabelling(path, data)
            except OperationError as exc:
                raise await self._failed(exc, path, op) from None
            if pair is None or not self.ctx.admits(pair[0]):
                return None
            return pair

    async def prospective(self, path: VPath, data: bytes) -> Labels | None:
        """The store's answer (:meth:`Store.prospective`) when the principal may see ``path``
        and what is there now, else ``None``: what labels a hidden file (or its sidecar)
        carries is not told."""
        with self._op("stat", path) as op:
            if not (self.mount.scope.allows(Action.READ) or self.mount.scope.allows(Action.LIST)):
                self._scope(Action.READ, path)
            if self._visibility(path, _FILE, None) is not None:
                return None
            try:
                present: FileInfo | None = await self.inner.stat(path)
            except OperationError:
                present = None  # nothing there (or nothing servable): the sidecar decides
            if present is not None and self._visibility(path, present.kind, present) is not None:
                return None
            try:
                return await self.inner.prospective(path, data)
            except OperationError as exc:
                raise await self._failed(exc, path, op) from None

    async def mkdir(self, path: VPath) -> None:
        with self._op("mkdir", path) as op:
            self.check_mkdir(path)
            await self._admit_sidecar_folder(path, op)
            try:
                await self.inner.mkdir(path)
            except OperationError as exc:
                await self._refuse_onto_hidden(exc, path, op)
                blind = self.blind(path)
                if isinstance(exc, AlreadyExistsError) and (blind or await self._unshown(path)):
                    return None  # a folder of hidden entries only (any, to a blind writer): made
                if blind and isinstance(exc, NotFoundError) and not path.parent.is_root:
                    await self.mkdir(path.parent)  # its parents too: whether they are there
                    return await self.mkdir(path)  # is not told
                raise await self._failed(exc, path, op, writing=True) from None

    async def rename(self, src: VPath, dst: VPath) -> None:
        with self._op("move", src, dst) as op:
            _, hidden_inside = await self._admit_move(src, dst, op)
            await self._admit_relabel(src, None, op)
            if labelled_file_of(dst) is not None:
                await self._admit_relabel(dst, await self.inner.read_range(src), op)
            try:
                if hidden_inside:
                    await move_visible(self.inner, src, dst, self._sees)
                    return
                if self.blind(dst):  # replaces a file there (checked by _admit_move)
                    with suppress(NotFoundError, IsADirectoryError_):
                        await self.inner.delete(dst)
                await self.inner.rename(src, dst)
            except OperationError as exc:
                if isinstance(exc, AlreadyExistsError):
                    raise reworded(exc, dst, self._full(dst)) from None
                raise await self._failed(exc, dst, op, writing=True, also=(src,)) from None

    # -- labels that travel with a file ------------------------------------------------------

    async def carried_labels(self, path: VPath, labels: Labels | None, head: bytes) -> bytes | None:
        """Before a file with ``labels`` lands at ``path`` (a copy, a move, a backup): where
        the file would be easier to read there than it is now (its sidecar stays behind; the
        mount is less strict), the sidecar to write at ``path`` first, holding the tightest of
        both; ``None`` when none is needed. Written through this guard, it is a relabelling
        like any other (only ever tightening). ``head``: the file's first ``LABEL_BYTES``
        bytes (``bastion.labels.frontmatter``)."""
        if labels is None or labels.undetermined:
            return None
        if labelled_file_of(path) is not None:  # refuse a relabelling before a file is left
            with self._op("write", path) as op:
                await self._admit_relabel(path, head, op)
        order = self.ctx.policy.classifications
        there = await self.inner.prospective(path, head)
        if there is None or tightens(labels, there, order):
            return None
        try:
            return sidecar_text(joined(labels, there, order))
        except LabelError as exc:
            with self._op("write", sidecar_of(path)) as op:
                op.refuse(str(exc))
                raise LabelError(f"{self._full(path)}: {exc}") from None

    async def drop_sidecar(self, path: VPath) -> None:
        """After the file at ``path`` was deleted or moved away: delete its sidecar, now
        labels of nothing, if it is there. Best effort: a sidecar left behind is an ordinary
        file, and it could only tighten a file later written at ``path``."""
        with suppress(OperationError):
            await self.delete(sidecar_of(path))

    # -- checks a workspace runs before it changes anything ----------------------------------

    async def check_write(self, path: VPath, size: int, mode: WriteMode) -> None:
        """Refuse now what :meth:`write` of ``size`` bytes would refuse (nothing is written)."""
        with self._op("write", path) as op:
            await self._admit_write(path, size, mode, op)

    def check_mkdir(self, path: VPath) -> None:
        """Refuse now what :meth:`mkdir` would refuse by scope, limits or policy."""
        with self._op("mkdir", path):
            self._scope(Action.WRITE, path)
            self._writable_target(path, is_file=False)

    async def check_removal(self, path: VPath, verb: str = "delete") -> FileInfo:
        """Refuse now what deleting ``path`` (a whole tree) would refuse; the entry's info."""
        with self._op(verb, path) as op:
            info, _ = await self._admit_removal(path, verb, op, recursive=True)
            await self._admit_relabel(path, None, op)  # a sidecar's removal relabels its file
            return info

    async def check_move(self, src: VPath, dst: VPath) -> FileInfo:
        """Refuse now what :meth:`rename` would refuse by scope, visibility, limits or policy
        (whether ``dst`` exists is the rename's to say); the source's info."""
        with self._op("move", src, dst) as op:
            info, _ = await self._admit_move(src, dst, op)
            await self._admit_relabel(src, None, op)  # before a sidecar is carried to ``dst``
            if info.is_file and labelled_file_of(dst) is not None:
                await self._admit_relabel(dst, await self.inner.read_range(src), op)
            return info

    async def lookup(self, path: VPath) -> FileInfo | None:
        """The entry's info when the principal may see it, else ``None``; a quiet probe."""
        scope = self.mount.scope
        if not (scope.allows(Action.READ) or scope.allows(Action.LIST)):
            return None
        if self.ctx.blocked(self._full(path)) is not None:
            return None
        try:
            info = await self.inner.stat(path)
        except OperationError:
            return None
        if self._visibility(path, info.kind, info) is not None:
            return None
        return None if info.is_dir and await self._unshown(path, info) else info

    async def _admit_relabel(
        self, path: VPath, data: bytes | None, op: Operation, *, append: bool = False
    ) -> None:
        """A change of the sidecar ``path`` relabels the file it describes (when that file
        exists): it needs the file to be visible and writable, and the ``label`` permission
        unless the change only tightens the file's labels. ``data`` is the sidecar's new
        content (``None``: it goes away)."""
        target = labelled_file_of(path)
        if target is None:
            return
        if append and data is not None:
            with suppress(OperationError):  # no sidecar yet: the appended bytes are all of it
                data = await self.inner.read_range(path) + data
        pair = await self.inner.relabelling(path, data)
        if pair is None:
            return  # the file is not there: the sidecar is an ordinary file
        before, after = pair
        why = self._visibility(target, _FILE, None) or (
            None if self.ctx.admits(before) else LABELS_HIDE
        )
        if why is not None:
            raise self._hide(path, why, op)
        full = self._full(target)
        self._policy(Action.WRITE, target)
        if after.undetermined:
            op.refuse(f"unreadable labels: {after.undetermined}")
            raise LabelError(
                f"{self._full(path)}: labels could not be read ({after.undetermined}); "
                "fix the sidecar and write again"
            )
        if tightens(before, after, self.ctx.policy.classifications):
            return
        if not self.ctx.allows(Action.LABEL, full):
            op.refuse(f"relabel of {full} loosens its labels without the label permission")
            raise PolicyDeniedError(
                f"{self._full(path)} relabels {full} and would loosen its labels; that needs "
                "the label permission (a sidecar change without it may only tighten them)"
            )

    async def _refuse_onto_hidden(self, exc: OperationError, path: VPath, op: Operation) -> None:
        """A change that failed because a file the principal may not see is at ``path`` (a
        folder made over it) or above it (a write below it) is refused in the words of a
        policy refusal, as a write onto a hidden name is (``_taken``): "not found" or "already
        exists" would tell that something is there."""
        why = None
        if isinstance(exc, NotADirectoryError_):
            why = await self._hidden_above(path)
        elif isinstance(exc, IsADirectoryError_):  # a file written over a folder not shown
            why = await self._unshown(path)
        elif isinstance(exc, AlreadyExistsError):
            with suppress(OperationError):
                there = await self.inner.stat(path)
                if not there.is_dir:
                    why = self._visibility(path, there.kind, there)
        if why is not None:
            raise self._taken(path, Action.WRITE, why, op)

    async def _admit_sidecar_folder(self, path: VPath, op: Operation) -> None:
        """A folder at the sidecar name of an existing file would leave that file's labels
        undetermined, hiding it from everybody: refused like a write whose labels could not be
        read back (and, when the file is hidden, as a write of its sidecar is: not found)."""
        target = labelled_file_of(path)
        if target is None:
            return
        pair = await self.inner.relabelling(path, None)
        if pair is None:
            return  # no such file: an ordinary folder name
        why = self._visibility(target, _FILE, None) or (
            None if self.ctx.admits(pair[0]) else LABELS_HIDE
        )
        if why is not None:
            raise self._hide(path, why, op)
        op.refuse(f"a folder at the sidecar name of {self._full(target)}")
        raise LabelError(
            f"{self._full(path)}: a folder there would make the labels of {self._full(target)} "
            "unreadable; use another name"
        )

    async def _admit_move(self, src: VPath, dst: VPath, op: Operation) -> tuple[FileInfo, bool]:
        found = await self._admit_removal(src, "move", op, recursive=True)
        self._writable_target(dst, is_file=found[0].is_file)
        try:
            there = await self.inner.stat(dst)
        except OperationError as exc:
            await self._refuse_onto_hidden(exc, dst, op)
            return found  # missing or in the way: the rename says so
        if there.is_file and found[0].is_file and self.blind(dst):
            return found  # a file moved blind replaces a file there, as a blind write does
        why = self._visibility(dst, there.kind, there)
        if why is None and there.is_dir:  # a folder of hidden entries only: not moved over
            why = await self._unshown(dst, there)
        if why is not None:
            raise self._taken(dst, Action.WRITE, why, op)
        return found

    async def _admit_write(self, path: VPath, size: int, mode: WriteMode, op: Operation) -> bool:
        """Refuse what a write of ``size`` bytes would refuse; whether it is blind (the
        principal may not read ``path``: a write-only mount, a drop box by policy). A blind
        write is told nothing of what is there (docs/policy.md, "Blind writes"): nothing is
        looked at, and only the bytes written count against the size limit."""
        self._scope(Action.WRITE, path)
        self._writable_target(path, is_file=True)
        blind = self.blind(path)
        may_read = not blind and self._visibility(path, _FILE, None) is None
        existing: FileInfo | None = None
        if (mode is WriteMode.APPEND and may_read) or (self._keeps_labels and not blind):
            try:
                existing = await self.inner.stat(path)
            except OperationError:
                existing = None  # missing, or in the way: the write itself says so
        # A file labelled above a writer who may read the path is not there for it, so it
        # can be neither seen nor clobbered.
        if (
            existing is not None
            and existing.labels is not None
            and not self.ctx.admits(existing.labels)
        ):
            if labelled_file_of(path) is not None:
                # the sidecar of a hidden file: not found, whether it has a sidecar yet or not
                raise self._hide(path, "sidecar of a hidden file", op)
            raise self._taken(path, Action.WRITE, LABELS_HIDE, op)
        total = size
        if mode is WriteMode.APPEND and may_read and existing is not None:
            # Only a file the principal may read counts with its current size: a refusal
            # must not tell the size of a file it may not read (a drop box).
            total += existing.size
        limit = self.ctx.policy.limits.max_file_bytes
        if total > limit:
            op.refuse(f"size {total} over limit {limit}")
            raise LimitError(
                f"{self._full(path)}: {total} bytes is over the {limit}-byte file limit; "
                "write a smaller file"
            )
        return blind

    async def _admit_removal(
        self, path: VPath, verb: str, op: Operation, *, recursive: bool
    ) -> tuple[FileInfo, bool]:
        """The entry's info, and whether hidden entries are under it (they stay)."""
        self._scope(Action.DELETE, path)
        if path.is_root:
            op.refuse(f"{verb} of a mount root")
            raise PolicyDeniedError(f"{self.mount.prefix} is a mount point and cannot be {verb}d")
        info = await self._stat_visible(path, op)
        self._policy(Action.DELETE, path)
        # (a folder of hidden entries only is not there for the principal: _stat_visible)
        hidden_inside = recursive and info.is_dir and await self._check_tree(path, verb)
        return info, hidden_inside

    # -- derived operations that need a raw view ---------------------------------------------

    def visible(self, info: FileInfo) -> bool:
        """Whether a store entry may be shown to the principal (used by bulk operations)."""
        return self._visibility(info.path, info.kind, info) is None
