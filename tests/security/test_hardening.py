"""Regressions around the fixes pinned in ``test_guard_answers.py`` and its neighbours (the
bugs once in ``test_found_bugs.py``): the edges those fixes touch
(hidden mounts nested or named directly, all-or-nothing copies and moves, read limits on line
ranges, error wording at the store edge, remembered policy decisions), for every store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from security_stores import caught, same_form, seed, snapshot

from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidPathError,
    LimitError,
    NoMountError,
    NotFoundError,
    PolicyDeniedError,
)
from bastion.core.models import Labels
from bastion.core.mounts import Mount
from bastion.core.policy import FileLimits, Policy, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

AGENT = Principal.of("agent", roles={"engineer"}, clearance="internal")


# -- hidden mounts ---------------------------------------------------------------------------


async def test_a_hidden_mount_nested_in_a_visible_one_looks_like_a_missing_entry(
    make_store: Callable[[str], Store],
) -> None:
    outer, inner = make_store("outer"), make_store("inner")
    await seed(outer, {"/pub.txt": "public"})
    await seed(inner, {"/c.txt": "TOPSECRET"})
    ws = Workspace(
        [
            Mount.of("/a", outer),
            Mount.of("/a/vault", inner, labels=Labels(classification="restricted")),
        ],
        policy=Policy.allow_all(),
        principal=AGENT,
    )
    assert [str(e.path) for e in await ws.list("/a", recursive=True)] == ["/a/pub.txt"]
    for op in ("stat", "read_text", "list"):
        call = getattr(ws, op)
        hidden = await caught(call("/a/vault/c.txt"))
        missing = await caught(call("/a/nothing/c.txt"))
        assert isinstance(hidden, NotFoundError), repr(hidden)
        assert same_form(hidden, "/a/vault/c.txt", missing, "/a/nothing/c.txt"), (hidden, missing)
    assert not await ws.exists("/a/vault")
    assert await ws.glob("/a/**") == [await ws.stat("/a/pub.txt")]
    assert (await ws.grep("TOPSECRET", "/")).files_searched == 1


async def test_the_prefix_of_a_hidden_mount_is_not_a_mount_point_to_the_uncleared(
    make_store: Callable[[str], Store],
) -> None:
    docs, conf = make_store("docs"), make_store("conf")
    await seed(conf, {"/c.txt": "TOPSECRET"})
    ws = Workspace(
        [Mount.of("/docs", docs), Mount.of("/conf", conf, labels=Labels(classification="secret"))],
        policy=Policy.allow_all(),
        principal=AGENT,
    )
    await ws.write("/docs/x.txt", "x")
    probes: dict[str, Callable[[str], Awaitable[Any]]] = {
        "mkdir": lambda p: ws.mkdir(p, exist_ok=False),
        "mkdir_ok": ws.mkdir,
        "write": lambda p: ws.write(p, "x"),
        "delete": lambda p: ws.delete(p, recursive=True),
        "move_to": lambda p: ws.move("/docs/x.txt", p),
        "copy_to": lambda p: ws.copy("/docs/x.txt", p),
        "move_from": lambda p: ws.move(p, "/docs/y"),
        "stat": ws.stat,
        "list": ws.list,
    }
    for name, probe in probes.items():
        hidden = await caught(probe("/conf"))
        none = await caught(probe("/nowhere"))
        assert isinstance(hidden, NoMountError), (name, hidden)
        assert same_form(hidden, "/conf", none, "/nowhere"), (name, hidden, none)
        assert "/conf" not in str(hidden).partition("mounted:")[2]
    assert await snapshot(conf) == {"/c.txt": b"TOPSECRET"}
    assert await snapshot(docs) == {"/x.txt": b"x"}


async def test_a_cleared_principal_still_sees_and_uses_the_mount(
    make_store: Callable[[str], Store],
) -> None:
    conf = make_store("conf")
    ws = Workspace(
        [Mount.of("/conf", conf, labels=Labels(classification="confidential"))],
        policy=Policy.allow_all(),
        principal=Principal.of("boss", clearance="confidential"),
    )
    await ws.write("/conf/new.txt", "ok")
    await ws.mkdir("/conf/dir", exist_ok=False)
    assert {str(e.path) for e in await ws.list("/conf")} == {"/conf/new.txt", "/conf/dir"}
    uncleared = ws.with_principal(AGENT)
    assert isinstance(await caught(uncleared.read_text("/conf/new.txt")), NoMountError)
    assert await ws.read_text("/conf/new.txt") == "ok"  # views do not share decisions


# -- all or nothing ----------------------------------------------------------------------------


@pytest.fixture
async def pair(make_store: Callable[[str], Store]) -> tuple[Workspace, Store, Store]:
    a, b = make_store("a"), make_store("b")
    await seed(
        a,
        {
            "/tree/1.txt": "one",
            "/tree/sub/2.txt": "two",
            "/tree/sub/3.txt": "three",
            "/big/ok.txt": "small",
            "/big/z-huge.txt": "h" * 200,
        },
    )
    await seed(b, {"/taken/sub/3.txt": "KEEP"})
    ws = Workspace(
        [Mount.of("/a", a), Mount.of("/b", b)],
        policy=Policy(
            rules=(Rule.deny("write", "/b/frozen/**"), Rule.allow("*", "/**")),
            limits=FileLimits(max_file_bytes=100),
        ),
    )
    return ws, a, b


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [
        (lambda ws: ws.copy("/a/big", "/b/big"), LimitError),
        (lambda ws: ws.move("/a/big", "/b/big"), LimitError),
        (lambda ws: ws.copy("/a/tree", "/b/taken"), AlreadyExistsError),
        (lambda ws: ws.move("/a/tree", "/b/taken"), AlreadyExistsError),
        (lambda ws: ws.copy("/a/tree", "/b/frozen/tree"), PolicyDeniedError),
        (lambda ws: ws.move("/a/tree", "/b/frozen/tree"), PolicyDeniedError),
    ],
)
async def test_a_refused_tree_copy_or_move_changes_nothing(
    pair: tuple[Workspace, Store, Store],
    attempt: Callable[[Workspace], Awaitable[Any]],
    expected: type[Exception],
) -> None:
    ws, a, b = pair
    before = (await snapshot(a), await snapshot(b))
    assert isinstance(await caught(attempt(ws)), expected)
    assert (await snapshot(a), await snapshot(b)) == before


async def test_an_overwriting_move_that_is_refused_keeps_the_target(
    make_store: Callable[[str], Store],
) -> None:
    docs = make_store("docs")
    await seed(docs, {"/src.txt": "new", "/dst.txt": "old", "/keep/dst.txt": "old"})
    ws = Workspace(
        [Mount.of("/docs", docs)],
        policy=Policy(rules=(Rule.deny("delete", "/docs/src.txt"), Rule.allow("*", "/**"))),
    )
    before = await snapshot(docs)
    for dst in ("/docs/dst.txt", "/docs/keep/dst.txt"):
        exc = await caught(ws.move("/docs/src.txt", dst, overwrite=True))
        assert isinstance(exc, PolicyDeniedError)
    assert await snapshot(docs) == before


async def test_tree_copy_into_a_write_only_mount(make_store: Callable[[str], Store]) -> None:
    src, drop = make_store("src"), make_store("drop")
    await seed(src, {"/t/a.txt": "A", "/t/s/b.txt": "B"})
    ws = Workspace(
        [Mount.of("/src", src), Mount.of("/drop", drop, "write_only")], policy=Policy.allow_all()
    )
    info = await ws.copy("/src/t", "/drop/t")
    assert info.is_dir and str(info.path) == "/drop/t"
    moved = await ws.move("/src/t/a.txt", "/drop/a.txt")
    assert moved.is_file and moved.size == 1
    assert await snapshot(drop) == {
        "/t": None,
        "/t/a.txt": b"A",
        "/t/s": None,
        "/t/s/b.txt": b"B",
        "/a.txt": b"A",
    }
    assert await snapshot(src) == {"/t": None, "/t/s": None, "/t/s/b.txt": b"B"}


# -- limits on line ranges, and wording at the store edge ----------------------------------------


async def test_line_ranges_stay_within_the_read_limit(make_store: Callable[[str], Store]) -> None:
    store = make_store("d")
    await seed(store, {"/lines.txt": "".join(f"line {i:04d}\n" for i in range(300))})  # 3000 B
    ws = Workspace(
        [Mount.of("/d", store)], policy=Policy.allow_all(limits=FileLimits(max_file_bytes=1000))
    )
    assert await ws.read_text("/d/lines.txt", offset=10, limit=5) == "".join(
        f"line {i:04d}\n" for i in range(10, 15)
    )
    assert len(await ws.read_text("/d/lines.txt", offset=200, limit=100)) == 1000  # at the limit
    for offset, limit in ((199, 101), (0, None), (1, None), (0, 10**6)):
        exc = await caught(ws.read_text("/d/lines.txt", offset=offset, limit=limit))
        assert isinstance(exc, LimitError) and "1000-byte read limit" in str(exc), exc
    assert await ws.read_bytes("/d/lines.txt", start=2000) == b"".join(
        b"line %04d\n" % i for i in range(200, 300)
    )
    assert isinstance(await caught(ws.read_bytes("/d/lines.txt", start=1999)), LimitError)


async def test_store_errors_name_the_workspace_path(make_store: Callable[[str], Store]) -> None:
    store = make_store("deep")
    ws = Workspace([Mount.of("/team/deep", store)], policy=Policy.allow_all())
    first = await ws.write("/team/deep/v.txt", "one")
    await ws.write("/team/deep/v.txt", "two")
    exc = await caught(ws.write("/team/deep/v.txt", "three", if_version=first.version))
    assert isinstance(exc, ConflictError) and str(exc).startswith("/team/deep/v.txt ")
    exc = await caught(ws.write("/team/deep/no/such.txt", "x", parents=False))
    assert isinstance(exc, NotFoundError) and "/team/deep/no" in str(exc)
    exc = await caught(ws.write("/team/deep/v.txt/x", "x"))
    assert "/team/deep/v.txt" in str(exc)
    exc = await caught(ws.delete("/team/deep/missing.txt"))
    assert str(exc) == "/team/deep/missing.txt not found"


async def test_a_link_below_a_hidden_name_is_not_found(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "api.key").symlink_to(tmp_path)
    (root / "open").symlink_to(tmp_path)
    ws = Workspace(
        [Mount.of("/docs", LocalStore(root))],
        policy=Policy(rules=(Rule.deny("*", "/docs/*.key"), Rule.allow("*", "/**"))),
    )
    for path in ("/docs/api.key", "/docs/api.key/x", "/docs/api.key/x/y"):
        exc = await caught(ws.stat(path))
        assert isinstance(exc, NotFoundError) and str(exc) == f"{path} not found", exc
    exc = await caught(ws.stat("/docs/open/x"))  # a visible link: told plainly
    assert "symbolic link" in str(exc) or "link" in str(exc), exc


# -- malformed requests ------------------------------------------------------------------------


async def test_every_malformed_request_is_audited_once() -> None:
    ws = Workspace([Mount.of("/docs", MemoryStore())], policy=Policy.allow_all())
    huge = "/docs/" + "../" * 100_000
    attempts: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.stat(huge),
        lambda: ws.write("/docs/a\x00b", "x"),
        lambda: ws.copy("/docs/a", "C:/x"),
        lambda: ws.move("..", "/docs/a"),
        lambda: ws.glob("*", path="/docs/\u202e"),
        lambda: ws.grep("x", "//server/share"),
        lambda: ws.list("/docs/../.."),
        lambda: ws.mkdir("\\docs"),
        lambda: ws.delete(""),
        lambda: ws.edit("/docs/\x1b", "a", "b"),
        lambda: ws.exists("/docs/\n"),
    ]
    for attempt in attempts:
        count = len(ws.audit.records)
        assert isinstance(await caught(attempt()), InvalidPathError)
        (record,) = ws.audit.records[count:]
        assert record.allowed is False and record.reason.startswith("InvalidPathError")
        assert len(record.path) <= 1024


async def test_hidden_entries_stay_behind_a_cross_mount_move(
    make_store: Callable[[str], Store],
) -> None:
    docs, other = make_store("docs"), make_store("other")
    await seed(docs, {"/p/a.txt": "a", "/p/q/.git/config": "TOPSECRET"})
    ws = Workspace(
        [Mount.of("/docs", docs), Mount.of("/other", other)],
        policy=Policy.allow_all(limits=FileLimits(blocked_segments=frozenset({".GIT"}))),
    )
    await ws.move("/docs/p", "/other/p")
    assert (await snapshot(docs))["/p/q/.git/config"] == b"TOPSECRET"
    moved = await snapshot(other)
    assert moved["/p/a.txt"] == b"a" and not [k for k in moved if ".git" in k.lower()]
