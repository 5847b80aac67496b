"""A read-only local mount is bound from its host folder, not copied, exactly when that shows
the principal what the guarded view shows; otherwise it is copied, and hidden files stay out."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import READER, require_bwrap

from bastion import LocalStore, MemoryStore, Mount, Policy, Rule, Workspace
from bastion.sandbox.view import materialize

pytestmark = pytest.mark.usefixtures("bwrap")

POLICY = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


@pytest.fixture
def folder() -> Iterator[Path]:
    """A corpus in a folder others may enter (pytest's own temporary folders are private)."""
    base = Path(tempfile.mkdtemp(prefix="bastion-bind-"))
    try:
        yield _corpus(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _corpus(base: Path) -> Path:
    base.chmod(0o755)
    root = base / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nplain words\n")
    (root / "sub" / "b.txt").write_text("more words\n")
    for path in (root, root / "sub"):
        path.chmod(0o755)
    for path in (root / "a.md", root / "sub" / "b.txt"):
        path.chmod(0o644)
    return root


def _workspace(root: Path) -> Workspace:
    return Workspace(
        [
            Mount.of("/corpus", LocalStore(root), scope="read_only"),
            Mount.of("/scratch", MemoryStore()),
        ],
        policy=POLICY,
        principal=READER,
    )


async def _bound(ws: Workspace, tmp_path: Path) -> list[str]:
    view = tmp_path / "probe-view"
    view.mkdir()
    snap = await materialize(ws, view, None)
    try:
        return list(snap.bound)
    finally:
        snap.close()


async def test_a_fully_visible_folder_is_bound_read_only(folder: Path, tmp_path: Path) -> None:
    ws = _workspace(folder)
    assert await _bound(ws, tmp_path) == ["/corpus"]
    result = await ws.run("cat /corpus/a.md /corpus/sub/b.txt; echo x > /corpus/new.md")
    assert result.stdout == "# A\n\nplain words\nmore words\n"
    assert "Read-only file system" in result.stderr
    assert result.changed == () and result.refused == {}
    assert not (folder / "new.md").exists()


async def test_a_folder_with_a_hidden_file_is_copied_without_it(
    folder: Path, tmp_path: Path
) -> None:
    (folder / "pay.md").write_text("---\nclassification: confidential\n---\nzebra salary\n")
    (folder / "pay.md").chmod(0o644)
    ws = _workspace(folder)
    assert await _bound(ws, tmp_path) == []
    result = await ws.run("ls -R /corpus; grep -r zebra /corpus; echo $?")
    assert "pay.md" not in result.stdout and "zebra" not in result.stdout
    assert result.stdout.splitlines()[-1] == "1"  # grep found nothing


async def test_a_folder_with_a_link_is_copied(folder: Path, tmp_path: Path) -> None:
    os.symlink("/etc/passwd", folder / "passwd")
    ws = _workspace(folder)
    assert await _bound(ws, tmp_path) == []
    result = await ws.run("ls /corpus")
    assert result.stdout.split() == ["a.md", "sub"]


async def test_a_folder_others_cannot_reach_is_copied(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    root = _corpus(private)
    private.chmod(0o700)
    ws = _workspace(root)
    assert await _bound(ws, tmp_path) == []
    result = await ws.run("cat /corpus/sub/b.txt")
    assert result.stdout == "more words\n"
