"""The one hook on the write path: a store wrapper that journals every change below the guard.

Every front end (the library, the agent tools, the sandbox's write-back, HTTP, the CLI) writes
through :class:`~bastion.workspace.workspace.Workspace`, whose guarded stores call the mount's
store; the workspace wraps each mount's store in :class:`JournalledStore`, so a ``write``,
``delete``, ``rename`` or ``mkdir`` that reaches a store is journalled, whoever asked. The
store calls one workspace operation makes (a move's sidecar, then the file; a copy's files)
form one change, with the operation's principal and the thread of its workspace view.

The record is written before the store is called: a journal that cannot be written raises
:class:`~bastion.workspace.journal.db.JournalError` and the store is never touched. A store
call that then fails takes its entries back out of the journal.

An overwrite records what it replaces without reading it when the file is still at the version
this store's last write of it returned: a version changes whenever the content does (the
promise ``if_version`` rests on), so the content is the one that write recorded, already in the
journal. Otherwise (another writer, an append, nothing remembered) the file is read.
"""

from __future__ import annotations

import asyncio
import builtins
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from bastion.core.errors import IsADirectoryError_, NotFoundError
from bastion.core.label_port import LabelPort
from bastion.core.listings import Sought
from bastion.core.memo import Memo
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.offload import COMMIT_GATE
from bastion.core.operation import GuardContext, Operation, operation_in_progress
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.labels.frontmatter import LABEL_BYTES
from bastion.workspace.journal.db import ABSENT, Journal, State, digest
from bastion.workspace.journal.gate import Head, JournalRetry, RecordGate

__all__ = ["JournalledStore", "Threads"]

T = TypeVar("T")

_OPEN_CHANGES = 256
"""Operations remembered with the change they are recording into."""
_WRITTEN = 4096
"""Files remembered with the version and content hash of this store's last write of them."""


class _Unchanged(Exception):
    """The file is at the version this store last wrote: its state, without its bytes."""

    def __init__(self, state: State) -> None:
        super().__init__()
        self.state = state


class Threads:
    """Which thread (or session) each workspace view acts in, by its guard context; and the
    change each operation in progress is recording into. Shared by a workspace's mounts."""

    def __init__(self) -> None:
        self._threads: weakref.WeakKeyDictionary[GuardContext, str] = weakref.WeakKeyDictionary()
        self._open: OrderedDict[int, tuple[Operation, int]] = OrderedDict()

    def bind(self, ctx: GuardContext, thread: str | None) -> None:
        if thread is None:
            self._threads.pop(ctx, None)
        else:
            self._threads[ctx] = thread

    def thread_of(self, ctx: GuardContext) -> str | None:
        return self._threads.get(ctx)

    def change_of(self, op: Operation) -> int | None:
        found = self._open.get(id(op))
        return found[1] if found is not None and found[0] is op else None

    def opened(self, op: Operation, change: int) -> None:
        self._open[id(op)] = (op, change)  # the operation is held, so its id stays its own
        if len(self._open) > _OPEN_CHANGES:
            self._open.popitem(last=False)


class JournalledStore(Store):
    """``inner`` (a mount's store) with every change recorded in ``journal``."""

    def __init__(
        self, inner: Store, journal: Journal, threads: Threads, prefix: VPath, labels: Labels
    ) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.timeout = inner.timeout
        self.keeps_labels = inner.keeps_labels
        self._labeller = inner if isinstance(inner, LabelPort) else None
        """The document labels below (a change is recorded with the labels it leaves)."""
        self._journal = journal
        self._threads = threads
        self._prefix = prefix
        self._labels = labels
        self._written: Memo[VPath, tuple[str, str]] = Memo(_WRITTEN)
        """Path -> (version, content hash) of this store's last write there."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def describe(self) -> str:
        return self.inner.describe()

    def change_mark(self) -> object | None:
        return self.inner.change_mark()

    # -- reads pass through ------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        return await self.inner.stat(path)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return await self.inner.read_range(path, offset, length)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        return await self.inner.read_file(path, offset, length, check=check)

    async def list(self, path: VPath) -> builtins.list[FileInfo]:
        return await self.inner.list(path)

    async def exists(self, path: VPath) -> bool:
        return await self.inner.exists(path)

    async def walk(
        self, path: VPath = VPath.ROOT, *, max_depth: int | None = None
    ) -> AsyncIterator[FileInfo]:
        async for info in self.inner.walk(path, max_depth=max_depth):
            yield info

    async def odd_names(self, path: VPath) -> frozenset[str]:
        return await self.inner.odd_names(path)

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        return await self.inner.list_sought(path, sought)

    # -- changes are journalled --------------------------------------------------------------

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        def call() -> Awaitable[FileInfo]:
            return self.inner.write(path, data, mode=mode, if_version=if_version)

        try:
            record, new_hash = await self._record_write(path, data, mode, trust=True)
            try:
                info = await self._journalled(record, call, gated=self.inner.gated_commits)
            except JournalRetry:  # the journal dropped what it held of the file: read it
                record, new_hash = await self._record_write(path, data, mode, trust=False)
                info = await self._journalled(record, call, gated=self.inner.gated_commits)
        except BaseException:
            self._written.pop(path, None)
            raise
        if mode is WriteMode.APPEND or info.version is None:
            self._written.pop(path, None)  # an append's content is not what it sent
        else:
            self._written[path] = (info.version, new_hash)
        return info

    async def _record_write(
        self, path: VPath, data: bytes, mode: WriteMode, *, trust: bool
    ) -> tuple[_Record, str]:
        """The record of the write of ``data`` at ``path`` (what it replaces, what it leaves)
        and the hash of what the file will hold; with ``trust``, a content taken as held from
        :attr:`_written` is not sent (the record fails with :class:`JournalRetry` when the
        journal no longer holds it)."""
        before, old, held = ABSENT, b"", False
        if mode is not WriteMode.CREATE:
            check = self._unless_written(path) if trust and mode is WriteMode.OVERWRITE else None
            try:
                info, old = await self.inner.read_file(path, check=check)
                before = self._file(info, old)
            except _Unchanged as unchanged:
                before, held = unchanged.state, True
            except (NotFoundError, IsADirectoryError_):
                pass  # nothing there (or a folder: the write itself refuses)
        new = old + data if mode is WriteMode.APPEND else data
        labels = self._labels
        if self._labeller is not None:
            labels = await self._labeller.prospective(path, new[:LABEL_BYTES])
        new_hash = digest(new)
        after = State("file", new_hash, labels)
        contents = [(new_hash, new)]
        if before.hash is not None and before.hash != new_hash and not held:
            contents.append((before.hash, old))
        kept = (before.hash,) if held and before.hash is not None else ()
        return self._prepare([(path, before, after)], contents, kept), new_hash

    def _unless_written(self, path: VPath) -> ReadCheck | None:
        """A read check that stops the read of ``path`` (:class:`_Unchanged`) when the file
        is at the version this store's last write of it returned."""
        seen = self._written.get(path)
        if seen is None:
            return None
        version, hash_ = seen

        def check(info: FileInfo) -> None:
            if info.is_file and info.version == version:
                raise _Unchanged(State("file", hash_, info.labels or self._labels))

        return check

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        states, contents = await self._tree(path, recursive=recursive)
        record = self._prepare([(p, s, ABSENT) for p, s in states], contents, ())
        await self._journalled(
            record,
            lambda: self.inner.delete(path, recursive=recursive),
            gated=self.inner.gated_commits,
        )

    async def rename(self, src: VPath, dst: VPath) -> None:
        states, contents = await self._tree(src, recursive=True)
        moved = [(p, s, ABSENT) for p, s in states]
        base = len(src.parts)
        for p, s in states:
            target = dst.join(VPath(p.parts[base:]))
            moved.append((target, ABSENT, s))
        if states:
            try:  # a file the rename replaces
                info, old = await self.inner.read_file(dst)
            except (NotFoundError, IsADirectoryError_):
                pass
            else:
                moved[len(states)] = (dst, self._file(info, old), moved[len(states)][2])
                contents.append((digest(old), old))
        record = self._prepare(moved, contents, ())
        await self._journalled(
            record, lambda: self.inner.rename(src, dst), gated=self.inner.gated_commits
        )

    async def mkdir(self, path: VPath) -> None:
        entry = (path, ABSENT, State("dir", None, self._labels))
        # no store passes a commit point before making a folder: recorded first
        await self._journalled(
            self._prepare([entry], [], ()), lambda: self.inner.mkdir(path), gated=False
        )

    # -- helpers -----------------------------------------------------------------------------

    def _file(self, info: FileInfo, data: bytes) -> State:
        return State("file", digest(data), info.labels or self._labels)

    async def _tree(
        self, path: VPath, *, recursive: bool
    ) -> tuple[builtins.list[tuple[VPath, State]], builtins.list[tuple[str, bytes]]]:
        """The state of ``path`` and, for a folder (``recursive``), of everything under it,
        parents first; and the contents they name."""
        try:
            info = await self.inner.stat(path)
        except NotFoundError:
            return [], []  # the store call says so
        found = [info]
        if info.is_dir and recursive:
            found += [i async for i in self.inner.walk(path)]
        states: builtins.list[tuple[VPath, State]] = []
        contents: builtins.list[tuple[str, bytes]] = []
        for entry in found:
            if entry.is_dir:
                states.append((entry.path, State("dir", None, entry.labels or self._labels)))
            elif entry.is_file:
                seen, data = await self.inner.read_file(entry.path)
                state = self._file(seen, data)
                states.append((entry.path, state))
                contents.append((digest(data), data))
        return states, contents

    def _prepare(
        self,
        entries: builtins.list[tuple[VPath, State, State]],
        contents: builtins.list[tuple[str, bytes]],
        held: tuple[str, ...],
    ) -> _Record:
        """What :meth:`Journal.record` is given for ``entries``, in the operation in progress
        (its change, when an earlier store call of it opened one)."""
        op = operation_in_progress()
        change = None if op is None else self._threads.change_of(op)
        if op is None:
            head: Head = (
                "(store)",
                None,
                None,
                "store",
                str(self._prefix.join(entries[0][0])) if entries else str(self._prefix),
                None,
            )
        else:
            ctx = op.context
            head = (
                ctx.principal.id,
                ctx.principal.tenant,
                self._threads.thread_of(ctx),
                op.name,
                str(op.path),
                None if op.target is None else str(op.target),
            )
        rows = [(str(self._prefix.join(p)), b, a) for p, b, a in entries]
        return _Record(op, change, head, rows, contents, held, not self.inner.ephemeral)

    async def _journalled(
        self, record: _Record, call: Callable[[], Awaitable[T]], *, gated: bool
    ) -> T:
        """``call()`` (the store call), recorded in the journal before its change is made:
        at the store's commit point when the store is ``gated``
        (:mod:`~bastion.workspace.journal.gate`), else first. A journal that cannot be
        written raises :class:`JournalError` and nothing is changed."""
        if not record.rows:
            return await call()
        if gated:
            gate = RecordGate(self._journal, *record.args)
            token = COMMIT_GATE.set(gate)
            try:
                result = await call()
            except BaseException as exc:
                await gate.settle(wait=not isinstance(exc, asyncio.CancelledError))
                raise
            finally:
                COMMIT_GATE.reset(token)
            if gate.made is not None:
                self._opened(record, gate.made)
                return result
            await gate.settle()  # the store made its change without opening the gate: record now
            self._opened(record, await self._record_now(record))
            return result
        made = await self._record_now(record)
        try:
            result = await call()
        except BaseException:
            await asyncio.to_thread(self._journal.forget, made, len(record.rows))
            raise
        self._opened(record, made)
        return result

    async def _record_now(self, record: _Record) -> int:
        made = await asyncio.to_thread(self._journal.record, *record.args)
        if made is None:
            raise JournalRetry("the journal no longer holds a content; recorded again")
        return made

    def _opened(self, record: _Record, made: int) -> None:
        if record.op is not None and record.change != made:
            self._threads.opened(record.op, made)


@dataclass(frozen=True, slots=True)
class _Record:
    """One record, ready for :meth:`Journal.record`."""

    op: Operation | None
    change: int | None
    head: Head
    rows: builtins.list[tuple[str, State, State]]
    contents: builtins.list[tuple[str, bytes]]
    held: tuple[str, ...]
    durable: bool
    """Flushed when committed: the store outlives the process (a record need outlive only
    what it describes)."""

    @property
    def args(
        self,
    ) -> tuple[
        int | None,
        Head,
        builtins.list[tuple[str, State, State]],
        builtins.list[tuple[str, bytes]],
        tuple[str, ...],
        bool,
    ]:
        return self.change, self.head, self.rows, self.contents, self.held, self.durable
