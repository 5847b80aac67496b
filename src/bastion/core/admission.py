"""Admission: what the guard refuses before a call reaches the store.

Each method looks at what is there (through the store the guard wraps) and refuses, in the
words the principal is told, what the call may not do: a listing of a folder it may not see, a
write over the size limit or onto a file it may not see, a removal or move of what it may not
delete or of a folder with protected entries. The guard runs the call once admitted.
"""

from __future__ import annotations

from collections.abc import Callable

from bastion.core.decisions import Decisions
from bastion.core.errors import LimitError, OperationError, PolicyDeniedError
from bastion.core.hidden_tree import HiddenTree
from bastion.core.models import Action, EntryKind, FileInfo, WriteMode
from bastion.core.operation import Operation
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.core.sidecars import labelled_file_of
from bastion.core.visibility import LABELS_HIDE

__all__ = ["Admission"]

_FILE, _DIR = EntryKind.FILE, EntryKind.DIRECTORY


class Admission:
    """Refusals before a call, on ``store`` (the store the guard wraps), decided by ``decide``
    and told around hidden entries by ``tree``. ``labelled``: entries carry labels, so a
    write looks at the file it would replace."""

    def __init__(
        self, store: Store, decide: Decisions, tree: HiddenTree, *, labelled: bool
    ) -> None:
        self.store = store
        self.decide = decide
        self.tree = tree
        self.labelled = labelled
        self._presence: Callable[[VPath], object] | None = getattr(store, "cached_presence", None)
        """The store's ``cached_presence`` (a local store's), looked up once: the wrappers
        around a store hand it on by attribute lookup, which costs a chain of misses."""

    async def stat_visible(self, path: VPath, op: Operation) -> FileInfo:
        """The entry at ``path`` when the principal may see it; else not found."""
        blocked = self.decide.ctx.blocked(self.decide.full(path))
        if blocked is not None:
            raise self.decide.hide(path, f"blocked segment {blocked!r}", op)
        try:
            info = await self.store.stat(path)
        except OperationError as exc:
            raise await self.tree.failed(exc, path, op) from None
        hidden = self.decide.why_hidden(path, info.kind, info)
        if hidden is None and info.is_dir:
            hidden = await self.tree.unshown(path, info)
        if hidden is not None:
            raise self.decide.hide(path, hidden, op)
        return info

    async def listing(self, path: VPath, op: Operation) -> None:
        """Refuse a listing of the folder ``path`` (scope, and the folder seen)."""
        self.decide.scope(Action.LIST, path)
        if not path.is_root:
            await self.stat_visible(path, op)
        else:
            hidden = self.decide.why_hidden(path, _DIR, None)
            if hidden is not None:
                raise self.decide.hide(path, hidden, op)

    async def move(self, src: VPath, dst: VPath, op: Operation) -> tuple[FileInfo, bool]:
        """Refuse a move of ``src`` to ``dst``; the source's info, and whether hidden entries
        are under it (they stay)."""
        found = await self.removal(src, "move", op, recursive=True)
        self.decide.writable_target(dst, is_file=found[0].is_file)
        try:
            there = await self.store.stat(dst)
        except OperationError as exc:
            await self.tree.refuse_onto_hidden(exc, dst, op)
            return found  # missing or in the way: the rename says so
        if there.is_file and found[0].is_file and self.decide.blind(dst):
            return found  # a file moved blind replaces a file there, as a blind write does
        why = self.decide.why_hidden(dst, there.kind, there)
        if why is None and there.is_dir:  # a folder of hidden entries only: not moved over
            why = await self.tree.unshown(dst, there)
        if why is not None:
            raise self.decide.taken(dst, Action.WRITE, why, op)
        return found

    async def write(
        self, path: VPath, size: int, mode: WriteMode, op: Operation, *, peek: bool = False
    ) -> tuple[bool, bool, FileInfo | None]:
        """Refuse what a write of ``size`` bytes would refuse; whether it is blind (the
        principal may not read ``path``: a write-only mount, a drop box by policy), and whether
        what is at ``path`` was left unseen. A blind write is told nothing of what is there
        (docs/policy.md, "Blind writes"): nothing is looked at, and only the bytes written count
        against the size limit.

        ``peek``: the caller writes next and can take an unseen answer. Where the store cannot
        tell from memory that something is at ``path`` (a new name: looking would cost a hop
        to a worker thread), it is not looked at; the caller then writes it as a creation,
        which changes nothing if something is there, and calls :meth:`replacing` before it
        writes over what it found. The third value: the file looked at, which a write goes
        over only as that version (another put there since is looked at in turn)."""
        self.decide.scope(Action.WRITE, path)
        self.decide.writable_target(path, is_file=True)
        blind = self.decide.blind(path)
        may_read = not blind and self.decide.why_hidden(path, _FILE, None) is None
        existing: FileInfo | None = None
        unseen = False
        if mode is WriteMode.APPEND and may_read:
            existing = await self._existing(path, op)
        elif self.labelled and not blind:
            unseen = peek and self._unseen_now(path)
            if not unseen:
                existing = await self._existing(path, op)
                unseen = peek and existing is None  # nothing seen: made as a creation too
        total = size
        if mode is WriteMode.APPEND and may_read and existing is not None:
            # Only a file the principal may read counts with its current size: a refusal
            # must not tell the size of a file it may not read (a drop box).
            total += existing.size
        limit = self.decide.ctx.policy.limits.max_file_bytes
        if total > limit:
            op.refuse(f"size {total} over limit {limit}")
            raise LimitError(
                f"{self.decide.full(path)}: {total} bytes is over the {limit}-byte file limit; "
                "write a smaller file"
            )
        return blind, unseen, existing

    async def replacing(self, path: VPath, op: Operation) -> FileInfo | None:
        """Refuse a write onto what is at ``path`` (left unseen by :meth:`write`); what is
        there (``None``: nothing, or something in the way)."""
        return await self._existing(path, op)

    async def _existing(self, path: VPath, op: Operation) -> FileInfo | None:
        """The entry at ``path`` (``None``: missing, or in the way: the write itself says so),
        refused when it is a file labelled above the writer."""
        try:
            existing = await self.store.stat(path)
        except OperationError:
            return None
        # A file labelled above a writer who may read the path is not there for it, so it
        # can be neither seen nor clobbered.
        if existing.labels is not None and not self.decide.ctx.admits(existing.labels):
            # a hidden file, or the sidecar of one (whether it has a sidecar yet or not): a
            # change onto a hidden name, refused in the words of the policy
            why = "sidecar of a hidden file" if labelled_file_of(path) is not None else LABELS_HIDE
            raise self.decide.taken(path, Action.WRITE, why, op)
        return existing

    def _unseen_now(self, path: VPath) -> bool:
        """Whether a write may leave ``path`` unlooked at: the store can tell from memory (a
        local store's ``cached_presence``: the kernel's cache of names) and does not know
        that something is there (nothing is, or it would have to look). ``False`` for a
        store that cannot say (it is asked by a stat, as ever)."""
        present = self._presence
        return present is not None and present(path) is not True

    def absent_now(self, path: VPath) -> bool:
        """Whether the store knows from memory that nothing is at ``path`` (``False`` when
        something is there, or when it would have to look)."""
        present = self._presence
        return present is not None and present(path) is False

    async def removal(
        self, path: VPath, verb: str, op: Operation, *, recursive: bool
    ) -> tuple[FileInfo, bool]:
        """The entry's info, and whether hidden entries are under it (they stay)."""
        self.decide.scope(Action.DELETE, path)
        if path.is_root:
            op.refuse(f"{verb} of a mount root")
            raise PolicyDeniedError(
                f"{self.decide.mount.prefix} is a mount point and cannot be {verb}d"
            )
        info = await self.stat_visible(path, op)
        self.decide.policy(Action.DELETE, path)
        # (a folder of hidden entries only is not there for the principal: stat_visible)
        hidden_inside = recursive and info.is_dir and await self.tree.check_tree(path, verb)
        return info, hidden_inside
