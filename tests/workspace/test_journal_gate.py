"""On a local folder the change journal records each change at the store's commit point
(docs/changes.md): the SQLite journal in the store's own worker thread (no hop of its own),
a journal whose commit waits for a flush (PostgreSQL) beside the store's work, started when
the call starts. Either way the record is committed before the change lands, a record that
cannot be written leaves the file unchanged, a write the store refuses leaves no record, and a
write abandoned while its record is written leaves neither."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from bastion import (
    ConflictError,
    LocalStore,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Workspace,
)
from bastion.workspace.journal import Journal, JournalError, PgJournal, Retention, State

Head = tuple[str, str | None, str | None, str, str, str | None]


def _looking(base: type[Journal], *, overlap: bool) -> type[Journal]:
    """``base`` with each record looking at the folder (``root``) while it is written."""

    class Looking(base):  # type: ignore[misc, valid-type]
        overlaps_commit = overlap
        flushed: list[bool]
        root: Path
        seen: list[tuple[str, dict[str, str]]]
        fail = False
        expect_copy = False
        hold: threading.Event | None = None
        entered = threading.Event()

        def record(
            self,
            change: int | None,
            head: Head,
            entries: Sequence[tuple[str, State, State]],
            contents: Iterable[tuple[str, bytes]],
            held: Iterable[str] = (),
            durable: bool = True,
        ) -> int | None:
            self.flushed.append(durable)
            if overlap and self.expect_copy:  # started ahead: the store writes meanwhile
                _wait_for_a_temporary_file(self.root)
            self.seen.append((threading.current_thread().name, _files(self.root)))
            if self.hold is not None:
                self.entered.set()
                self.hold.wait(30)
            if self.fail:
                raise JournalError("the change journal cannot be written; nothing was changed")
            return super().record(change, head, entries, contents, held, durable)

    return Looking


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in root.iterdir()}


def _wait_for_a_temporary_file(root: Path) -> None:
    event = threading.Event()
    for _ in range(3000):  # at most ~30 s; the store makes it at once
        if any(p.name.startswith(".bastion-tmp") for p in root.iterdir()):
            return
        event.wait(0.01)
    raise AssertionError("the store never started its write beside the record")


@pytest.fixture(params=["sqlite", "sqlite-in-thread", "postgresql"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    root = tmp_path / "files"
    root.mkdir()
    if request.param == "postgresql":
        cls = _looking(PgJournal, overlap=True)
        j = cls(request.getfixturevalue("pg_dsn"))
    else:
        cls = _looking(Journal, overlap=request.param == "sqlite")
        j = cls(tmp_path / "journal.db")
    j.root, j.seen, j.flushed = root, [], []
    yield j
    j.close()


def _ws(journal: Any) -> Workspace:
    mount = Mount.of("/w", LocalStore(journal.root))
    return Workspace(
        [mount], policy=Policy.allow_all(), principal=Principal.of("bot"), journal=journal
    )


async def test_the_record_is_committed_before_the_change_lands(journal: Any) -> None:
    ws = _ws(journal)
    await ws.write("/w/a.txt", "old\n")
    journal.seen.clear()
    journal.expect_copy = True
    await ws.write("/w/a.txt", "new\n")
    journal.expect_copy = False
    ((thread, seen),) = journal.seen
    assert seen["a.txt"] == "old\n"  # the record came first
    if not journal.overlaps_commit:
        assert thread.startswith("bastion-local")  # in the store's worker: no hop of its own
        assert "new\n" in seen.values()  # after the store's slow part (its copy written)
    else:
        assert thread.startswith("bastion-journal")  # beside the store's work
    assert _files(journal.root) == {"a.txt": "new\n"}
    (change,) = [c for c in await ws.changes() if c.entries[0].before.hash]
    await ws.undo(change.id)
    assert _files(journal.root) == {"a.txt": "old\n"}


async def test_a_record_that_cannot_be_written_changes_nothing(journal: Any) -> None:
    ws = _ws(journal)
    await ws.write("/w/a.txt", "old\n")
    await ws.write("/w/b.txt", "b\n")
    journal.fail = True
    with pytest.raises(JournalError, match="nothing was changed"):
        await ws.write("/w/a.txt", "new\n")
    with pytest.raises(JournalError):
        await ws.write("/w/c.txt", "new\n")
    with pytest.raises(JournalError):
        await ws.delete("/w/b.txt")
    with pytest.raises(JournalError):
        await ws.move("/w/b.txt", "/w/d.txt")
    assert _files(journal.root) == {"a.txt": "old\n", "b.txt": "b\n"}  # no temporary file
    journal.fail = False
    assert [c.op for c in await ws.changes()] == ["write", "write"]


async def test_a_write_the_store_refuses_leaves_no_record(journal: Any) -> None:
    ws = _ws(journal)
    await ws.write("/w/a.txt", "old\n")
    with pytest.raises(ConflictError):
        await ws.write("/w/a.txt", "new\n", if_version="not-the-version")
    assert [c.op for c in await ws.changes()] == ["write"]
    assert _files(journal.root) == {"a.txt": "old\n"}


async def test_a_write_abandoned_while_recorded_leaves_neither(journal: Any) -> None:
    ws = _ws(journal)
    await ws.write("/w/a.txt", "old\n")
    journal.hold, journal.entered = threading.Event(), threading.Event()
    task = asyncio.ensure_future(ws.write("/w/a.txt", "new\n"))
    assert await asyncio.to_thread(journal.entered.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    journal.hold.set()
    journal.hold = None
    await ws.write("/w/b.txt", "b\n")  # waits for the abandoned write to give up
    for _ in range(300):  # a record started ahead is taken back in the journal's thread
        if [c.path for c in await ws.changes()] == ["/w/a.txt", "/w/b.txt"]:
            break
        await asyncio.sleep(0.05)
    assert [c.path for c in await ws.changes()] == ["/w/a.txt", "/w/b.txt"]
    assert _files(journal.root) == {"a.txt": "old\n", "b.txt": "b\n"}


async def test_records_are_flushed_when_the_store_outlives_the_process(journal: Any) -> None:
    ws = Workspace(
        [Mount.of("/w", LocalStore(journal.root)), Mount.of("/m", MemoryStore())],
        policy=Policy.allow_all(),
        journal=journal,
    )
    await ws.write("/w/a.txt", "on disk\n")
    await ws.write("/m/a.txt", "in memory\n")
    await ws.copy("/m/a.txt", "/w/b.txt")
    await ws.delete("/m/a.txt")
    assert journal.flushed == [True, False, True, False]
    assert [c.op for c in await ws.changes()] == ["write", "write", "copy", "delete"]


async def test_a_content_the_journal_dropped_is_read_and_recorded_again(journal: Any) -> None:
    ws = _ws(journal)
    await ws.write("/w/a.txt", "first\n")
    aged = Retention(max_age=0.0, max_bytes=None)  # another process, with a short retention
    other = (
        PgJournal(journal._dsn, aged)
        if isinstance(journal, PgJournal)
        else Journal(journal.path, aged)
    )
    await asyncio.sleep(0.01)
    other.prune()  # retention in another process: the first write and its content are gone
    assert other.size() == (0, 0, 0)
    other.close()
    await ws.write("/w/a.txt", "second\n")  # the gate is refused once, the file read again
    (only,) = await ws.changes()
    assert journal.content(only.entries[0].before.hash or "") == b"first\n"
    await ws.undo(only.id)
    assert _files(journal.root) == {"a.txt": "first\n"}
