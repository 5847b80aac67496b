"""What an overlay remembers between calls: the manifest, cached but never stale (another
process's change is seen at once), and the base versions read through the overlay, kept in a
bounded memory and moved into the layer past the bound, so that the rule "refuse a file changed
in the base since the layer read it" holds for every file a long thread read, in this process or
another sharing the layer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bastion.core.errors import NotFoundError, StoreError
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.stores.overlay import OverlayStore
from bastion.stores.overlay_manifest import MANIFEST, READS
from bastion.stores.sqlite import SqliteStore

P = VPath.parse
Pair = tuple[Store, Store]


@pytest.fixture(params=["folder", "sqlite", "memory"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Pair:
    """A base holding ``/f0.md`` .. ``/f9.md`` and an empty layer, of one kind."""
    if request.param == "folder":
        (tmp_path / "base").mkdir()
        (tmp_path / "layer").mkdir()
        return LocalStore(tmp_path / "base"), LocalStore(tmp_path / "layer")
    if request.param == "sqlite":
        return SqliteStore(tmp_path / "base.db"), SqliteStore(tmp_path / "layer.db")
    return MemoryStore(), MemoryStore()


async def _filled(stores: Pair) -> Pair:
    for i in range(10):
        await stores[0].write(P(f"/f{i}.md"), f"base {i}\n".encode())
    return stores


Make = Callable[[], OverlayStore]


async def test_a_long_thread_keeps_a_bounded_memory_and_every_read(stores: Pair) -> None:
    base, layer = await _filled(stores)
    ov = OverlayStore(base, layer, reads_kept=4)
    for i in range(10):
        assert await ov.read_all(P(f"/f{i}.md")) == f"base {i}\n".encode()
        assert ov.reads.in_memory <= 4
    assert (await layer.stat(READS)).is_dir  # the older reads moved into the layer
    for i in (0, 9):  # one read long ago (in the layer now), one still in memory
        await base.write(P(f"/f{i}.md"), b"someone else\n")
        await ov.write(P(f"/f{i}.md"), b"based on what I read\n")
    await ov.write(P("/f5.md"), b"unchanged in the base: applies\n")
    report = await ov.apply()
    assert sorted(report.conflicts) == ["/f0.md", "/f9.md"]
    assert report.applied == ["/f5.md"]
    assert await base.read_all(P("/f0.md")) == b"someone else\n"
    assert await base.read_all(P("/f5.md")) == b"unchanged in the base: applies\n"


async def test_a_read_in_one_process_counts_in_another_sharing_the_layer(stores: Pair) -> None:
    base, layer = await _filled(stores)
    reader = OverlayStore(base, layer, reads_kept=2)
    for i in range(6):
        await reader.read_all(P(f"/f{i}.md"))
    await reader.reads.flush()
    await base.write(P("/f1.md"), b"someone else\n")
    writer = OverlayStore(base, layer)  # the same thread's layer, another process
    await writer.write(P("/f1.md"), b"based on the first read\n")
    assert (await writer.apply()).conflicts == ["/f1.md"]


async def test_once_the_layer_takes_a_path_its_old_read_is_forgotten(stores: Pair) -> None:
    base, layer = await _filled(stores)
    ov = OverlayStore(base, layer, reads_kept=1)
    await ov.read_all(P("/f1.md"))
    await ov.read_all(P("/f2.md"))  # f1's read moved into the layer
    await ov.write(P("/f1.md"), b"one\n")
    await ov.write(P("/f3.md"), b"three\n")
    assert (await ov.apply([P("/f1.md")])).applied == ["/f1.md"]
    assert await ov.read_all(P("/f1.md")) == b"one\n"  # the base's now
    await ov.write(P("/f1.md"), b"two\n")  # based on what apply wrote: no conflict
    report = await ov.apply()
    assert (report.applied, report.conflicts) == (["/f1.md", "/f3.md"], [])
    assert await base.read_all(P("/f1.md")) == b"two\n"


async def test_a_discard_keeps_what_was_read(stores: Pair) -> None:
    base, layer = await _filled(stores)
    ov = OverlayStore(base, layer, reads_kept=1)
    await ov.read_all(P("/f4.md"))
    await ov.read_all(P("/f5.md"))
    await ov.write(P("/f6.md"), b"dropped\n")
    await ov.discard()
    await base.write(P("/f4.md"), b"someone else\n")
    await base.write(P("/f5.md"), b"someone else\n")
    await ov.write(P("/f4.md"), b"from the first read\n")
    await ov.write(P("/f5.md"), b"from the first read\n")
    assert sorted((await ov.apply()).conflicts) == ["/f4.md", "/f5.md"]


async def test_the_read_log_is_no_name_a_caller_can_use(stores: Pair) -> None:
    base, layer = await _filled(stores)
    ov = OverlayStore(base, layer, reads_kept=1)
    for i in range(3):
        await ov.read_all(P(f"/f{i}.md"))
    shards = [e.path async for e in layer.walk(READS) if e.is_file]
    shard = shards.pop()
    for path in (READS, shard):
        with pytest.raises(NotFoundError):
            await ov.stat(path)
        with pytest.raises(NotFoundError):
            await ov.read_all(path)
        with pytest.raises(StoreError):
            await ov.write(path, b"{}")
    assert READS.name not in [e.path.name for e in await ov.list(P("/"))]
    assert await ov.changes() == {}


async def test_the_cached_manifest_sees_another_process_at_once(stores: Pair) -> None:
    base, layer = await _filled(stores)
    one, two = OverlayStore(base, layer), OverlayStore(base, layer)
    assert await one.read_all(P("/f1.md")) == b"base 1\n"
    await two.delete(P("/f1.md"))
    with pytest.raises(NotFoundError):
        await one.stat(P("/f1.md"))
    await two.write(P("/f1.md"), b"again\n")
    assert await one.read_all(P("/f1.md")) == b"again\n"
    await two.mkdir(P("/made"))
    assert await one.changes() == {"/f1.md": "write", "/made": "mkdir"}
    await one.discard([P("/f1.md")])
    assert await two.read_all(P("/f1.md")) == b"base 1\n"
    assert await two.changes() == {"/made": "mkdir"}


async def test_review_tells_each_change_over_the_base_and_its_conflict(stores: Pair) -> None:
    base, layer = await _filled(stores)
    ov = OverlayStore(base, layer)
    await ov.write(P("/f1.md"), b"changed\n")
    await ov.write(P("/new.md"), b"new\n")
    await ov.delete(P("/f2.md"))
    await ov.write(P("/f3.md"), b"mine\n")
    await base.write(P("/f3.md"), b"someone else\n")
    seen = {k: (c.action, c.status, c.conflict) for k, c in (await ov.review()).items()}
    assert seen == {
        "/f2.md": ("delete", "deleted", False),
        "/f1.md": ("write", "modified", False),
        "/f3.md": ("write", "modified", True),
        "/new.md": ("write", "added", False),
    }
    assert await ov.sides(P("/f1.md"), 1 << 20) == (b"base 1\n", b"changed\n", False)
    assert await ov.sides(P("/f2.md"), 1 << 20) == (b"base 2\n", None, False)
    assert await ov.sides(P("/f1.md"), 4) == (None, None, True)
    report = await ov.apply()
    assert report.conflicts == ["/f3.md"]  # what review foretold


async def test_a_folder_made_for_a_file_is_no_change_of_its_own(stores: Pair) -> None:
    base, layer = await _filled(stores)
    ov = OverlayStore(base, layer)
    await ov.makedirs(P("/new/deep"))
    await ov.write(P("/new/deep/a.md"), b"a\n")
    assert await ov.changes() == {"/new/deep/a.md": "write"}
    await ov.discard([P("/new/deep/a.md")])
    assert await ov.changes() == {"/new/deep": "mkdir"}  # made, and empty now
    assert (await ov.apply()).applied == ["/new/deep"]
    assert await base.list(P("/new/deep")) == []


@pytest.mark.parametrize("since", ["added", "changed", "nothing"])
async def test_a_folder_deleted_is_a_conflict_when_the_base_folder_changed_since(
    stores: Pair, since: str
) -> None:
    base, layer = await _filled(stores)
    await base.makedirs(P("/old"))
    await base.write(P("/old/a.md"), b"a\n")
    await base.write(P("/old/b.md"), b"b\n")
    ov = OverlayStore(base, layer)
    await ov.delete(P("/old"), recursive=True)
    if since == "added":
        await base.write(P("/old/new.md"), b"someone else's new file\n")
    elif since == "changed":
        await base.write(P("/old/a.md"), b"someone else's edit\n")
    expected = since != "nothing"
    assert (await ov.review())["/old"].conflict is expected
    report = await ov.apply()
    if expected:
        assert report.conflicts == ["/old"]
        assert (await base.stat(P("/old/a.md"))).is_file  # the base keeps its folder
        assert await ov.changes() == {"/old": "delete"}
        await ov.discard([P("/old")])
        assert await ov.changes() == {}
    else:
        assert (report.applied, report.conflicts) == (["/old"], [])
        assert not await base.exists(P("/old"))
    left = [e.path async for e in layer.walk(P("/")) if e.is_file and e.path != MANIFEST]
    assert left == []  # what the folder held is dropped with its deletion
