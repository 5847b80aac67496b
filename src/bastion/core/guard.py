"""The access guard: wraps a store, has the store's interface, decides every call.

A request is allowed only if the mount's scope allows the action, the policy allows the
principal on the full workspace path, no path segment is blocked, and the document's labels
admit the principal (what it may read, and what it is told: :mod:`bastion.core.visibility`).
What it may not read is *not found*, never listed; a scope refusal is reported plainly. Every
operation is rate-limited and audited once (:mod:`bastion.core.operation`).

The guard is the edge between store paths and workspace paths: a store's errors name store
paths, so every error that leaves the guard is re-worded to name the workspace path asked for.
A failure that could only happen because something hidden is there (a path *below* a hidden
file, a hidden link) is reported as not found too.

The guard runs each call and decides it; the parts it decides with are its own modules: what
the principal may do on a path (:mod:`bastion.core.decisions`), what it is told around entries
it may not see (:mod:`bastion.core.hidden_tree`), and what a sidecar change may do
(:mod:`bastion.core.relabel`, asking the mount's document labels through
:mod:`bastion.core.label_port`)."""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager, suppress
from types import TracebackType

from bastion.core.admission import Admission
from bastion.core.decisions import Decisions
from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    BastionError,
    ConflictError,
    InvalidPathError,
    IsADirectoryError_,
    LabelError,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    UncheckedWriteError,
    UnsupportedFileError,
    translated,
)
from bastion.core.hidden_tree import HiddenTree
from bastion.core.label_port import LabelPort
from bastion.core.listings import Sought
from bastion.core.models import Action, EntryKind, FileInfo, Labels, WriteMode
from bastion.core.mounts import Mount
from bastion.core.operation import GuardContext, Operation, folded
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.core.relabel import SidecarChecks
from bastion.core.sidecars import labelled_file_of, sidecar_of
from bastion.core.visibility import blind_mode, undated

__all__ = ["GuardContext", "GuardedStore", "Operation"]

_FILE, _DIR = EntryKind.FILE, EntryKind.DIRECTORY
_LOOKS = 8
"""How many times a write over a file left unseen looks again when the file changed between
its look and the write (another program replacing it), before it writes as a look-first does."""
_IN_THE_WAY = (AlreadyExistsError, IsADirectoryError_, NotADirectoryError_, UnsupportedFileError)
"""What a write finds in its way: on a blind write, told as a refusal in policy words."""
_MAKES_WHOLE = (WriteMode.OVERWRITE, WriteMode.CREATE)


class GuardedStore(Store):
    """A store seen through the guard, for one mount and one principal."""

    def __init__(
        self, store: Store, mount: Mount, ctx: GuardContext, labels: LabelPort | None = None
    ) -> None:
        """``labels``: the mount's document labels (:mod:`bastion.labels`), which the guard
        asks what a sidecar change does; by default ``store`` itself when it is the label
        port, else none (sidecars are then ordinary files)."""
        self.inner = store
        self.mount = mount
        self.ctx = ctx
        self.kind = store.kind
        if labels is None and isinstance(store, LabelPort):
            labels = store
        self._labelled = store.keeps_labels or labels is not None
        """Whether entries carry labels, so a read is checked on the labels of its bytes."""
        self._d = Decisions(mount, ctx)
        self.hidden = self._d.hidden
        """True when the principal may see nothing of the mount (``core.visibility``): it is
        not there for it."""
        self._prefix = None if self.hidden else str(mount.prefix)
        """What an error leaving this guard names as its mount (never a mount not seen)."""
        self._tree = HiddenTree(store, labels.entries if labels else store.list, self._d)
        self._sidecars = SidecarChecks(store, labels, self._d)
        self._admit = Admission(store, self._d, self._tree, labelled=self._labelled)

    def describe(self) -> str:
        return self.inner.describe()

    def change_mark(self) -> object | None:
        return self.inner.change_mark()

    # -- checks ------------------------------------------------------------------------------

    def _op(
        self, name: str, path: VPath, target: VPath | None = None
    ) -> AbstractContextManager[Operation]:
        """This primitive's operation, or the one in progress that it is folded into; an
        error that leaves it names this mount (:class:`_InMount`)."""
        inner: AbstractContextManager[Operation] | None = folded()
        if inner is None:
            full_target = None if target is None else self._d.full(target)
            inner = self.ctx.operation(name, self._d.full(path), full_target)
        return _InMount(inner, self._prefix)

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        with self._op("stat", path) as op:
            if not self._d.looks():
                self._d.scope(Action.READ, path)
            return undated(await self._admit.stat_visible(path, op))

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
            self._d.scope(Action.READ, path)
            hidden = self._d.why_hidden(path, _FILE, None)
            if hidden is not None:
                raise self._d.hide(path, hidden, op)
            refused: list[BaseException] = []
            admit = check
            if self._labelled:

                def admit(info: FileInfo) -> None:
                    try:
                        if info.labels is not None:
                            why = self._d.why_hidden(path, info.kind, info)
                            if why is not None:
                                raise self._d.hide(path, why, op)
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
                raise await self._tree.failed(exc, path, op) from None
            if info.labels is not None:  # a store that labels without saying so: still checked
                why = self._d.why_hidden(path, info.kind, info)
                if why is not None:
                    raise self._d.hide(path, why, op)
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
            # (a mode given as a plain string is checked by the store's write, as it was)
            peek = if_version is None and mode in _MAKES_WHOLE
            blind, unseen, seen = await self._admit.write(path, len(data), mode, op, peek=peek)
            if blind:
                mode = blind_mode(self._d.full(path), mode, if_version)
            else:
                await self._sidecars.admit(path, data, op, append=mode is WriteMode.APPEND)
            try:
                info = await self._put(path, data, mode, if_version, unseen, seen, op)
            except AccessDeniedError:
                raise  # the admission's refusal of what was there (a store never refuses access)
            except OperationError as exc:
                if blind and isinstance(exc, _IN_THE_WAY):
                    raise self._d.taken(path, Action.WRITE, f"blind write onto {exc}", op) from None
                await self._tree.refuse_onto_hidden(exc, path, op)
                raise await self._tree.failed(exc, path, op, writing=True) from None
            op.bytes += len(data)
            if blind:  # nothing of what was there, nor of the file now, but what was written
                return FileInfo(info.path, _FILE, len(data))
            if info.labels is not None and self._d.why_hidden(path, info.kind, info) is not None:
                # the file is not there for the writer now (a sidecar it may not read made it
                # stricter, a drop box): its labels are not told
                info = FileInfo(info.path, info.kind, info.size, info.mtime, info.version)
            return info

    async def _put(
        self,
        path: VPath,
        data: bytes,
        mode: WriteMode,
        if_version: str | None,
        unseen: bool,
        seen: FileInfo | None,
        op: Operation,
    ) -> FileInfo:
        """The store's write. Where admission left what is at ``path`` unseen (a new name:
        looking would have cost a hop of its own), first as a creation, which changes nothing
        when something is there; then what is there is looked at (and refused when hidden)
        before it is written over. A file looked at (``seen``) is written over only as the
        version looked at: one another program put there since is looked at in turn."""
        if unseen:
            try:
                return await self.inner.write(path, data, mode=WriteMode.CREATE)
            except AlreadyExistsError:
                seen = await self._admit.replacing(path, op)
                if mode is WriteMode.CREATE:
                    raise
            except UncheckedWriteError:  # a disk without locks: written as a look-first write
                unseen, seen = False, None
        if if_version is None and mode is not WriteMode.CREATE and (unseen or seen is not None):
            for _ in range(_LOOKS):
                try:
                    if seen is None:
                        return await self.inner.write(path, data, mode=WriteMode.CREATE)
                    if seen.version is None:
                        break
                    return await self.inner.write(path, data, mode=mode, if_version=seen.version)
                except UncheckedWriteError:
                    break  # a disk without locks: written over as a look-first write does
                except (AlreadyExistsError, ConflictError):
                    seen = await self._admit.replacing(path, op)
        return await self.inner.write(path, data, mode=mode, if_version=if_version)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        with self._op("delete", path) as op:
            info, hidden_inside = await self._admit.removal(path, "delete", op, recursive=recursive)
            await self._sidecars.admit(path, None, op)
            try:
                if hidden_inside:
                    await self._tree.delete_visible(path)
                    return
                await self.inner.delete(path, recursive=recursive and info.is_dir)
            except OperationError as exc:
                raise await self._tree.failed(exc, path, op) from None

    async def list(self, path: VPath) -> list[FileInfo]:
        with self._op("list", path) as op:
            await self._admit.listing(path, op)
            try:
                entries = await self.inner.list(path)
            except OperationError as exc:
                raise await self._tree.failed(exc, path, op) from None
            return [
                undated(e)
                for e in entries
                if self._d.why_hidden(e.path, e.kind, e) is None
                and (not e.is_dir or await self._tree.shown(e.path))
            ]

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        """The guard's listing (:meth:`list`): every entry shown, decided as ever."""
        del sought
        return await self.list(path)

    async def odd_names(self, path: VPath) -> frozenset[str]:
        """The store's odd names in the folder ``path`` (:meth:`Store.odd_names`) that the
        principal may see: checked as a listing, each name as the file it would be."""
        with self._op("list", path) as op:
            await self._admit.listing(path, op)
            try:
                names = await self.inner.odd_names(path)
            except OperationError as exc:
                raise await self._tree.failed(exc, path, op) from None
            shown: set[str] = set()
            for name in names:
                with suppress(InvalidPathError):  # a name no path can hold is never shown
                    if self._d.why_hidden(path.child(name), _FILE, None) is None:
                        shown.add(name)
            return frozenset(shown)

    async def mkdir(self, path: VPath) -> None:
        with self._op("mkdir", path) as op:
            self.check_mkdir(path)
            await self._sidecars.admit_folder(path, op)
            try:
                await self.inner.mkdir(path)
            except OperationError as exc:
                await self._tree.refuse_onto_hidden(exc, path, op)
                blind = self._d.blind(path)
                if isinstance(exc, AlreadyExistsError) and (
                    blind or await self._tree.unshown(path)
                ):
                    return None  # a folder of hidden entries only (any, to a blind writer): made
                if blind and isinstance(exc, NotFoundError) and not path.parent.is_root:
                    await self.mkdir(path.parent)  # its parents too: whether they are there
                    return await self.mkdir(path)  # is not told
                raise await self._tree.failed(exc, path, op, writing=True) from None

    async def rename(self, src: VPath, dst: VPath) -> None:
        with self._op("move", src, dst) as op:
            _, hidden_inside = await self._admit.move(src, dst, op)
            await self._sidecars.admit(src, None, op)
            if labelled_file_of(dst) is not None:
                await self._sidecars.admit(dst, await self.inner.read_range(src), op)
            await self._renamed(src, dst, op, hidden_inside=hidden_inside)

    async def rename_checked(self, src: VPath, dst: VPath) -> None:
        """:meth:`rename` of a file that :meth:`check_move` admitted just before, in the same
        operation (a move, which carries the file's labels in between): the admission is not
        run twice. Only for a file: nothing hidden can be under it."""
        with self._op("move", src, dst) as op:
            await self._renamed(src, dst, op, hidden_inside=False)

    async def _renamed(self, src: VPath, dst: VPath, op: Operation, *, hidden_inside: bool) -> None:
        try:
            if hidden_inside:
                await self._tree.move_visible(src, dst)
                return
            if self._d.blind(dst):  # replaces a file there (checked by Admission.move)
                with suppress(NotFoundError, IsADirectoryError_):
                    await self.inner.delete(dst)
            await self.inner.rename(src, dst)
        except OperationError as exc:
            if isinstance(exc, AlreadyExistsError):
                raise translated(
                    exc, dst, self._d.full(dst), mount=str(self._d.mount.prefix)
                ) from None
            raise await self._tree.failed(exc, dst, op, writing=True, also=(src,)) from None

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
                await self._sidecars.admit(path, head, op)
        try:
            return await self._sidecars.carried(path, labels, head)
        except LabelError as exc:
            with self._op("write", sidecar_of(path)) as op:
                op.refuse(str(exc))
                raise LabelError(f"{self._d.full(path)}: {exc}") from None

    async def drop_sidecar(self, path: VPath) -> None:
        """After the file at ``path`` was deleted or moved away: delete its sidecar, now
        labels of nothing, if it is there. Best effort: a sidecar left behind is an ordinary
        file, and it could only tighten a file later written at ``path``."""
        sidecar = sidecar_of(path)
        if self._admit.absent_now(sidecar):
            return  # the store knows from memory that nothing is there: nothing to drop
        with suppress(OperationError):
            await self.delete(sidecar)

    # -- checks a workspace runs before it changes anything ----------------------------------

    async def check_write(
        self, path: VPath, size: int, mode: WriteMode, data: bytes | None = None
    ) -> None:
        """Refuse now what :meth:`write` of ``size`` bytes would refuse (nothing is written);
        with the ``data`` itself, also what it would refuse as a relabelling (a sidecar)."""
        with self._op("write", path) as op:
            blind, _, _ = await self._admit.write(path, size, mode, op)
            if data is not None and not blind:
                await self._sidecars.admit(path, data, op, append=mode is WriteMode.APPEND)

    def check_mkdir(self, path: VPath) -> None:
        """Refuse now what :meth:`mkdir` would refuse by scope, limits or policy."""
        with self._op("mkdir", path):
            self._d.scope(Action.WRITE, path)
            self._d.writable_target(path, is_file=False)

    async def check_removal(self, path: VPath, verb: str = "delete") -> FileInfo:
        """Refuse now what deleting ``path`` (a whole tree) would refuse; the entry's info."""
        with self._op(verb, path) as op:
            info, _ = await self._admit.removal(path, verb, op, recursive=True)
            await self._sidecars.admit(path, None, op)  # a sidecar's removal relabels its file
            return info

    async def check_move(self, src: VPath, dst: VPath) -> FileInfo:
        """Refuse now what :meth:`rename` would refuse by scope, visibility, limits or policy
        (whether ``dst`` exists is the rename's to say); the source's info."""
        with self._op("move", src, dst) as op:
            info, _ = await self._admit.move(src, dst, op)
            await self._sidecars.admit(src, None, op)  # before a sidecar is carried to ``dst``
            if info.is_file and labelled_file_of(dst) is not None:
                await self._sidecars.admit(dst, await self.inner.read_range(src), op)
            return info

    async def lookup(self, path: VPath) -> FileInfo | None:
        """The entry's info when the principal may see it, else ``None``; a quiet probe."""
        if not self._d.looks():
            return None
        if self.ctx.blocked(self._d.full(path)) is not None:
            return None
        try:
            info = await self.inner.stat(path)
        except OperationError:
            return None
        if self._d.why_hidden(path, info.kind, info) is not None:
            return None
        return None if info.is_dir and await self._tree.unshown(path, info) else info

    # -- derived operations that need a raw view ---------------------------------------------

    def blind(self, path: VPath) -> bool:
        """The principal may write ``path`` but not read it (a write-only mount, a drop box by
        policy): nothing there is told, and its writes are blind (``Admission.write``)."""
        return self._d.blind(path)

    def visible(self, info: FileInfo) -> bool:
        """Whether a store entry may be shown to the principal (used by bulk operations)."""
        return self._d.why_hidden(info.path, info.kind, info) is None


class _InMount:
    """An operation of a mount's guard: every error that leaves it carries the mount's prefix
    as :attr:`~bastion.core.errors.BastionError.mount`, the guard's own refusals (scope,
    policy, limits, a change onto a hidden name) as the store's errors and the hidden answers
    do, so no attribute tells one kind of answer from another (tests/security/
    test_error_attributes_tell_nothing.py)."""

    __slots__ = ("_inner", "_prefix")

    def __init__(self, inner: AbstractContextManager[Operation], prefix: str | None) -> None:
        self._inner = inner
        self._prefix = prefix

    def __enter__(self) -> Operation:
        return self._inner.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        if self._prefix is not None and isinstance(exc, BastionError) and exc.mount is None:
            exc.mount = self._prefix
        return self._inner.__exit__(kind, exc, tb)
