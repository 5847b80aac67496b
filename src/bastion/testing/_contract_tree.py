"""The store contract, the tree: delete, list, mkdir, rename, and the derived methods."""

from __future__ import annotations

import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
)
from bastion.core.models import EntryKind
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.testing._contract_support import (
    ALL_BYTES,
    WALK_TREE,
    ContractBase,
    MiB,
    P,
    blob,
    build,
    listing,
    walk_all,
)

__all__ = ["TreeContract"]


class TreeContract(ContractBase):
    """The store contract, the tree: delete, list, mkdir, rename, and the derived methods."""

    # -- delete ------------------------------------------------------------------------------

    async def test_delete_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        await store.write(P("/b.txt"), b"y")
        await store.delete(P("/a.txt"))
        assert not await store.exists(P("/a.txt"))
        with pytest.raises(NotFoundError):
            await store.read_all(P("/a.txt"))
        assert await store.read_all(P("/b.txt")) == b"y"

    async def test_delete_recursive_on_a_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        await store.delete(P("/a.txt"), recursive=True)
        assert not await store.exists(P("/a.txt"))

    async def test_delete_empty_directory(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.delete(P("/d"))
        assert not await store.exists(P("/d"))
        assert await store.list(VPath.ROOT) == []

    async def test_delete_non_empty_directory_needs_recursive(self, store: Store) -> None:
        await build(store, {"/d": None, "/d/a.txt": b"a", "/d/sub": None, "/d/sub/b": b"b"})
        with pytest.raises(DirectoryNotEmptyError):
            await store.delete(P("/d"))
        assert await store.read_all(P("/d/a.txt")) == b"a"
        assert await store.read_all(P("/d/sub/b")) == b"b"
        assert len(await walk_all(store, "/d")) == 3

    async def test_delete_recursive(self, store: Store) -> None:
        await build(
            store,
            {
                "/d": None,
                "/d/a.txt": b"a",
                "/d/sub": None,
                "/d/sub/deeper": None,
                "/d/sub/deeper/c": b"c",
                "/d/empty": None,
                "/keep.txt": b"keep",
            },
        )
        await store.delete(P("/d"), recursive=True)
        assert not await store.exists(P("/d"))
        assert not await store.exists(P("/d/sub/deeper/c"))
        assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/keep.txt"]
        await store.mkdir(P("/d"))  # the name is free again, and empty
        assert await store.list(P("/d")) == []

    async def test_delete_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.delete(P("/nope"))
        with pytest.raises(NotFoundError):
            await store.delete(P("/nope"), recursive=True)
        with pytest.raises(NotFoundError):
            await store.delete(P("/no/such/file"))

    async def test_delete_root_is_refused(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        with pytest.raises(OperationError):
            await store.delete(VPath.ROOT, recursive=True)
        assert await store.read_all(P("/a.txt")) == b"x"

    # -- list --------------------------------------------------------------------------------

    async def test_list_direct_children(self, store: Store) -> None:
        await build(
            store,
            {
                "/d": None,
                "/d/a.txt": b"12345",
                "/d/empty.txt": b"",
                "/d/sub": None,
                "/d/sub/deep.txt": b"deep",
                "/top.txt": b"top",
            },
        )
        assert await listing(store, "/d") == {
            "/d/a.txt": (EntryKind.FILE, 5),
            "/d/empty.txt": (EntryKind.FILE, 0),
            "/d/sub": (EntryKind.DIRECTORY, 0),
        }
        root = await store.list(VPath.ROOT)
        assert {str(i.path): i.kind for i in root} == {
            "/d": EntryKind.DIRECTORY,
            "/top.txt": EntryKind.FILE,
        }
        files = {i.path: i for i in await store.list(P("/d")) if i.is_file}
        for path, info in files.items():
            assert info.version == (await store.stat(path)).version

    async def test_list_empty(self, store: Store) -> None:
        assert await store.list(VPath.ROOT) == []
        await store.mkdir(P("/d"))
        assert await store.list(P("/d")) == []

    async def test_list_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        with pytest.raises(NotADirectoryError_):
            await store.list(P("/a.txt"))

    async def test_list_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.list(P("/nope"))

    # -- mkdir -------------------------------------------------------------------------------

    async def test_mkdir(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.mkdir(P("/d/e"))
        assert (await store.stat(P("/d/e"))).is_dir
        assert await listing(store, "/d") == {"/d/e": (EntryKind.DIRECTORY, 0)}

    async def test_mkdir_exists(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.write(P("/d/keep"), b"k")
        with pytest.raises(AlreadyExistsError):
            await store.mkdir(P("/d"))
        assert await store.read_all(P("/d/keep")) == b"k"
        await store.write(P("/f"), b"file")
        with pytest.raises(AlreadyExistsError):
            await store.mkdir(P("/f"))
        assert await store.read_all(P("/f")) == b"file"
        with pytest.raises(AlreadyExistsError):
            await store.mkdir(VPath.ROOT)

    async def test_mkdir_missing_parent(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.mkdir(P("/a/b"))
        assert not await store.exists(P("/a"))

    async def test_mkdir_parent_is_a_file(self, store: Store) -> None:
        await store.write(P("/f"), b"file")
        with pytest.raises(NotADirectoryError_):
            await store.mkdir(P("/f/d"))
        assert await store.read_all(P("/f")) == b"file"

    # -- rename ------------------------------------------------------------------------------

    async def test_rename_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"content")
        await store.rename(P("/a.txt"), P("/b.txt"))
        assert not await store.exists(P("/a.txt"))
        assert await store.read_all(P("/b.txt")) == b"content"
        await store.mkdir(P("/d"))
        await store.rename(P("/b.txt"), P("/d/c.txt"))  # into another directory
        assert await store.read_all(P("/d/c.txt")) == b"content"
        assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/d"]

    async def test_rename_directory(self, store: Store) -> None:
        await build(
            store,
            {"/src": None, "/src/a.txt": b"a", "/src/sub": None, "/src/sub/b.txt": b"b"},
        )
        await store.mkdir(P("/other"))
        await store.rename(P("/src"), P("/other/dst"))
        assert not await store.exists(P("/src"))
        assert await store.read_all(P("/other/dst/a.txt")) == b"a"
        assert await store.read_all(P("/other/dst/sub/b.txt")) == b"b"
        assert {str(i.path) for i in await walk_all(store, "/other")} == {
            "/other/dst",
            "/other/dst/a.txt",
            "/other/dst/sub",
            "/other/dst/sub/b.txt",
        }

    @pytest.mark.parametrize(
        ("src", "dst"),
        [("/a.txt", "/b.txt"), ("/a.txt", "/d"), ("/d", "/b.txt"), ("/d", "/e")],
    )
    async def test_rename_onto_existing(self, store: Store, src: str, dst: str) -> None:
        tree: dict[str, bytes | None] = {
            "/a.txt": b"a",
            "/b.txt": b"b",
            "/d": None,
            "/d/in-d": b"in d",
            "/e": None,
        }
        await build(store, tree)
        with pytest.raises(AlreadyExistsError):
            await store.rename(P(src), P(dst))
        for raw, content in tree.items():
            if content is None:
                assert (await store.stat(P(raw))).is_dir
            else:
                assert await store.read_all(P(raw)) == content
        assert await store.list(P("/e")) == []

    async def test_rename_into_own_subtree_is_refused(self, store: Store) -> None:
        await build(store, {"/a": None, "/a/b": None, "/a/b/f": b"f"})
        for dst in ("/a/b/c", "/a/new", "/a/b/f/x"):
            with pytest.raises(OperationError):
                await store.rename(P("/a"), P(dst))
        with pytest.raises(OperationError):
            await store.rename(P("/a"), P("/a"))
        assert {str(i.path) for i in await walk_all(store)} == {"/a", "/a/b", "/a/b/f"}
        assert await store.read_all(P("/a/b/f")) == b"f"

    async def test_rename_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.rename(P("/nope"), P("/dst"))
        with pytest.raises(NotFoundError):
            await store.rename(P("/no/such"), P("/dst"))
        assert not await store.exists(P("/dst"))

    async def test_rename_to_a_missing_parent(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"a")
        with pytest.raises(NotFoundError):
            await store.rename(P("/a.txt"), P("/no/such/b.txt"))
        assert await store.read_all(P("/a.txt")) == b"a"

    async def test_rename_to_a_parent_that_is_a_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"a")
        await store.write(P("/f"), b"f")
        with pytest.raises(NotADirectoryError_):
            await store.rename(P("/a.txt"), P("/f/b.txt"))
        assert await store.read_all(P("/a.txt")) == b"a"
        assert await store.read_all(P("/f")) == b"f"

    # -- derived: exists, read_all, makedirs -------------------------------------------------

    async def test_exists(self, store: Store) -> None:
        await build(store, {"/d": None, "/d/f": b"x"})
        assert await store.exists(VPath.ROOT)
        assert await store.exists(P("/d"))
        assert await store.exists(P("/d/f"))
        assert not await store.exists(P("/nope"))
        assert not await store.exists(P("/d/nope"))
        assert not await store.exists(P("/nope/deeper"))

    async def test_read_all(self, store: Store) -> None:
        await store.write(P("/f"), b"whole content")
        assert await store.read_all(P("/f")) == b"whole content"

    async def test_makedirs_nested(self, store: Store) -> None:
        await store.makedirs(P("/a/b/c"))
        for raw in ("/a", "/a/b", "/a/b/c"):
            assert (await store.stat(P(raw))).is_dir
        assert await store.list(P("/a/b/c")) == []
        await store.makedirs(P("/a/b/x/y"))  # partly existing
        assert (await store.stat(P("/a/b/x/y"))).is_dir
        assert await listing(store, "/a/b") == {
            "/a/b/c": (EntryKind.DIRECTORY, 0),
            "/a/b/x": (EntryKind.DIRECTORY, 0),
        }

    async def test_makedirs_exist_ok(self, store: Store) -> None:
        await store.makedirs(P("/a/b"))
        await store.write(P("/a/b/keep"), b"k")
        await store.makedirs(P("/a/b"))  # exist_ok defaults to True
        await store.makedirs(P("/a/b"), exist_ok=True)
        await store.makedirs(P("/a"), exist_ok=True)
        with pytest.raises(AlreadyExistsError):
            await store.makedirs(P("/a/b"), exist_ok=False)
        await store.makedirs(P("/a/new"), exist_ok=False)  # a new leaf is fine
        assert (await store.stat(P("/a/new"))).is_dir
        assert await store.read_all(P("/a/b/keep")) == b"k"
        await store.makedirs(VPath.ROOT)  # the root always exists

    async def test_makedirs_through_a_file(self, store: Store) -> None:
        await store.write(P("/f"), b"file")
        with pytest.raises(NotADirectoryError_):
            await store.makedirs(P("/f/a/b"))
        with pytest.raises(NotADirectoryError_):
            await store.makedirs(P("/f"))
        assert await store.read_all(P("/f")) == b"file"

    # -- derived: walk -----------------------------------------------------------------------

    async def test_walk_everything_parents_first(self, store: Store) -> None:
        await build(store, WALK_TREE)
        entries = await walk_all(store)
        paths = [str(i.path) for i in entries]
        assert sorted(paths) == sorted(WALK_TREE)
        assert len(paths) == len(set(paths))
        position = {p: n for n, p in enumerate(paths)}
        for p in paths:
            parent = str(P(p).parent)
            if parent != "/":
                assert position[parent] < position[p], f"{parent} after {p} in {paths}"
        for info in entries:
            expected = WALK_TREE[str(info.path)]
            if expected is None:
                assert info.is_dir
            else:
                assert info.is_file
                assert info.size == len(expected)

    async def test_walk_max_depth(self, store: Store) -> None:
        await build(store, WALK_TREE)
        one = {str(i.path) for i in await walk_all(store, max_depth=1)}
        assert one == {"/a", "/e", "/top.txt"}
        two = {str(i.path) for i in await walk_all(store, max_depth=2)}
        assert two == one | {"/a/x.txt", "/a/b"}
        three = {str(i.path) for i in await walk_all(store, max_depth=3)}
        assert three == two | {"/a/b/y.txt", "/a/b/c"}
        assert {str(i.path) for i in await walk_all(store, max_depth=10)} == set(WALK_TREE)

    async def test_walk_a_subtree(self, store: Store) -> None:
        await build(store, WALK_TREE)
        below = {str(i.path) for i in await walk_all(store, "/a/b")}
        assert below == {"/a/b/y.txt", "/a/b/c", "/a/b/c/z.txt"}  # not /a/b itself
        assert {str(i.path) for i in await walk_all(store, "/a", max_depth=1)} == {
            "/a/x.txt",
            "/a/b",
        }
        assert await walk_all(store, "/e") == []

    async def test_walk_empty_and_errors(self, store: Store) -> None:
        assert await walk_all(store) == []
        await store.write(P("/f"), b"x")
        with pytest.raises(NotADirectoryError_):
            await walk_all(store, "/f")
        with pytest.raises(NotFoundError):
            await walk_all(store, "/nope")

    # -- derived: copy_file ------------------------------------------------------------------

    async def test_copy_file_small(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        src = await store.write(P("/a.bin"), ALL_BYTES)
        info = await store.copy_file(P("/a.bin"), P("/d/b.bin"))
        assert info.path == P("/d/b.bin")
        assert info.size == 256
        assert info.version == (await store.stat(P("/d/b.bin"))).version
        assert await store.read_all(P("/d/b.bin")) == ALL_BYTES
        assert await store.read_all(P("/a.bin")) == ALL_BYTES
        assert (await store.stat(P("/a.bin"))).version == src.version

    @pytest.mark.parametrize("size", [MiB, MiB + 1, 2 * MiB + 12345])
    async def test_copy_file_large(self, store: Store, size: int) -> None:
        data = blob(size, seed=size)
        await store.write(P("/big.bin"), data)
        info = await store.copy_file(P("/big.bin"), P("/copy.bin"))
        assert info.size == size
        assert (await store.stat(P("/copy.bin"))).size == size
        assert await store.read_all(P("/copy.bin")) == data
        assert await store.read_all(P("/big.bin")) == data

    async def test_copy_file_overwrite_flag(self, store: Store) -> None:
        await store.write(P("/src"), b"new content")
        await store.write(P("/dst"), b"old content that is longer")
        with pytest.raises(AlreadyExistsError):
            await store.copy_file(P("/src"), P("/dst"))
        assert await store.read_all(P("/dst")) == b"old content that is longer"
        await store.copy_file(P("/src"), P("/dst"), overwrite=True)
        assert await store.read_all(P("/dst")) == b"new content"

    async def test_copy_file_large_overwrite(self, store: Store) -> None:
        data = blob(3 * MiB + 7, seed=1)
        await store.write(P("/src"), data)
        await store.write(P("/dst"), blob(4 * MiB, seed=2))
        with pytest.raises(AlreadyExistsError):
            await store.copy_file(P("/src"), P("/dst"))
        await store.copy_file(P("/src"), P("/dst"), overwrite=True)
        assert await store.read_all(P("/dst")) == data

    async def test_copy_file_errors(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.write(P("/f"), b"x")
        with pytest.raises(NotFoundError):
            await store.copy_file(P("/nope"), P("/dst"))
        with pytest.raises(IsADirectoryError_):
            await store.copy_file(P("/d"), P("/dst"))
        with pytest.raises(NotFoundError):
            await store.copy_file(P("/f"), P("/no/such/dst"))
        with pytest.raises(IsADirectoryError_):
            await store.copy_file(P("/f"), P("/d"), overwrite=True)
        assert not await store.exists(P("/dst"))
        assert (await store.stat(P("/d"))).is_dir
