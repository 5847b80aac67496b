"""The agent tools' read-before-write rule refuses a stale write or edit, never applies it over
unseen content (red-team variants of issue 16, class: *lost updates*; docs/security.md).

The read tool records the state of a file from the page's own read. These tests attack what
that record may be taken from, on several real stores, and pin that a write or an edit is
refused as stale, never applied over content the session did not see:

* a file changed between two pages read by the session (a later page must not make the new
  version count as read: the lines before it came from the old one);
* a file changed between the chunks of one page (a page over 64 KiB is read in chunks: it is
  whole from one version, and the state recorded is that version);
* a file changed between the read and an edit, by the workspace or by a second tool session;
* an append by the session racing another writer: the session's record must not take in the
  other writer's content it never read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools.session import StaleFileError, ToolSession
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores.sqlite import SqliteStore

ADMIN = Principal.of("admin")
F = VPath.parse("/m/f.txt")


def _store(kind: str, tmp_path: Path) -> Store:
    if kind == "local":
        (tmp_path / "root").mkdir(exist_ok=True)
        return LocalStore(tmp_path / "root")
    if kind == "sqlite":
        return SqliteStore(tmp_path / "ws.db")
    return MemoryStore()


@pytest.fixture(params=["memory", "local", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = _store(request.param, tmp_path)
    yield made
    close = getattr(made, "close", None)
    if close is not None:
        close()


def _ws(store: Store) -> Workspace:
    return Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=ADMIN)


def _lines(tag: str, n: int) -> str:
    return "".join(f"{tag} {i}\n" for i in range(n))


async def test_a_later_page_of_a_changed_file_does_not_count_as_read(store: Store) -> None:
    """Pages 1 and 2 from two versions: the write that follows is refused as stale (the
    agent's idea of lines 0-9 is the old version's)."""
    ws, other = _ws(store), _ws(store)
    await ws.write(F, _lines("old", 20))
    session = ToolSession(ws)
    await session.read_page(F, 0, 10)
    await other.write(F, _lines("NEW", 20))
    page = await session.read_page(F, 10, 10)
    assert page.text == "".join(f"NEW {i}\n" for i in range(10, 20))
    with pytest.raises(StaleFileError, match="changed since you read it"):
        await session.write(F, "mine\n")
    with pytest.raises(StaleFileError):
        await session.edit(F, "NEW 15", "mine", replace_all=False)
    with pytest.raises(StaleFileError):
        await session.delete(F, recursive=False)
    assert await ws.read_text(F) == _lines("NEW", 20)
    await session.read_page(F, 0, 10)  # read again from the start: then the write goes on
    await session.write(F, "mine\n")
    assert await ws.read_text(F) == "mine\n"


async def test_a_later_page_of_an_unchanged_file_keeps_it_read(store: Store) -> None:
    """The fix does not refuse the ordinary case: pages of one version, then a write."""
    ws = _ws(store)
    await ws.write(F, _lines("old", 20))
    session = ToolSession(ws)
    await session.read_page(F, 0, 10)
    await session.read_page(F, 10, 10)
    await session.write(F, "mine\n")
    assert await ws.read_text(F) == "mine\n"


async def test_a_first_read_at_an_offset_counts_as_read(store: Store) -> None:
    """A session that never read the file may start at any line (a partial read is a read)."""
    ws = _ws(store)
    await ws.write(F, _lines("old", 20))
    session = ToolSession(ws)
    await session.read_page(F, 15, 5)
    await session.edit(F, "old 17", "mine 17", replace_all=False)
    assert "mine 17\n" in await ws.read_text(F)


async def test_a_change_between_the_read_and_an_edit_is_refused(store: Store) -> None:
    ws, other = _ws(store), _ws(store)
    await ws.write(F, "alpha\nbeta\n")
    session, second = ToolSession(ws), ToolSession(other)
    await session.read_page(F, 0, 100)
    await second.read_page(F, 0, 100)
    await second.edit(F, "beta", "BETA", replace_all=False)  # a second toolset's edit
    with pytest.raises(StaleFileError):
        await session.edit(F, "alpha", "ALPHA", replace_all=False)
    with pytest.raises(StaleFileError):
        await session.write(F, "alpha\nbeta\ngamma\n")
    assert await ws.read_text(F) == "alpha\nBETA\n"


async def test_a_same_size_rewrite_between_the_read_and_an_edit_is_refused(
    store: Store,
) -> None:
    """Another writer puts the same number of bytes (and identical bytes) back: still a new
    version on every store, so still stale."""
    ws, other = _ws(store), _ws(store)
    await ws.write(F, "abc\n")
    session = ToolSession(ws)
    await session.read_page(F, 0, 10)
    await other.write(F, "abc\n")  # identical bytes: whatever it replaced is unseen
    with pytest.raises(StaleFileError):
        await session.write(F, "xyz\n")
    await session.read_page(F, 0, 10)
    await other.write(F, "ABC\n")  # same size, other bytes
    with pytest.raises(StaleFileError):
        await session.edit(F, "abc", "xyz", replace_all=False)
    assert await ws.read_text(F) == "ABC\n"


# -- a page read in chunks, with a writer in between -------------------------------------------

BIG_LINES = 10_000  # about 90 KiB: two chunks of the page reader


class _Interleave:
    """Mixed into a real store: another writer replaces the file once, just before the page
    reader asks for anything past its first chunk (a real race, made to happen every time)."""

    armed: bytes | None = None

    async def _settle(self, path: VPath, offset: int) -> None:
        if self.armed is not None and offset > 0:
            data, self.armed = self.armed, None
            await self.write(path, data)  # type: ignore[attr-defined]

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        await self._settle(path, offset)
        return await super().read_range(path, offset, length)  # type: ignore[misc]

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        await self._settle(path, offset)
        return await super().read_file(path, offset, length, check=check)  # type: ignore[misc]


class _MemoryInterleaved(_Interleave, MemoryStore):
    pass


class _LocalInterleaved(_Interleave, LocalStore):
    pass


class _SqliteInterleaved(_Interleave, SqliteStore):
    pass


@pytest.fixture(params=["memory", "local", "sqlite"])
def interleaved(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Interleave]:
    made: _Interleave
    if request.param == "local":
        made = _LocalInterleaved(tmp_path)
    elif request.param == "sqlite":
        made = _SqliteInterleaved(tmp_path / "ws.db")
    else:
        made = _MemoryInterleaved()
    yield made
    if isinstance(made, SqliteStore):
        made.close()


async def test_a_page_read_in_chunks_is_whole_from_one_version(interleaved: Any) -> None:
    """The first chunk from one version, the next from another: the page must not mix them,
    and the state recorded must be the version its text came from."""
    ws = _ws(interleaved)
    old, new = _lines("old", BIG_LINES), _lines("NEW", BIG_LINES)
    assert len(old.encode()) > 64 * 1024
    await ws.write(F, old)
    session = ToolSession(ws)
    interleaved.armed = new.encode()
    page = await session.read_page(F, 0, BIG_LINES)
    assert interleaved.armed is None  # the other writer did come in between
    assert page.text in (old, new)  # never a mix
    now = await ws.stat(F)
    if page.text == new:
        assert page.info.version == now.version
        await session.write(F, "mine\n")  # it read what is there: allowed
        assert await ws.read_text(F) == "mine\n"
    else:
        with pytest.raises(StaleFileError):
            await session.write(F, "mine\n")


async def test_a_workspace_page_read_in_chunks_is_whole_from_one_version(
    interleaved: Any,
) -> None:
    """The same through :meth:`Workspace.read_lines` and ``read_text`` with an offset."""
    ws = _ws(interleaved)
    old, new = _lines("old", BIG_LINES), _lines("NEW", BIG_LINES)
    await ws.write(F, old)
    interleaved.armed = new.encode()
    page = await ws.read_lines(F, offset=1, limit=BIG_LINES)
    assert page.text in (old.split("\n", 1)[1], new.split("\n", 1)[1])
    assert (page.info.version == (await ws.stat(F)).version) == page.text.startswith("NEW")
    interleaved.armed = old.encode()
    text = await ws.read_text(F, offset=2, limit=BIG_LINES)
    assert text in ("".join(old.splitlines(True)[2:]), "".join(new.splitlines(True)[2:]))


# -- an append racing another writer ------------------------------------------------------------


class _Racing(MemoryStore):
    """A memory store where another writer replaces the file just before the next append
    lands (after the tool looked at the file, before its append)."""

    def __init__(self) -> None:
        super().__init__()
        self.before_append: bytes | None = None

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode | str = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        if WriteMode(mode) is WriteMode.APPEND and self.before_append is not None:
            other, self.before_append = self.before_append, None
            await super().write(path, other)
        return await super().write(path, data, mode=mode, if_version=if_version)


async def test_an_append_racing_another_writer_does_not_count_its_content_as_read() -> None:
    store = _Racing()
    ws = _ws(store)
    await ws.write(F, "mine 1\n")
    session = ToolSession(ws)
    await session.read_page(F, 0, 10)
    store.before_append = b"theirs, never read\n"
    await session.append(F, "mine 2\n")
    assert await ws.read_text(F) == "theirs, never read\nmine 2\n"  # the append is kept
    with pytest.raises(StaleFileError):  # but the other writer's line was never read
        await session.write(F, "mine 1\nmine 2\n")
    assert await ws.read_text(F) == "theirs, never read\nmine 2\n"


async def test_an_append_alone_keeps_the_file_read() -> None:
    ws = _ws(MemoryStore())
    await ws.write(F, "mine 1\n")
    session = ToolSession(ws)
    await session.read_page(F, 0, 10)
    await session.append(F, "mine 2\n")
    await session.edit(F, "mine 1", "MINE 1", replace_all=False)
    assert await ws.read_text(F) == "MINE 1\nmine 2\n"
