"""The local store's listings within one call (issue 31): a folder is read once, its entries
and its odd names from the same pass, and the folders a call is about to list are listed in
the same trip to a worker thread. ``list`` of a folder is one trip, ``glob`` one per two
levels of folders at most; the answers are those of separate listings, and no link is
followed on the way."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bastion import LocalStore, Mount, Policy, Workspace
from bastion.core.listings import held_listings
from bastion.core.offload import Workers
from bastion.core.paths import VPath
from bastion.stores._fd import TEMP_PREFIX

LISTINGS = ("scan_ahead", "listed", "odd_in", "scan_for")


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the listing calls sent to worker threads, in order (a stat or a read goes
    to a thread only when the kernel's caches cannot answer it: not counted here)."""
    seen: list[str] = []
    run = Workers.run

    async def counted(self: Workers, fn: Callable[..., Any], *args: Any) -> Any:
        name = getattr(fn, "__name__", repr(fn))
        if name in LISTINGS:
            seen.append(name)
        return await run(self, fn, *args)

    monkeypatch.setattr(Workers, "run", counted)
    return seen


def _tree(root: Path) -> None:
    for p in range(3):
        for q in range(3):
            folder = root / f"p{p}" / f"q{q}"
            folder.mkdir(parents=True)
            for n in range(5):
                (folder / f"{n}.yaml").write_text(f"n: {n}\n")
                (folder / f"{n}.txt").write_text("text\n")
    flat = root / "flat"
    flat.mkdir()
    for n in range(50):
        (flat / f"{n:02}.txt").write_text("x" * n)


async def test_a_folder_is_listed_in_one_trip(tmp_path: Path, hops: list[str]) -> None:
    _tree(tmp_path)
    ws = Workspace([Mount.of("/d", LocalStore(tmp_path))], policy=Policy.allow_all())
    await ws.list("/d/flat")
    hops.clear()
    listed = await ws.list("/d/flat")
    assert hops == ["scan_ahead"]
    assert [(e.path.name, e.size) for e in listed] == [(f"{n:02}.txt", n) for n in range(50)]
    await ws.list("/d/p0")
    hops.clear()
    listed = await ws.list("/d/p0")  # its subfolders are asked whether they are shown
    assert hops == ["scan_ahead"]
    assert [str(e.path) for e in listed] == ["/d/p0/q0", "/d/p0/q1", "/d/p0/q2"]


async def test_glob_lists_a_tree_in_few_trips(tmp_path: Path, hops: list[str]) -> None:
    _tree(tmp_path)
    ws = Workspace([Mount.of("/d", LocalStore(tmp_path))], policy=Policy.allow_all())
    first = await ws.glob("**/*.yaml", path="/d")
    hops.clear()
    found = await ws.glob("**/*.yaml", path="/d")
    assert found == first and len(found) == 45
    assert set(hops) == {"scan_ahead"} and len(hops) <= 2, hops  # 3 levels of folders


async def test_a_narrow_glob_lists_only_what_it_needs(tmp_path: Path, hops: list[str]) -> None:
    """A pattern without ``**`` lists no folder below what it needs; the folders it matches
    are asked whether they are shown in one trip together."""
    _tree(tmp_path)
    ws = Workspace([Mount.of("/d", LocalStore(tmp_path))], policy=Policy.allow_all())
    await ws.glob("p0/*", path="/d")
    hops.clear()
    found = await ws.glob("p0/*", path="/d")
    assert [str(e.path) for e in found] == ["/d/p0/q0", "/d/p0/q1", "/d/p0/q2"]
    # the start (and the first subfolder, to tell the start is shown), then the folders it
    # matches together
    assert set(hops) == {"scan_ahead"} and len(hops) <= 3, hops
    await ws.glob("flat/0*.txt", path="/d")
    hops.clear()
    found = await ws.glob("flat/0*.txt", path="/d")
    assert len(found) == 10 and hops == ["scan_ahead"]


async def test_one_pass_gives_the_odd_names_of_its_own(tmp_path: Path) -> None:
    """Entries and odd names read in one pass are those of two separate passes: links,
    special files and names in another normalization form are odd, temporary files neither."""
    (tmp_path / "plain.txt").write_text("p\n")
    (tmp_path / "dir").mkdir()
    os.symlink("/etc/hostname", tmp_path / "link.txt")
    os.symlink(tmp_path / "dir", tmp_path / "linkdir")
    os.mkfifo(tmp_path / "fifo")
    nfd = unicodedata.normalize("NFD", "café.txt")
    (tmp_path / nfd).write_text("nfd\n")
    (tmp_path / f"{TEMP_PREFIX}abc").write_text("tmp\n")
    store = LocalStore(tmp_path)
    apart = (await store.list(VPath.ROOT), await store.odd_names(VPath.ROOT))
    with held_listings():
        together = (await store.list(VPath.ROOT), await store.odd_names(VPath.ROOT))
    assert sorted(e.path.name for e in together[0]) == ["dir", "plain.txt"]
    assert together[1] == frozenset({"link.txt", "linkdir", "fifo", "café.txt"})
    assert sorted(together[0], key=lambda e: e.path.parts) == sorted(
        apart[0], key=lambda e: e.path.parts
    )
    assert together[1] == apart[1]


async def test_no_link_is_followed_on_the_way(tmp_path: Path) -> None:
    """A link to a folder outside the root, anywhere in the tree, is never gone into: the
    folders listed ahead are opened as the store opens any folder, without following links."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "leak.yaml").write_text("secret: 1\n")
    (outside / "deep" / "leak2.yaml").write_text("secret: 2\n")
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "ok.yaml").write_text("ok: 1\n")
    os.symlink(outside, root / "a" / "b" / "escape")
    os.symlink(outside, root / "escape")
    ws = Workspace([Mount.of("/d", LocalStore(root))], policy=Policy.allow_all())
    found = [str(e.path) for e in await ws.glob("**/*", path="/d")]
    assert found == ["/d/a", "/d/a/b", "/d/a/ok.yaml"]
    assert [str(e.path) for e in await ws.list("/d", recursive=True)] == found
