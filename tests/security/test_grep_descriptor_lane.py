"""grep's local fast lane (``workspace.grep_local``) reads files by descriptors the store opens
confined below its root, and matches only bytes of the version the guard decided on. Real
races, on a real disk: a file or a folder swapped for a link out of the root while grep runs,
a file whose labels tighten and loosen between its listing and its read, hidden files that
must answer as absent ones, and hostile patterns that must stay bounded on this lane too."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.workspace import grep

READER = Principal.of("reader", clearance="internal")
CLEARED = Principal.of("cleared", clearance="restricted")
SECRET = "needle OUTSIDE-SECRET\n"
RESTRICTED = "---\nclassification: restricted\n---\nneedle TOPSECRET\n"
ROUNDS = 60


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    for i in range(40):
        (root / f"f{i:02}.txt").write_text(f"needle inside {i}\n")
        (root / "sub" / f"s{i:02}.txt").write_text(f"needle below {i}\n")
    (root / "v.txt").write_text("needle victim\n")
    (outside / "secret.txt").write_text(SECRET)
    (outside / "s00.txt").write_text(SECRET)
    return root, outside


@contextmanager
def _running(step: Callable[[int], None]) -> Iterator[list[int]]:
    """``step(i)`` over and over in a thread while the body runs; yields the step count."""
    stop = threading.Event()
    count = [0]
    failed: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                step(count[0])
                count[0] += 1
        except BaseException as exc:  # reported after the body
            failed.append(exc)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield count
    finally:
        stop.set()
        thread.join()
    assert failed == []


def _escapes(ws: Workspace, mount: str, secret: str) -> int:
    escaped = 0
    for _ in range(ROUNDS):
        found = ws.sync().grep("needle", mount, context=1)
        escaped += secret in found.format() or secret in repr(found.to_dict())
    return escaped


def test_a_file_swapped_for_a_link_out_of_the_root_is_never_read(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    ws = Workspace([Mount.of("/r", LocalStore(root))], policy=Policy.allow_all())
    link, plain = tmp_path / "link", tmp_path / "plain"

    def swap(i: int) -> None:
        if i % 2:
            link.unlink(missing_ok=True)
            link.symlink_to(outside / "secret.txt")
            os.replace(link, root / "v.txt")
        else:
            plain.write_text("needle victim\n")
            os.replace(plain, root / "v.txt")

    with _running(swap) as steps:
        assert _escapes(ws, "/r", "OUTSIDE-SECRET") == 0
    assert steps[0] > 0


def test_a_folder_swapped_for_a_link_out_of_the_root_is_never_read(tmp_path: Path) -> None:
    root, outside = _tree(tmp_path)
    ws = Workspace([Mount.of("/r", LocalStore(root))], policy=Policy.allow_all())
    aside = tmp_path / "aside"

    def swap(i: int) -> None:
        if i % 2 == 0:
            os.rename(root / "sub", aside)
            (root / "sub").symlink_to(outside, target_is_directory=True)
        else:
            (root / "sub").unlink()
            os.rename(aside, root / "sub")

    with _running(swap) as steps:
        assert _escapes(ws, "/r", "OUTSIDE-SECRET") == 0
    assert steps[0] > 0


def _labelled(tmp_path: Path) -> tuple[Path, Workspace, Workspace]:
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(30):
        (root / f"open{i:02}.txt").write_text(f"needle open {i}\n")
    store = LocalStore(root)
    admin = Workspace([Mount.of("/docs", store)], policy=Policy.allow_all(), principal=CLEARED)
    reader = Workspace(admin.mounts, policy=Policy.allow_all(), principal=READER)
    return root, admin, reader


@pytest.mark.parametrize("in_place", [False, True])
def test_a_file_tightened_and_loosened_while_grep_runs_never_shows_its_secret(
    tmp_path: Path, in_place: bool
) -> None:
    """In place, same size and inode: two rewrites within one tick of the file's clock share
    a version, so labels cached for it may come from other bytes; before grep decided a
    matching file on the labels of the bytes matched, this let the secret out ~1 grep in 200."""
    root, _, reader = _labelled(tmp_path)
    target, fresh = root / "flip.txt", tmp_path / "fresh"
    public = "needle public flip\n".ljust(len(RESTRICTED) - 1, "x") + "\n"
    target.write_text(public)

    def flip(i: int) -> None:
        text = RESTRICTED if i % 2 else public
        if in_place:  # same inode and size: only the times move
            with open(target, "r+b") as f:
                f.write(text.encode())
        else:
            fresh.write_text(text)
            os.replace(fresh, target)

    with _running(flip) as steps:
        assert _escapes(reader, "/docs", "TOPSECRET") == 0
    assert steps[0] > 0


def test_a_hidden_file_answers_as_an_absent_one(tmp_path: Path) -> None:
    root, admin, reader = _labelled(tmp_path)
    (root / "sub").mkdir()
    (root / "sub" / "only.txt").write_text(RESTRICTED)
    (root / "hidden.txt").write_text(RESTRICTED)
    with_hidden = reader.sync().grep("needle", "/docs", context=2)
    assert "TOPSECRET" not in with_hidden.format()
    assert admin.sync().grep("TOPSECRET", "/docs").files_matched == 2  # they are there
    (root / "hidden.txt").unlink()
    (root / "sub" / "only.txt").unlink()
    (root / "sub").rmdir()
    assert reader.sync().grep("needle", "/docs", context=2) == with_hidden
    assert with_hidden.files_searched == 30


HOSTILE = r"a[a-j ]{900}Z"


def test_a_hostile_pattern_stops_at_the_budget_on_the_local_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pick = random.Random(7).choice
    (tmp_path / "1-long.txt").write_text("".join(pick("abcdefghij ") for _ in range(2_000_000)))
    (tmp_path / "2-words.txt").write_bytes(b"needle\n")
    ws = Workspace([Mount.of("/h", LocalStore(tmp_path))], policy=Policy.allow_all())
    monkeypatch.setattr(grep, "GREP_BUDGET_S", 0.01)
    result = ws.sync().grep(HOSTILE, "/h", regex=True)
    assert result.budget_exhausted and result.truncated
    assert result.matches == ()
    assert result.files_searched == 1  # the file after the first was never matched
    assert "time budget ran out" in result.format()
