"""The journal records what an overwrite replaces without reading it when the file is still at
the version this workspace's last write of it left (the content is already in the journal), and
reads it whenever it is not: another writer, an append, a journal that dropped the content. An
undo restores the right content in every case. Each runs against both journals: a SQLite file
and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck
from bastion.workspace.journal import Journal, PgJournal, Retention
from bastion.workspace.sync import SyncWorkspace

BIG = "x" * 100_000 + "\n"


class CountingStore(MemoryStore):
    """A memory store that counts the bytes read out of it."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read = 0

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        data = await super().read_range(path, offset, length)
        self.bytes_read += len(data)
        return data

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        info, data = await super().read_file(path, offset, length, check=check)
        self.bytes_read += len(data)
        return info, data


def _ws(journal: Journal, store: CountingStore) -> SyncWorkspace:
    mount = Mount.of("/w", store)
    return Workspace(
        [mount], policy=Policy.allow_all(), principal=Principal.of("bot"), journal=journal
    ).sync()


Opener = Callable[..., Journal]


@pytest.fixture(params=["sqlite", "postgresql"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens the test's journal (each call: as another process would), with a retention."""
    pg = request.param == "postgresql"
    where = str(request.getfixturevalue("pg_dsn")) if pg else str(tmp_path / "j.db")
    opened: list[Journal] = []

    def open_(retention: Retention | None = None) -> Journal:
        opened.append(PgJournal(where, retention) if pg else Journal(where, retention))
        return opened[-1]

    yield open_
    for journal in opened:
        journal.close()


@pytest.fixture
def store() -> CountingStore:
    return CountingStore()


def test_an_overwrite_of_what_it_wrote_reads_nothing_back(
    opener: Opener, store: CountingStore
) -> None:
    ws = _ws(opener(), store)
    ws.write("/w/a.txt", BIG)
    store.bytes_read = 0
    ws.write("/w/a.txt", "small\n")
    assert store.bytes_read < len(BIG)  # the 100 kB before were not read again
    [_, second] = ws.changes()
    assert second.entries[0].before.hash == ws.changes()[0].entries[0].after.hash
    ws.undo(second.id)
    assert ws.read_text("/w/a.txt") == BIG


def test_a_file_changed_by_another_writer_is_read(opener: Opener, store: CountingStore) -> None:
    ws = _ws(opener(), store)
    ws.write("/w/a.txt", "mine\n")
    other = Workspace([Mount.of("/w", store)], policy=Policy.allow_all()).sync()  # no journal
    other.write("/w/a.txt", BIG)
    store.bytes_read = 0
    ws.write("/w/a.txt", "mine again\n")
    assert store.bytes_read >= len(BIG)
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/w/a.txt") == BIG  # what the other writer left, not "mine"


def test_an_append_reads_what_it_appends_to(opener: Opener, store: CountingStore) -> None:
    ws = _ws(opener(), store)
    ws.write("/w/a.txt", "one\n")
    ws.append("/w/a.txt", "two\n")
    ws.write("/w/a.txt", "three\n")
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/w/a.txt") == "one\ntwo\n"
    ws.undo(ws.changes()[1].id)
    assert ws.read_text("/w/a.txt") == "one\n"


def test_a_content_the_journal_dropped_is_read_and_recorded_again(
    opener: Opener, store: CountingStore
) -> None:
    journal = opener(Retention(max_age=None, max_bytes=None))
    ws = _ws(journal, store)
    ws.write("/w/a.txt", BIG)
    aged = opener(Retention(max_age=0.0, max_bytes=None))
    time.sleep(0.01)
    aged.prune()  # another process applies retention: the first write and BIG are gone
    assert aged.size() == (0, 0, 0)
    ws.write("/w/a.txt", "small\n")
    [only] = ws.changes()
    assert journal.content(only.entries[0].before.hash or "") == BIG.encode()
    ws.undo(only.id)
    assert ws.read_text("/w/a.txt") == BIG
