"""The sandbox over an overlay mount: the command sees the merged view (the layer over the
base), what it writes lands in the layer (the thread's own when the view acts in one), and the
base folder on disk is never written — not even when the mount is read-only and its base is a
plain host folder the sandbox would otherwise bind directly."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import require_bwrap

from bastion import Policy, Principal, Rule, Workspace
from bastion.config import MountConfig

pytestmark = pytest.mark.usefixtures("bwrap")

POLICY = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))
ME = Principal.of("me", clearance="internal")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


@pytest.fixture
def base() -> Iterator[Path]:
    """A base folder others may enter and read: one the sandbox could bind as it is."""
    top = Path(tempfile.mkdtemp(prefix="bastion-overlay-"))
    top.chmod(0o755)
    root = top / "project"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("base a\n")
    (root / "sub" / "b.txt").write_text("base b\n")
    for path in (root, root / "sub"):
        path.chmod(0o755)
    for path in (root / "a.md", root / "sub" / "b.txt"):
        path.chmod(0o644)
    try:
        yield root
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry of the folder: its content (files) and its modification time."""
    return {
        str(p.relative_to(root)): (p.read_text() if p.is_file() else "/", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def _ws(base: Path, scope: str = "read_write") -> Workspace:
    mount = MountConfig("/code", "file:project", scope=scope, overlay="file:layers")  # type: ignore[arg-type]
    return Workspace([mount.open(base.parent)], policy=POLICY, principal=ME)


async def test_a_command_writes_into_the_layer_and_the_base_is_unchanged(base: Path) -> None:
    before = _tree(base)
    ws = _ws(base)
    done = await ws.run(
        [
            "sh",
            "-c",
            "cat /code/a.md; echo changed > /code/a.md; echo new > /code/new.md; "
            "rm /code/sub/b.txt; cat /code/a.md",
        ]
    )
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "base a\nchanged\n"
    assert _tree(base) == before  # the base folder: not one byte, not one time changed
    assert await ws.read_text("/code/a.md") == "changed\n"
    assert await ws.read_text("/code/new.md") == "new\n"
    assert not await ws.exists("/code/sub/b.txt")
    changes = {(c.path, c.action) for c in await ws.overlay("/code").changes()}
    assert changes == {
        ("/code/a.md", "write"),
        ("/code/new.md", "write"),
        ("/code/sub/b.txt", "delete"),
    }
    await ws.overlay("/code").apply()
    assert (base / "a.md").read_text() == "changed\n"
    assert not (base / "sub" / "b.txt").exists()


async def test_a_read_only_overlay_is_never_bound_from_its_base(base: Path) -> None:
    """Bound directly, the command would see the base, not the layer's changes."""
    writer = _ws(base)
    await writer.write("/code/a.md", "from the layer\n")
    before = _tree(base)
    reader = _ws(base, scope="read_only")
    done = await reader.run(["sh", "-c", "cat /code/a.md; echo x > /code/a.md; echo $?"])
    assert done.stdout.startswith("from the layer\n"), done.stdout
    assert _tree(base) == before
    assert await writer.read_text("/code/a.md") == "from the layer\n"


async def test_a_thread_runs_over_its_own_layer(base: Path) -> None:
    before = _tree(base)
    ws = _ws(base)
    mine = ws.with_thread("agent-1")
    done = await mine.run(["sh", "-c", "echo mine > /code/a.md"])
    assert done.exit_code == 0, done.stderr
    assert await mine.read_text("/code/a.md") == "mine\n"
    assert await ws.read_text("/code/a.md") == "base a\n"  # not in the shared layer
    assert [c.path for c in await mine.overlay("/code").changes()] == ["/code/a.md"]
    assert _tree(base) == before
    thread_layer = base.parent / "layers" / "tenants" / "n-default" / "threads" / "t-agent-1"
    assert (thread_layer / "a.md").read_text() == "mine\n"
    assert os.listdir(base.parent / "layers" / "tenants" / "n-default" / "shared") == []


def test_no_overlay_is_bindable_even_when_it_names_its_base_inner(base: Path) -> None:
    """Defence in depth: the bind looks through wrappers (``inner``); an overlay stops it."""
    from bastion import Mount
    from bastion.core.paths import VPath
    from bastion.core.ports import Store
    from bastion.sandbox.localbind import bindable
    from bastion.stores.local import LocalStore
    from bastion.stores.overlay import OverlayStore
    from bastion.stores.overlay_layers import overlay_of

    (base.parent / "layer").mkdir()
    plain = Mount.of("/code", LocalStore(base), "read_only")
    visible = {VPath.parse("/a.md"), VPath.parse("/sub"), VPath.parse("/sub/b.txt")}
    fd = bindable(plain, visible, [plain])
    assert fd is not None  # the control: this base folder alone would be bound
    os.close(fd)
    stores: list[Store] = [
        overlay_of(LocalStore(base), "file:layers", relative_to=base.parent),
        OverlayStore(LocalStore(base), LocalStore(base.parent / "layer")),
    ]
    for store in stores:
        store.inner = LocalStore(base)  # type: ignore[attr-defined]
        mount = Mount.of("/code", store, "read_only")
        assert bindable(mount, visible, [mount]) is None
