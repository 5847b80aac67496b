"""The read-back of a view, on a real folder written as a command would (no bubblewrap needed):
names judged as the kernel lists them, links never followed, special files never opened, swaps
in the middle of the walk finding nothing outside the view, deep trees walked with few
descriptors, the view removed whatever it holds.

Races are pinned by making the swap at the exact moment between the walk's look and its open
(the walk is a generator: the test acts while an entry is being handled)."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import unicodedata
from pathlib import Path

import pytest

from bastion.core.paths import VPath
from bastion.sandbox.readback import MAX_DEPTH, diff, written
from bastion.sandbox.snapshot import Change, Copied, Snapshot
from bastion.sandbox.tree import CHECKPOINT, Walk, ident, read_regular, remove_tree

CANARY = "canary-outside-the-view"
NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host folder beside the view, full of text that must never come back."""
    folder = tmp_path / "outside"
    (folder / "sub").mkdir(parents=True)
    (folder / "secret.txt").write_text(CANARY)
    (folder / "sub" / "deeper.txt").write_text(CANARY)
    return folder


def _snap(base: Path) -> Snapshot:
    view = base / "view"
    (view / "scratch").mkdir(parents=True)
    snap = Snapshot(view, root_id=ident(view.stat()))
    snap.dirs.add(VPath.parse("/scratch"))
    return snap


def _blob(changes: list[Change]) -> str:
    return repr([(c.key, c.kind, c.data, c.reason) for c in changes])


def _by_key(snap: Snapshot) -> dict[str, tuple[str, bytes, str]]:
    return {c.key: (c.kind, c.data, c.reason) for c in diff(snap)}


# -- names --------------------------------------------------------------------------------------


def test_each_name_is_judged_as_the_kernel_listed_it(tmp_path: Path) -> None:
    snap = _snap(tmp_path)
    scratch = os.fsencode(snap.root / "scratch")
    for name, text in (
        (NFC, "nfc"),
        (NFD, "nfd"),
        ("ok.txt", "ok"),
        ("bad\x01name", "ctl"),
        ("back\\slash", "bs"),
    ):
        (snap.root / "scratch" / name).write_text(text)
    with open(scratch + b"/not-utf8-\xff", "wb") as raw:
        raw.write(b"bytes")
    os.mkdir(scratch + b"/dir-\xfe")
    with open(scratch + b"/dir-\xfe/inside.txt", "wb") as raw:
        raw.write(b"below a refused name")
    found = _by_key(snap)
    assert found.pop(f"/scratch/{NFC}") == ("write", b"nfc", "")
    assert found.pop("/scratch/ok.txt") == ("write", b"ok", "")
    assert "NFC" in found.pop("/scratch/cafe\\u0301")[2]
    assert "not UTF-8" in found.pop("/scratch/not-utf8-\\xff")[2]
    assert "not UTF-8" in found.pop("/scratch/dir-\\xfe")[2]
    assert "control character" in found.pop("/scratch/bad\\x01name")[2]
    assert found.pop("/scratch/back\\\\slash")[0] == "refuse"
    assert found == {}  # nothing below a refused folder was looked at


def test_an_nfd_twin_of_a_copied_file_leaves_the_copy_alone(tmp_path: Path) -> None:
    snap = _snap(tmp_path)
    copy = snap.root / "scratch" / NFC
    copy.write_text("copied")
    snap.files[VPath.parse(f"/scratch/{NFC}")] = Copied("v1", b"", _stamp(copy))
    (snap.root / "scratch" / NFD).write_text("twin")
    found = _by_key(snap)
    assert list(found) == ["/scratch/cafe\\u0301"]  # no write, no delete of the copy
    assert found["/scratch/cafe\\u0301"][0] == "refuse"


def test_a_path_over_the_workspace_limit_is_refused(tmp_path: Path) -> None:
    snap = _snap(tmp_path)
    fd = os.open(snap.root / "scratch", os.O_RDONLY)
    try:
        for _ in range(20):  # 20 names of 250 bytes: past 4096 bytes
            os.mkdir("n" * 250, dir_fd=fd)
            inner = os.open("n" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    refused = [c for c in diff(snap) if c.kind == "refuse"]
    assert len(refused) == 1 and "too long" in refused[0].reason


# -- links and special files --------------------------------------------------------------------


def test_an_nfd_decoy_beside_an_nfc_link_brings_back_nothing_outside(
    tmp_path: Path, outside: Path
) -> None:
    snap = _snap(tmp_path)
    scratch = snap.root / "scratch"
    (scratch / NFD).write_text("decoy")
    (scratch / NFC).symlink_to(outside / "secret.txt")
    (scratch / "dir-link").symlink_to(outside)
    changes = diff(snap)
    assert CANARY not in _blob(changes)
    assert {c.key: c.kind for c in changes} == {
        "/scratch/cafe\\u0301": "refuse",
        f"/scratch/{NFC}": "refuse",
        "/scratch/dir-link": "refuse",
    }


def test_links_at_every_level_are_refused_and_never_entered(tmp_path: Path, outside: Path) -> None:
    snap = _snap(tmp_path)
    deep = snap.root / "scratch" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    for level in (snap.root, snap.root / "scratch", deep.parent.parent, deep.parent, deep):
        (level / "to-outside").symlink_to(outside)
        (level / "to-file").symlink_to(outside / "secret.txt")
        (level / "to-root").symlink_to("/")
    (snap.root / "scratch" / "a" / "b" / "c" / "real.txt").write_text("mine")
    changes = diff(snap)
    assert CANARY not in _blob(changes)
    assert [c.key for c in changes if c.kind == "write"] == ["/scratch/a/b/c/real.txt"]
    links = [c for c in changes if c.kind == "refuse"]
    assert len(links) == 15 and all("symbolic link" in c.reason for c in links)


def test_special_files_are_refused_without_being_opened() -> None:
    base = Path(tempfile.mkdtemp(prefix="rb-"))  # short: a socket's path has a small limit
    try:
        snap = _snap(base)
        scratch = snap.root / "scratch"
        os.mkfifo(scratch / "fifo")  # opening it for reading would block: it is never opened
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(scratch / "s"))
        made = {"/scratch/fifo", "/scratch/s"}
        if os.geteuid() == 0:  # only root makes device nodes
            os.mknod(scratch / "dev", stat.S_IFCHR | 0o600, os.makedev(1, 3))
            made.add("/scratch/dev")
        changes = diff(snap)
        assert {c.key for c in changes} == made
        assert all(c.reason.startswith("not a regular file") for c in changes)
    finally:
        remove_tree(base)


def test_what_is_swapped_in_after_the_look_is_not_read(tmp_path: Path, outside: Path) -> None:
    """A file swapped for a link, a FIFO or an outside file's hard link between the walk's
    look and its open: nothing outside is read, nothing blocks."""
    snap = _snap(tmp_path)
    scratch = snap.root / "scratch"
    for name in ("to-link", "to-fifo", "to-dir"):
        (scratch / name).write_text("inside")
    fd = os.open(snap.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for item in Walk(fd, 0, lambda item: item.depth):
            if item.depth != 2:
                continue
            target = scratch / item.name
            target.unlink()
            if item.name == "to-link":
                target.symlink_to(outside / "secret.txt")
            elif item.name == "to-fifo":
                os.mkfifo(target)
            else:
                target.mkdir()
            if item.name == "to-link":
                with pytest.raises(OSError):  # ELOOP: the link is not followed
                    read_regular(item, 1 << 20)
            else:
                assert read_regular(item, 1 << 20) is None  # opened without blocking, unread
    finally:
        os.close(fd)


def test_a_folder_swapped_after_the_look_is_not_entered(tmp_path: Path, outside: Path) -> None:
    snap = _snap(tmp_path)
    (snap.root / "scratch" / "d").mkdir()
    (snap.root / "scratch" / "e").mkdir()
    (snap.root / "scratch" / "e" / "mine.txt").write_text("mine")
    seen = []
    fd = os.open(snap.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk = Walk(fd, "", lambda item: item.name)
        for item in walk:
            seen.append(item.name)
            if item.name == "d":  # looked at as a folder: now a link to outside
                (snap.root / "scratch" / "d").rmdir()
                (snap.root / "scratch" / "d").symlink_to(outside)
            if item.name == "e":  # looked at: now another folder (a rename over it)
                (snap.root / "scratch" / "e").rename(snap.root / "scratch" / "e-old")
                (snap.root / "scratch" / "e").mkdir()
                (snap.root / "scratch" / "e" / "other.txt").write_text("other")
    finally:
        os.close(fd)
    assert "secret.txt" not in seen and "sub" not in seen
    assert "other.txt" not in seen and "mine.txt" not in seen
    assert walk.changed == ["d", "e"]  # reported: nothing below them counts as deleted


def test_an_ancestor_swapped_while_the_walk_is_below_it_is_left(
    tmp_path: Path, outside: Path
) -> None:
    """Below CHECKPOINT levels the walk opens a level again, name by name, when it comes back
    to it; a level swapped for a link (or another folder) meanwhile is not walked further."""
    snap = _snap(tmp_path)
    chain = snap.root.joinpath("scratch", *["c"] * (CHECKPOINT + 1))
    (chain / "first").mkdir(parents=True)
    (chain / "second").mkdir()
    (chain / "second" / "mine.txt").write_text("mine")
    swapped = chain.parent  # a level with no descriptor held while the walk is below it
    seen: list[str] = []
    fd = os.open(snap.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk = Walk(fd, (), lambda item: (*item.parent, item.name))
        for item in walk:
            seen.append(item.name)
            if item.name == "first":
                swapped.rename(swapped.with_name("moved"))
                swapped.symlink_to(outside)
    finally:
        os.close(fd)
    assert "second" not in seen and "secret.txt" not in seen
    assert len(walk.changed) == 1 and walk.unread == []


# -- deep and wide -------------------------------------------------------------------------------


def _chain(top: Path, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_deep_tree_is_walked_with_few_descriptors_and_refused_past_the_depth(
    tmp_path: Path,
) -> None:
    snap = _snap(tmp_path / "folder")
    _chain(snap.root / "scratch", 1100)
    try:
        _walk_and_diff_deep(snap)
    finally:
        remove_tree(tmp_path / "folder")  # pytest's own clean-up recurses


def _walk_and_diff_deep(snap: Snapshot) -> None:
    before = _open_fds()
    most = 0
    fd = os.open(snap.root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for item in Walk(fd, 0, lambda item: item.depth):
            most = max(most, _open_fds() - before)
            deepest = item.depth
    finally:
        os.close(fd)
    assert deepest == 1102 and most <= 1102 // CHECKPOINT + 4
    changes = diff(snap)
    assert [c.kind for c in changes] == ["mkdir"] * (MAX_DEPTH - 1) + ["refuse"]
    assert len(changes[-1].path.parts) == MAX_DEPTH + 1
    assert "folders deep" in changes[-1].reason
    assert written(snap) == 4096 * 1101


def test_removing_the_view_goes_however_deep_and_follows_no_link(
    tmp_path: Path, outside: Path
) -> None:
    base = tmp_path / "folder"
    snap = _snap(base)
    _chain(snap.root / "scratch", 1100)
    locked = snap.root / "scratch" / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "x.txt").write_text("x")
    (snap.root / "scratch" / "out").symlink_to(outside)
    (locked / "inner" / "out").symlink_to(outside / "sub")
    locked.chmod(0)
    remove_tree(base)
    assert not base.exists()
    assert (outside / "secret.txt").read_text() == CANARY
    assert (outside / "sub" / "deeper.txt").read_text() == CANARY


def test_more_than_the_written_limit_brings_nothing_back(tmp_path: Path) -> None:
    snap = _snap(tmp_path)
    snap.read_cap = 10
    (snap.root / "scratch" / "big.txt").write_text("x" * 11)
    (snap.root / "scratch" / "new").mkdir()
    changes = diff(snap)
    assert {c.kind for c in changes} == {"refuse"}
    assert all("written-bytes limit" in c.reason for c in changes)
    many = _snap(tmp_path / "many")
    many.read_cap = 3 * 4096  # room for three new entries
    for n in range(5):
        (many.root / "scratch" / f"empty-{n}").touch()
    assert all("written-bytes limit" in c.reason for c in diff(many))


def _stamp(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return (info.st_ino, info.st_size, info.st_ctime_ns)
