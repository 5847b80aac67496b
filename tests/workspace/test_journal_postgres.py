"""The change journal in PostgreSQL, where every process of a workspace (on any machine) sees
it: two processes write through one journal at once and every change is there once, in order;
an undo or a revert made by one process is seen by the other; a killed database refuses the
write (the file keeps its content, no record without its write) and the journal works again
once the database is back; ``[journal] path = "postgresql://..."`` chooses it, and a bad URL
is refused without echoing it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import ConfigurationError
from bastion.workspace.journal import Journal, JournalError, PgJournal
from bastion.workspace.journal.settings import JournalSettings, open_journal
from bastion.workspace.sync import SyncWorkspace
from pg_support import start_private_pg

WRITER = """
import sys
from pathlib import Path
from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.workspace.journal.settings import open_journal
root, where, who, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ws = Workspace([Mount.of("/w", LocalStore(root))], policy=Policy.allow_all(),
               principal=Principal.of(who),
               journal=open_journal({"path": where}, Path("."))).sync().with_thread(who)
if count == 0:
    ws.revert(sys.argv[5])
else:
    for i in range(count):
        ws.write(f"/w/{who}-{i}.txt", f"{who} {i}\\n")
        ws.write("/w/shared.txt", f"{who} {i}\\n")
"""


def _child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _finish(child: subprocess.Popen[str]) -> None:
    _, err = child.communicate(timeout=180)
    assert child.returncode == 0, err


def _ws(root: Path, journal: Journal, who: str = "parent") -> SyncWorkspace:
    return Workspace(
        [Mount.of("/w", LocalStore(root))],
        policy=Policy.allow_all(),
        principal=Principal.of(who),
        journal=journal,
    ).sync()


def test_two_processes_write_through_one_journal(tmp_path: Path, pg_dsn: str) -> None:
    root = tmp_path / "files"
    root.mkdir()
    children = [_child(str(root), pg_dsn, who, "30") for who in ("ann", "bob")]
    for child in children:
        _finish(child)
    journal = PgJournal(pg_dsn)
    changes = journal.changes()
    assert len(changes) == 120
    assert [c.id for c in changes] == sorted({c.id for c in changes})
    for who in ("ann", "bob"):
        mine = [c for c in changes if c.principal == who]
        assert [c.path for c in mine][:2] == [f"/w/{who}-0.txt", "/w/shared.txt"]
        assert {c.thread for c in mine} == {who}
    ws = _ws(root, journal)
    # two writers without if_version: each change is recorded before its write lands, so the
    # last record need not be the last write (docs/changes.md); the file holds what one of
    # the recorded changes wrote, and that change is undone here
    shared = [c for c in changes if c.path == "/w/shared.txt"]
    now = (root / "shared.txt").read_text()
    landed = [c for c in shared if _text(journal, c.entries[-1].after.hash) == now]
    assert landed and now.split()[0] in ("ann", "bob")
    last = landed[-1]
    ws.undo(last.id)  # a change another process made, undone here
    assert (root / "shared.txt").read_text() == _text(journal, last.entries[-1].before.hash)
    journal.close()


def _text(journal: Journal, hash_: str | None) -> str:
    assert hash_ is not None
    return journal.content(hash_).decode()


def test_undo_and_revert_are_seen_across_processes(tmp_path: Path, pg_dsn: str) -> None:
    root = tmp_path / "files"
    root.mkdir()
    journal = PgJournal(pg_dsn)
    ws = _ws(root, journal).with_thread("draft")
    ws.write("/w/a.txt", "one\n")
    ws.write("/w/b.txt", "two\n")
    _finish(_child(str(root), pg_dsn, "reviewer", "0", "draft"))  # another process reverts
    assert not (root / "a.txt").exists() and not (root / "b.txt").exists()
    changes = ws.changes()
    assert [c.op for c in changes[:2]] == ["write", "write"]
    assert {c.principal for c in changes[2:]} == {"reviewer"}  # the revert, journalled
    ws.undo(changes[-1].id)  # this process undoes a change the other one made
    assert (root / "a.txt").exists() or (root / "b.txt").exists()
    journal.close()


@pytest.fixture
def private_pg() -> Iterator[Any]:
    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-journal-"))
    pg = start_private_pg(folder)
    try:
        yield pg
    finally:
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def _kill(pg: Any) -> None:
    """SIGKILL the server and every one of its processes, as a crash would."""
    postmaster = psutil.Process(pg.get_pid())
    tree = [postmaster, *postmaster.children(recursive=True)]
    for proc in tree:
        proc.send_signal(signal.SIGKILL)
    psutil.wait_procs(tree, timeout=60)


def test_a_killed_database_refuses_the_write(tmp_path: Path, private_pg: Any) -> None:
    root = tmp_path / "files"
    root.mkdir()
    dsn = private_pg.get_uri()
    journal = PgJournal(dsn, timeout=5.0)
    ws = _ws(root, journal).with_thread("t")
    ws.write("/w/a.txt", "one\n")
    _kill(private_pg)
    with pytest.raises(JournalError, match="nothing was changed") as caught:
        ws.write("/w/a.txt", "two\n")
    assert "postgresql://" not in str(caught.value) and "/tmp" not in str(caught.value)
    with pytest.raises(JournalError):
        ws.write("/w/new.txt", "never\n")
    with pytest.raises(JournalError):
        ws.delete("/w/a.txt")
    assert (root / "a.txt").read_text() == "one\n"
    assert sorted(os.listdir(root)) == ["a.txt"]  # no write without its record
    private_pg.ensure_postgres_running()
    ws.write("/w/a.txt", "three\n")  # the journal connects again
    assert [c.op for c in ws.changes()] == ["write", "write"]
    ws.undo(ws.changes()[-1].id)
    assert (root / "a.txt").read_text() == "one\n"
    journal.close()


def test_the_journal_table_chooses_postgresql(tmp_path: Path, pg_dsn: str) -> None:
    settings = JournalSettings.parse({"path": pg_dsn, "max_age_days": 7}, tmp_path)
    assert settings is not None and settings.path == pg_dsn
    journal = open_journal({"path": pg_dsn}, tmp_path)
    assert isinstance(journal, PgJournal)
    journal.close()
    secret = "postgresql://user:hunter2@[bad"
    with pytest.raises(ConfigurationError) as caught:
        open_journal({"path": secret}, tmp_path)
    assert "hunter2" not in str(caught.value)


def test_an_unreachable_database_is_refused_on_open_without_the_dsn(tmp_path: Path) -> None:
    dsn = f"postgresql://user:hunter2@/db?host={tmp_path}&port=1"
    with pytest.raises(JournalError, match="cannot be opened") as caught:
        PgJournal(dsn, timeout=2.0)
    assert "hunter2" not in str(caught.value) and str(tmp_path) not in str(caught.value)
