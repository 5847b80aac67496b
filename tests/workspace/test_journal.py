"""The change journal: every change through the workspace is recorded with who, which thread,
what operation, and the content before and after; it can be reviewed and undone, refused with
a conflict when a file changed since; retention is enforced; a journal that cannot be written
refuses the write. Each runs against both backends: a SQLite file and PostgreSQL."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bastion import ConflictError, MemoryStore, Mount, NotFoundError, Policy, Principal, Workspace
from bastion.core.errors import ConfigurationError
from bastion.stores.local import LocalStore
from bastion.workspace.journal import Journal, JournalError, PgJournal, Retention
from bastion.workspace.sync import SyncWorkspace

BOT = Principal.of("bot")


def _ws(journal: Journal, store: object | None = None) -> SyncWorkspace:
    mount = Mount.of("/w", store if store is not None else MemoryStore())  # type: ignore[arg-type]
    return Workspace([mount], policy=Policy.allow_all(), principal=BOT, journal=journal).sync()


Opener = Callable[..., Journal]
"""Opens the test's journal (as another process would): ``opener(retention=None)``."""


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the test's journal lives: a file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "journal.db")
    return str(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def opener(where: str) -> Iterator[Opener]:
    opened: list[Journal] = []

    def open_(retention: Retention | None = None) -> Journal:
        if where.startswith("postgresql://"):
            j: Journal = PgJournal(where, retention)
        else:
            j = Journal(where, retention)
        opened.append(j)
        return j

    yield open_
    for j in opened:
        j.close()


@pytest.fixture
def journal(opener: Opener) -> Journal:
    return opener()


@pytest.fixture
def ws(journal: Journal) -> SyncWorkspace:
    return _ws(journal).with_thread("t1")


def test_every_kind_of_change_is_recorded_with_who_and_thread(ws: SyncWorkspace) -> None:
    ws.write("/w/a.txt", "one\n")
    ws.append("/w/a.txt", "two\n")
    ws.edit("/w/a.txt", "two", "TWO")
    ws.copy("/w/a.txt", "/w/b.txt")
    ws.move("/w/b.txt", "/w/sub/c.txt")
    ws.delete("/w/a.txt")
    changes = ws.changes()
    assert [c.op for c in changes] == ["write", "write", "edit", "copy", "move", "delete"]
    assert {(c.principal, c.thread) for c in changes} == {("bot", "t1")}
    move = changes[4]
    assert {(e.path, e.before.kind, e.after.kind) for e in move.entries} == {
        ("/w/sub", None, "dir"),
        ("/w/b.txt", "file", None),
        ("/w/sub/c.txt", None, "file"),
    }
    assert "-two\n+TWO\n" in ws.diff(changes[2].id)
    assert ws.changes(thread="elsewhere") == []
    assert ws.changes(principal="bot") == changes and ws.changes(principal="other") == []


def test_diff_is_unified_per_file(ws: SyncWorkspace) -> None:
    ws.write("/w/a.txt", "alpha\nbeta\n")
    ws.write("/w/a.txt", "alpha\ngamma\n")
    created, changed = ws.changes()
    assert ws.diff(created.id) == "--- /dev/null\n+++ b/w/a.txt\n@@ -0,0 +1,2 @@\n+alpha\n+beta\n"
    text = ws.diff(changed.id)
    assert text.startswith("--- a/w/a.txt\n+++ b/w/a.txt\n")
    assert "-beta\n+gamma\n" in text


def test_undo_restores_the_content_before(ws: SyncWorkspace) -> None:
    ws.write("/w/a.txt", "one\n")
    ws.write("/w/a.txt", "two\n")
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/w/a.txt") == "one\n"
    ws.delete("/w/a.txt")
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/w/a.txt") == "one\n"
    ws.move("/w/a.txt", "/w/d/b.txt")
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/w/a.txt") == "one\n"
    assert not ws.exists("/w/d")
    assert ws.changes()[-1].op == "undo"  # an undo is a change too, and can be undone


def test_undo_is_refused_when_the_file_changed_since(ws: SyncWorkspace) -> None:
    ws.write("/w/a.txt", "one\n")
    ws.write("/w/b.txt", "b\n")
    ws.write("/w/a.txt", "two\n")
    ws.write("/w/a.txt", "three\n")  # someone else's later change
    with pytest.raises(ConflictError, match=r"/w/a\.txt changed after change"):
        ws.undo(ws.changes()[2].id)
    assert ws.read_text("/w/a.txt") == "three\n"


def test_a_refused_revert_changes_nothing(ws: SyncWorkspace, journal: Journal) -> None:
    ws.write("/w/a.txt", "a\n")
    ws.write("/w/b.txt", "b\n")
    other = ws.with_thread("t2")  # the same workspace, another thread
    other.write("/w/b.txt", "changed by someone else\n")
    with pytest.raises(ConflictError):
        ws.revert("t1")
    assert ws.read_text("/w/a.txt") == "a\n"  # checked before anything was written


def test_revert_a_thread_and_restore_a_checkpoint(ws: SyncWorkspace, journal: Journal) -> None:
    ws.write("/w/keep.txt", "keep\n")
    ws.checkpoint("start")
    for i in range(5):
        ws.write(f"/w/f{i}.txt", f"{i}\n")
        ws.write("/w/keep.txt", f"keep {i}\n")
    ws.restore("start")
    assert ws.read_text("/w/keep.txt") == "keep\n"
    assert not ws.exists("/w/f0.txt")
    assert [c.name for c in ws.checkpoints()] == ["start"]
    with pytest.raises(NotFoundError):
        ws.restore("nope")
    ws.revert("t1")
    assert not ws.exists("/w/keep.txt")


def test_undo_last_takes_back_the_principals_own_last_change(journal: Journal) -> None:
    mine = _ws(journal).with_thread("t1")
    theirs = mine.with_principal(Principal.of("other"))
    mine.write("/w/a.txt", "mine\n")
    theirs.write("/w/b.txt", "theirs\n")
    done = mine.undo_last()
    assert not mine.exists("/w/a.txt")
    assert mine.read_text("/w/b.txt") == "theirs\n"
    assert len(done.changes) == 1


def test_contents_are_stored_once(ws: SyncWorkspace, journal: Journal) -> None:
    for _ in range(20):
        ws.write("/w/a.txt", "x" * 1000)
        ws.write("/w/a.txt", "y" * 1000)
    changes, entries, size = journal.size()
    assert (changes, entries) == (40, 40)
    assert size == 2000


def test_the_journal_is_shared_by_processes(opener: Opener, ws: SyncWorkspace) -> None:
    ws.write("/w/a.txt", "one\n")
    again = opener()  # what another process opens
    assert [c.op for c in again.changes()] == ["write"]


def test_retention_by_age_and_size(opener: Opener) -> None:
    journal = opener(Retention(max_age=None, max_bytes=5000))
    ws = _ws(journal)
    for i in range(40):
        ws.write("/w/a.txt", f"{i:04d}" * 250)  # 1000 bytes each
    journal.prune()
    changes, _, size = journal.size()
    assert size <= 5000
    assert 0 < changes < 40
    assert journal.changes()[-1].entries[0].after.hash is not None  # the newest are kept
    aged = opener(Retention(max_age=0.0, max_bytes=None))
    time.sleep(0.01)
    aged.prune()
    assert aged.size() == (0, 0, 0)


def test_a_sqlite_journal_that_cannot_be_written_refuses_the_write(tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    journal = Journal(tmp_path / "j.db")
    ws = _ws(journal, LocalStore(root))
    ws.write("/w/a.txt", "one\n")
    locker = sqlite3.connect(tmp_path / "j.db", timeout=0)
    locker.execute("BEGIN EXCLUSIVE")  # another process holds the journal
    journal._db.execute("PRAGMA busy_timeout=50")
    try:
        with pytest.raises(JournalError, match="nothing was changed"):
            ws.write("/w/a.txt", "two\n")
        with pytest.raises(JournalError):
            ws.delete("/w/a.txt")
    finally:
        locker.rollback()
        locker.close()
    assert (root / "a.txt").read_text() == "one\n"
    assert os.listdir(root) == ["a.txt"]  # no partial or temporary file left


def test_a_failed_store_call_leaves_no_record(ws: SyncWorkspace) -> None:
    ws.write("/w/a.txt", "one\n")
    with pytest.raises(ConflictError):
        ws.write("/w/a.txt", "two\n", if_version="not-the-version")
    assert [c.op for c in ws.changes()] == ["write"]


def test_without_a_journal_review_says_so() -> None:
    ws = Workspace([Mount.of("/w", MemoryStore())], policy=Policy.allow_all()).sync()
    with pytest.raises(ConfigurationError, match="no change journal"):
        ws.changes()


def test_a_binary_diff_says_so(ws: SyncWorkspace) -> None:
    ws.write("/w/img.bin", b"\x00\x01\x02")
    ws.write("/w/img.bin", b"\x00\x01\x03")
    assert ws.diff(ws.changes()[-1].id) == "Binary files a/w/img.bin and b/w/img.bin differ\n"


def test_a_bad_checkpoint_name_is_refused(ws: SyncWorkspace) -> None:
    with pytest.raises(ValueError, match="printable"):
        ws.checkpoint("a\nb")
    assert ws.checkpoints() == []


def test_changes_come_a_page_at_a_time(ws: SyncWorkspace) -> None:
    for i in range(7):
        ws.write(f"/w/{i}.txt", "x\n")
    first = ws.changes(limit=3)
    rest = ws.changes(after=first[-1].id, limit=10)
    assert len(first) == 3 and len(rest) == 4
    assert [c.id for c in first + rest] == [c.id for c in ws.changes()]


def test_undo_last_skips_changes_of_others_and_of_other_threads(journal: Journal) -> None:
    mine = _ws(journal).with_thread("t1")
    mine.write("/w/a.txt", "a\n")
    for i in range(100):  # many later changes that are not mine in t1
        mine.with_thread("t2").write(f"/w/t2-{i}.txt", "x\n")
    mine.undo_last()
    assert not mine.exists("/w/a.txt")
    assert mine.exists("/w/t2-99.txt")


CHILD = """
import sys
from pathlib import Path
from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.workspace.journal.settings import open_journal
ws = Workspace([Mount.of("/w", LocalStore(sys.argv[1]))], policy=Policy.allow_all(),
               principal=Principal.of("child"),
               journal=open_journal({"path": sys.argv[2]}, Path("."))).sync()
ws.with_thread("child-thread").write("/w/from-child.txt", "made in another process\\n")
"""


def test_another_process_records_into_the_same_journal(
    tmp_path: Path, where: str, journal: Journal
) -> None:
    import subprocess
    import sys

    root = tmp_path / "files"
    root.mkdir()
    ws = _ws(journal, LocalStore(root))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), where],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    (change,) = ws.changes(thread="child-thread")
    assert change.principal == "child"
    ws.undo(change.id)
    assert not (root / "from-child.txt").exists()
