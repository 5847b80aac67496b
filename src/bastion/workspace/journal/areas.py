"""The journal as a view with *areas* sees it: mounts at a prefix that other views of the same
journal mount over other folders (an agent's own area, a thread's scratch area:
``bastion.agents.scopes``). ``/thread/notes.md`` is another file in each thread, so the journal
must not hold it under that name: a change there is kept under the area's own key
(``//thread/t1/notes.md``), and read back only by a view that has that area, under its
prefix. A view without it never sees the change, its path, its diff, nor can it undo it into
its own area. A key starts with ``//``, which no workspace path does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from bastion.workspace.journal.db import Change, Checkpoint, Journal, State

__all__ = ["AreaJournal", "area_key"]


def area_key(kind: str, ident: str) -> str:
    """The journal's name of the area ``ident`` of ``kind`` (``thread``, ``agent``)."""
    return f"//{kind}/{ident}"


class AreaJournal(Journal):
    """``journal`` with each prefix of ``areas`` kept under its key (``{"/thread":
    area_key("thread", "t1")}``). Everything else is the journal's own."""

    def __init__(self, journal: Journal, areas: Mapping[str, str]) -> None:
        # the journal's own state stays in ``journal``: every method below hands over to it
        self.inner = journal
        self.retention = journal.retention
        self.overlaps_commit = journal.overlaps_commit  # how its records are best written
        self._areas = dict(areas)

    # -- names -------------------------------------------------------------------------------

    def _out(self, path: str) -> str:
        """The journal's name of the workspace path ``path``."""
        for prefix, key in self._areas.items():
            if path == prefix or path.startswith(prefix + "/"):
                return key + path[len(prefix) :]
        return path

    def _back(self, path: str) -> str | None:
        """The workspace path the journal's ``path`` names in this view; ``None`` when it is
        in an area this view does not have (or under an area's prefix, recorded by a view
        without it: which area it was is not known)."""
        for prefix, key in self._areas.items():
            if path == key or path.startswith(key + "/"):
                return prefix + path[len(key) :]
        if path.startswith("//"):
            return None
        for prefix in self._areas:
            if path == prefix or path.startswith(prefix + "/"):
                return None
        return path

    def _change(self, change: Change) -> Change:
        entries = tuple(
            replace(e, path=path) for e in change.entries if (path := self._back(e.path))
        )
        return replace(
            change,
            path=self._back(change.path) or "",
            target=None if change.target is None else self._back(change.target),
            entries=entries,
        )

    # -- the journal -------------------------------------------------------------------------

    def record(
        self,
        change: int | None,
        head: tuple[str, str | None, str | None, str, str, str | None],
        entries: Sequence[tuple[str, State, State]],
        contents: Iterable[tuple[str, bytes]],
        held: Iterable[str] = (),
        durable: bool = True,
    ) -> int | None:
        principal, tenant, thread, op, path, target = head
        named = (principal, tenant, thread, op, self._out(path), target and self._out(target))
        rows = [(self._out(p), before, after) for p, before, after in entries]
        return self.inner.record(change, named, rows, contents, held, durable)

    def changes(
        self,
        *,
        thread: str | None = None,
        since: float | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        principal: str | None = None,
        ids: Sequence[int] | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[Change]:
        found = self.inner.changes(
            thread=thread,
            since=since,
            after_id=after_id,
            before_id=before_id,
            principal=principal,
            ids=ids,
            limit=limit,
            newest=newest,
        )
        return [self._change(c) for c in found]  # one with no entry left is shown to no one

    def labels_seen(
        self, paths: Iterable[str], hashes: Iterable[str]
    ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        by_path, by_hash = self.inner.labels_seen([self._out(p) for p in paths], hashes)
        return {b: seen for p, seen in by_path.items() if (b := self._back(p))}, by_hash

    def forget(self, change: int, count: int) -> None:
        self.inner.forget(change, count)

    def content(self, hash_: str) -> bytes:
        return self.inner.content(hash_)

    def checkpoint(self, name: str, principal: str) -> Checkpoint:
        return self.inner.checkpoint(name, principal)

    def checkpoint_named(self, name: str) -> Checkpoint:
        return self.inner.checkpoint_named(name)

    def checkpoints(self) -> list[Checkpoint]:
        return self.inner.checkpoints()

    def prune(self) -> int:
        return self.inner.prune()

    def size(self) -> tuple[int, int, int]:
        return self.inner.size()

    def compact(self) -> None:
        self.inner.compact()

    def close(self) -> None:
        self.inner.close()
