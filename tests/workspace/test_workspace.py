"""The workspace API over memory stores: each operation's behaviour."""

from __future__ import annotations

import pytest

from bastion.core.audit import MemoryAuditSink
from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    DirectoryNotEmptyError,
    EditError,
    InvalidPatternError,
    IsADirectoryError_,
    LimitError,
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
)
from bastion.core.models import Scope, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace


@pytest.fixture
def stores() -> dict[str, MemoryStore]:
    return {"docs": MemoryStore(), "api": MemoryStore(), "scratch": MemoryStore()}


@pytest.fixture
def ws(stores: dict[str, MemoryStore]) -> Workspace:
    return Workspace(
        [
            Mount.of("/docs", stores["docs"]),
            Mount.of("/docs/api", stores["api"], Scope.READ_ONLY, description="API reference"),
            Mount.of("/scratch", stores["scratch"]),
        ],
        policy=Policy.allow_all(limits=FileLimits(max_file_bytes=4096)),
    )


async def test_write_read_roundtrip(ws: Workspace) -> None:
    info = await ws.write("/scratch/notes/a.md", "one\ntwo\nthree\n")
    assert str(info.path) == "/scratch/notes/a.md" and info.size == 14
    assert await ws.read_text("/scratch/notes/a.md") == "one\ntwo\nthree\n"
    assert await ws.read_bytes("/scratch/notes/a.md", start=4, end=7) == b"two"
    assert await ws.read_bytes("/scratch/notes/a.md", start=10) == b"ree\n"


async def test_line_ranges(ws: Workspace) -> None:
    await ws.write("/scratch/l.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    assert await ws.read_text("/scratch/l.txt", offset=2, limit=2) == "line 3\nline 4\n"
    assert await ws.read_text("/scratch/l.txt", offset=9) == "line 10\n"
    assert await ws.read_text("/scratch/l.txt", offset=20, limit=5) == ""
    await ws.write("/scratch/nolf.txt", "a\nb")
    assert await ws.read_text("/scratch/nolf.txt", offset=1, limit=1) == "b"


async def test_size_limit_and_ranges(ws: Workspace, stores: dict[str, MemoryStore]) -> None:
    big = "x\n" * 3000  # 6000 bytes, over the 4096-byte limit
    await stores["scratch"].write(VPath.parse("/big.txt"), big.encode())
    with pytest.raises(LimitError, match="read a range"):
        await ws.read_text("/scratch/big.txt")
    assert await ws.read_text("/scratch/big.txt", offset=2999, limit=5) == "x\n"
    assert await ws.read_bytes("/scratch/big.txt", start=5998) == b"x\n"
    with pytest.raises(LimitError, match="4096-byte file limit"):
        await ws.write("/scratch/huge.txt", "y" * 5000)
    assert not await ws.exists("/scratch/huge.txt")


async def test_write_modes(ws: Workspace) -> None:
    await ws.write("/scratch/f.txt", "a", mode="create")
    with pytest.raises(AlreadyExistsError):
        await ws.write("/scratch/f.txt", "b", mode=WriteMode.CREATE)
    await ws.append("/scratch/f.txt", "c")
    assert await ws.read_text("/scratch/f.txt") == "ac"
    await ws.write("/scratch/f.txt", b"\x00\xff")
    assert await ws.read_bytes("/scratch/f.txt") == b"\x00\xff"
    with pytest.raises(NotFoundError, match="parent"):
        await ws.write("/scratch/no/such/dir.txt", "x", parents=False)
    with pytest.raises(IsADirectoryError_):
        await ws.write("/docs/api", "x")


async def test_expected_version_and_backup(ws: Workspace) -> None:
    first = await ws.write("/scratch/v.txt", "one")
    second = await ws.write("/scratch/v.txt", "two", if_version=first.version)
    assert second.version != first.version
    with pytest.raises(ConflictError, match="read it again"):
        await ws.write("/scratch/v.txt", "stale", if_version=first.version)
    assert await ws.read_text("/scratch/v.txt") == "two"
    await ws.write("/scratch/v.txt", "three", backup=True)
    assert await ws.read_text("/scratch/v.txt.bak") == "two"
    assert await ws.read_text("/scratch/v.txt") == "three"


async def test_edit(ws: Workspace) -> None:
    await ws.write("/scratch/e.md", "alpha beta alpha")
    with pytest.raises(EditError, match="occurs 2 times"):
        await ws.edit("/scratch/e.md", "alpha", "gamma")
    with pytest.raises(EditError, match="not found"):
        await ws.edit("/scratch/e.md", "delta", "gamma")
    with pytest.raises(EditError, match="empty"):
        await ws.edit("/scratch/e.md", "", "gamma")
    result = await ws.edit("/scratch/e.md", "beta", "BETA")
    assert result.replacements == 1
    result = await ws.edit("/scratch/e.md", "alpha", "A", replace_all=True)
    assert result.replacements == 2
    assert await ws.read_text("/scratch/e.md") == "A BETA A"
    stale = (await ws.stat("/scratch/e.md")).version
    await ws.write("/scratch/e.md", "A B A")
    with pytest.raises(ConflictError):
        await ws.edit("/scratch/e.md", "B", "C", if_version=stale)


async def test_mkdir_delete(ws: Workspace) -> None:
    await ws.mkdir("/scratch/a/b/c")
    assert (await ws.stat("/scratch/a/b")).is_dir
    await ws.mkdir("/scratch/a/b/c")  # exist_ok
    with pytest.raises(AlreadyExistsError):
        await ws.mkdir("/scratch/a/b/c", exist_ok=False)
    await ws.write("/scratch/a/b/c/f.txt", "x")
    with pytest.raises(DirectoryNotEmptyError):
        await ws.delete("/scratch/a")
    assert await ws.exists("/scratch/a/b/c/f.txt")
    await ws.delete("/scratch/a", recursive=True)
    assert not await ws.exists("/scratch/a")
    with pytest.raises(NotFoundError):
        await ws.delete("/scratch/a")


async def test_listing_merges_mounts_exactly_once(
    ws: Workspace, stores: dict[str, MemoryStore]
) -> None:
    await ws.write("/docs/guide.md", "guide")
    # The parent store has its own "api" entry: the mount shadows it.
    await stores["docs"].makedirs(VPath.parse("/api"))
    await stores["docs"].write(VPath.parse("/api/shadowed.md"), b"hidden by the mount")
    await stores["api"].write(VPath.parse("/ref.md"), b"ref")
    top = [str(e.path) for e in await ws.list("/")]
    assert top == ["/docs", "/scratch"]
    docs = [(str(e.path), e.kind.value) for e in await ws.list("/docs")]
    assert docs == [("/docs/api", "directory"), ("/docs/guide.md", "file")]
    everything = [str(e.path) for e in await ws.list("/", recursive=True)]
    assert everything == ["/docs", "/docs/api", "/docs/api/ref.md", "/docs/guide.md", "/scratch"]
    assert "/docs/api/shadowed.md" not in everything
    assert [str(e.path) for e in await ws.list("/", depth=2)] == [
        "/docs",
        "/docs/api",
        "/docs/guide.md",
        "/scratch",
    ]
    with pytest.raises(NotADirectoryError_):
        await ws.list("/docs/guide.md")
    with pytest.raises(NoMountError, match="mounted: /docs"):
        await ws.list("/elsewhere")


async def test_stat_exists_virtual_dirs() -> None:
    ws = Workspace([Mount.of("/a/b", MemoryStore())], policy=Policy.allow_all())
    assert (await ws.stat("/a")).is_dir
    assert (await ws.stat("/")).is_dir
    assert await ws.exists("/a")
    assert not await ws.exists("/zzz")
    assert [str(e.path) for e in await ws.list("/")] == ["/a"]
    with pytest.raises(NoMountError):
        await ws.read_text("/a/file.txt")


async def test_copy_and_move(ws: Workspace) -> None:
    await ws.write("/scratch/src/a.txt", "A")
    await ws.write("/scratch/src/sub/b.txt", "B")
    await ws.copy("/scratch/src", "/scratch/dst")
    assert await ws.read_text("/scratch/dst/sub/b.txt") == "B"
    with pytest.raises(AlreadyExistsError):
        await ws.copy("/scratch/src/a.txt", "/scratch/dst/a.txt")
    await ws.write("/scratch/src/a.txt", "A2")
    await ws.copy("/scratch/src/a.txt", "/scratch/dst/a.txt", overwrite=True)
    assert await ws.read_text("/scratch/dst/a.txt") == "A2"
    # same-mount move
    await ws.move("/scratch/dst", "/scratch/moved")
    assert not await ws.exists("/scratch/dst")
    assert await ws.read_text("/scratch/moved/sub/b.txt") == "B"
    # cross-mount move
    await ws.move("/scratch/moved", "/docs/moved")
    assert await ws.read_text("/docs/moved/a.txt") == "A2"
    assert not await ws.exists("/scratch/moved")
    # never silently overwrites
    await ws.write("/scratch/x.txt", "x")
    await ws.write("/scratch/y.txt", "y")
    with pytest.raises(AlreadyExistsError):
        await ws.move("/scratch/x.txt", "/scratch/y.txt")
    assert await ws.read_text("/scratch/y.txt") == "y"
    await ws.move("/scratch/x.txt", "/scratch/y.txt", overwrite=True)
    assert await ws.read_text("/scratch/y.txt") == "x"


async def test_glob(ws: Workspace, stores: dict[str, MemoryStore]) -> None:
    await ws.write("/docs/a.md", "a")
    await ws.write("/docs/deep/er/b.md", "b")
    await ws.write("/docs/c.txt", "c")
    await stores["api"].write(VPath.parse("/ref.md"), b"r")
    found = [str(e.path) for e in await ws.glob("**/*.md")]
    assert found == ["/docs/a.md", "/docs/api/ref.md", "/docs/deep/er/b.md"]
    assert [str(e.path) for e in await ws.glob("*.md", path="/docs")] == ["/docs/a.md"]
    assert [str(e.path) for e in await ws.glob("/docs/*.txt")] == ["/docs/c.txt"]
    assert await ws.glob("/nowhere/**") == []
    assert len(await ws.glob("**/*.md", limit=1)) == 1


async def test_grep(ws: Workspace) -> None:
    await ws.write("/docs/a.md", "alpha\nbeta\ngamma\ndelta\n")
    await ws.write("/scratch/b.txt", "ALPHA and omega\n")
    await ws.write("/scratch/bin.dat", b"alpha\x00\x01")
    result = await ws.grep("alpha")
    assert result.format() == "/docs/a.md:1: alpha"
    assert "/scratch/bin.dat: binary" in result.skipped
    result = await ws.grep("alpha", ignore_case=True)
    assert [m.format() for m in result.matches] == [
        "/docs/a.md:1: alpha",
        "/scratch/b.txt:1: ALPHA and omega",
    ]
    result = await ws.grep("^g.mma$", regex=True, context=1)
    assert result.format().splitlines() == [
        "/docs/a.md-2- beta",
        "/docs/a.md:3: gamma",
        "/docs/a.md-4- delta",
    ]
    result = await ws.grep("a", path="/docs", max_per_file=2)
    assert result.truncated and len([m for m in result.matches if not m.is_context]) == 2
    assert (await ws.grep("omega", glob="*.md")).matches == ()
    with pytest.raises(InvalidPatternError, match="RE2"):
        await ws.grep(r"(a)\1", regex=True)
    assert (await ws.grep("beta", path="/docs/a.md")).files_searched == 1


async def test_filesystem_map(ws: Workspace) -> None:
    text = ws.filesystem_map()
    assert "/docs/  read-write (memory)" in text
    assert "/docs/api/  read-only (memory): read, list, search - API reference" in text
    assert "write" not in text.split("/docs/api/")[1].split("\n")[0]


async def test_audit_records_every_operation(ws: Workspace) -> None:
    sink = ws.audit
    assert isinstance(sink, MemoryAuditSink)
    await ws.write("/scratch/a.txt", "hello")
    await ws.read_text("/scratch/a.txt")
    with pytest.raises(NotFoundError):
        await ws.read_text("/scratch/missing.txt")
    records = sink.records
    assert [(r.operation, r.path, r.allowed) for r in records] == [
        ("write", "/scratch/a.txt", True),
        ("read", "/scratch/a.txt", True),
        ("read", "/scratch/missing.txt", False),
    ]
    assert records[0].bytes == 5 and records[0].principal == "local"
    assert records[0].duration_ms >= 0
