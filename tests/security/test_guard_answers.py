"""The guard's answers tell nothing hidden: a hidden entry and a missing one fail alike (message,
store wording, mounts, paths below), a write-only mount takes copies and moves, and a move of
an ancestor moves only what the mover sees.

Bugs found by the security suite, pinned as the behaviour that should hold (once
``test_found_bugs.py``; the policy spellings, limits and malformed requests it also held now
live in ``test_policy_unicode_spellings.py``, ``test_limits_not_bypassed.py`` and
``test_malformed_requests_counted.py``). Every test here failed against the code as it was
when the suite was written; each test's docstring says what went wrong.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from security_stores import caught, same_form, seed, snapshot

from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    LimitError,
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
    ScopeError,
)
from bastion.core.models import Labels
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.workspace import Workspace

AGENT = Principal.of("agent", roles={"engineer"}, clearance="internal")


@pytest.fixture
async def vault(make_store: Callable[[str], Store]) -> tuple[Workspace, dict[str, Store]]:
    stores = {n: make_store(n) for n in ("docs", "other", "conf", "wo")}
    await seed(
        stores["docs"],
        {
            "/pub.txt": "public\n",
            "/api.key": "TOPSECRET key\n",
            "/secret/plan.txt": "TOPSECRET plan\n",
            "/proj/a.txt": "visible a\n",
            "/proj/hidden/salaries.csv": "TOPSECRET salaries\n",
            "/inbox/report.txt": "z" * 95,
        },
    )
    await seed(stores["conf"], {"/c.txt": "TOPSECRET conf\n"})
    ws = Workspace(
        [
            Mount.of("/docs", stores["docs"]),
            Mount.of("/other", stores["other"]),
            Mount.of("/conf", stores["conf"], labels=Labels(classification="confidential")),
            Mount.of("/wo", stores["wo"], "write_only"),
        ],
        policy=Policy(
            rules=(
                Rule.deny("*", "/docs/secret/**"),
                Rule.deny("*", "/docs/*.key"),
                Rule.deny("*", "/docs/proj/hidden/**"),
                Rule.deny({"read", "list"}, "/docs/inbox/**"),
                Rule.allow("*", "/**"),
            ),
            limits=FileLimits(max_file_bytes=100),
        ),
        principal=AGENT,
    )
    return ws, stores


# -- leaks through error messages ------------------------------------------------------------


@pytest.mark.parametrize("op", ["stat", "read_text", "read_bytes", "delete", "list", "edit"])
async def test_hidden_and_missing_entries_give_the_same_not_found_message(
    vault: tuple[Workspace, dict[str, Store]], op: str
) -> None:
    """Today a missing file says ``/missing.txt not found`` (the store-relative path, from the
    store's own error) while a hidden one says ``/docs/api.key not found``: the form of the
    message tells the two apart."""
    ws, _ = vault
    calls: dict[str, Callable[[str], Awaitable[Any]]] = {
        "stat": ws.stat,
        "read_text": ws.read_text,
        "read_bytes": lambda p: ws.read_bytes(p, start=0, end=4),
        "delete": ws.delete,
        "list": ws.list,
        "edit": lambda p: ws.edit(p, "TOPSECRET", "x"),
    }
    for hidden, missing in (
        ("/docs/api.key", "/docs/missing.key"),
        ("/docs/secret/plan.txt", "/docs/nosuch/plan.txt"),
        ("/docs/secret", "/docs/nosuch"),
        ("/conf/c.txt", "/conf/missing.txt"),
    ):
        exc_hidden = await caught(calls[op](hidden))
        exc_missing = await caught(calls[op](missing))
        # (under a mount hidden as a whole, "no such mount" is fine too)
        assert isinstance(exc_hidden, NotFoundError | NoMountError), repr(exc_hidden)
        assert same_form(exc_hidden, hidden, exc_missing, missing), (
            f"{exc_hidden!r} vs {exc_missing!r}"
        )


async def test_store_errors_name_workspace_paths(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """Store errors pass through with store-relative paths (``/pub.txt already exists`` for
    ``/docs/pub.txt``), which both misleads the agent and differs from the guard's messages."""
    ws, _ = vault
    await ws.write("/docs/pub2.txt", "x")
    exc = await caught(ws.move("/docs/pub2.txt", "/docs/pub.txt"))
    assert isinstance(exc, AlreadyExistsError)
    assert "/docs/pub.txt" in str(exc), str(exc)
    exc = await caught(ws.stat("/docs/nothing.txt"))
    assert "/docs/nothing.txt" in str(exc), str(exc)


@pytest.mark.parametrize(
    "below",
    ["/docs/api.key/x", "/docs/api.key/x/y.txt", "/docs/secret/plan.txt/x"],
)
async def test_path_below_a_hidden_file_does_not_reveal_it(
    vault: tuple[Workspace, dict[str, Store]], below: str
) -> None:
    """The store walks the path before the guard checks visibility, so a path below a
    hidden *file* raises ``NotADirectoryError_: /api.key is a file, not a directory``: the
    hidden file's existence and kind leak through stat, read, list, grep, glob, exists and
    write."""
    ws, stores = vault
    before = await snapshot(stores["docs"])
    reads: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.stat(below),
        lambda: ws.read_text(below),
        lambda: ws.read_bytes(below, start=0, end=1),
        lambda: ws.list(below),
        lambda: ws.grep("TOPSECRET", below),
        lambda: ws.delete(below),
    ]
    for attempt in reads:
        exc = await caught(attempt())
        assert isinstance(exc, NotFoundError), f"{type(exc).__name__}: {exc}"
        assert "is a file" not in str(exc) and "directory" not in str(exc)
    assert await ws.glob(below + "/*") == []
    assert await ws.glob(below) == []
    assert await ws.exists(below) is False
    writes: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.write(below, "x"),
        lambda: ws.move("/docs/pub.txt", below),
        lambda: ws.copy("/docs/pub.txt", below),
    ]
    for attempt in writes:
        exc = await caught(attempt())
        assert isinstance(exc, NotFoundError | AccessDeniedError), f"{type(exc).__name__}: {exc}"
        assert not isinstance(exc, NotADirectoryError_)
        assert "is a file" not in str(exc)
    assert await snapshot(stores["docs"]) == before


async def test_no_mount_error_does_not_name_hidden_mounts(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """``NoMountError`` lists every mount (``mounted: /conf, /docs, ...``), including the
    ``/conf`` mount that the principal's clearance hides everywhere else."""
    ws, _ = vault
    exc = await caught(ws.read_text("/nowhere/x.txt"))
    assert isinstance(exc, NoMountError)
    assert "/conf" not in str(exc), str(exc)
    assert "/docs" in str(exc)  # visible mounts may still be suggested


@pytest.mark.parametrize(
    ("hidden", "unmounted"),
    [("/conf/x.txt", "/nowhere/x.txt"), ("/conf/c.txt", "/nowhere/c.txt"), ("/conf", "/nowhere")],
)
async def test_a_label_hidden_mount_is_indistinguishable_from_no_mount(
    vault: tuple[Workspace, dict[str, Store]], hidden: str, unmounted: str
) -> None:
    """Paths under the hidden mount raise ``NotFoundError`` while paths under no mount raise
    ``NoMountError``, so probing tells which top-level names are hidden mounts."""
    ws, _ = vault
    for op in ("stat", "read_text", "list", "grep"):
        call = {
            "stat": ws.stat,
            "read_text": ws.read_text,
            "list": ws.list,
            "grep": lambda p: ws.grep("TOPSECRET", p),
        }[op]
        exc_hidden = await caught(call(hidden))
        exc_none = await caught(call(unmounted))
        assert same_form(exc_hidden, hidden, exc_none, unmounted), (
            f"{op}: {exc_hidden!r} vs {exc_none!r}"
        )


async def test_creating_over_a_label_hidden_file_does_not_reveal_it(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """Writes ignore labels: ``write(mode="create")`` onto the confidential ``/conf/c.txt``
    raises ``AlreadyExistsError: /c.txt already exists`` (an existence oracle for a document
    that reads and listings report as not found); ``mkdir(exist_ok=False)`` likewise."""
    ws, stores = vault
    probes: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.write("/conf/c.txt", "probe", mode="create"),
        lambda: ws.mkdir("/conf/c.txt", exist_ok=False),
    ]
    for attempt in probes:
        exc = await caught(attempt())
        assert not isinstance(exc, AlreadyExistsError), str(exc)
        assert "exists" not in str(exc)
    assert await stores["conf"].read_all(VPath.parse("/c.txt")) == b"TOPSECRET conf\n"


async def test_a_label_hidden_file_cannot_be_overwritten(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """Deleting the confidential file is refused as not found, yet overwriting or appending
    to it succeeds: a principal can destroy a document it may not see. (Labels are checked for
    reads only; the guard should treat a write onto a hidden document like the delete.)"""
    ws, stores = vault
    assert isinstance(await caught(ws.delete("/conf/c.txt")), NotFoundError)
    clobbers: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.write("/conf/c.txt", "clobbered"),
        lambda: ws.append("/conf/c.txt", "more"),
    ]
    for attempt in clobbers:
        exc = await caught(attempt())
        assert isinstance(exc, NotFoundError | AccessDeniedError), repr(exc)
    assert await stores["conf"].read_all(VPath.parse("/c.txt")) == b"TOPSECRET conf\n"


async def test_append_does_not_reveal_the_size_of_an_unreadable_file(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """``/docs/inbox/**`` is a drop box (write allowed, read and list denied). Appending 10
    bytes to the 95-byte report fails with ``105 bytes is over the 100-byte file limit``,
    which tells the caller the size of a file it may not read."""
    ws, _ = vault
    try:
        await ws.append("/docs/inbox/report.txt", "y" * 10)
    except LimitError as exc:
        assert "105" not in str(exc) and "95" not in str(exc), str(exc)


# -- scope -----------------------------------------------------------------------------------


async def test_copy_into_a_write_only_mount_does_not_fail_after_writing(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """``copy`` writes the file into the write-only mount and then stats it to build its
    result, so the caller gets ``ScopeError`` for a copy that actually happened."""
    ws, stores = vault
    try:
        await ws.copy("/docs/pub.txt", "/wo/pub.txt")
    except ScopeError:
        assert not await stores["wo"].exists(VPath.parse("/pub.txt")), (
            "copy reported failure but wrote the file"
        )
    else:
        assert await stores["wo"].read_all(VPath.parse("/pub.txt")) == b"public\n"


async def test_move_into_a_write_only_mount_works(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """Moving a file into a write-only mount is a create there and a delete here, both
    allowed; it is refused with ``ScopeError: ... read is not allowed there`` because the
    cross-mount move checks that the target does not exist with a stat."""
    ws, stores = vault
    await ws.move("/docs/pub.txt", "/wo/pub.txt")
    assert await stores["wo"].read_all(VPath.parse("/pub.txt")) == b"public\n"
    assert not await stores["docs"].exists(VPath.parse("/pub.txt"))


# -- move of an ancestor ---------------------------------------------------------------------


async def test_cross_mount_move_of_an_ancestor_of_a_hidden_entry_moves_only_what_is_seen(
    vault: tuple[Workspace, dict[str, Store]],
) -> None:
    """A cross-mount move copies first and deletes after; once only the delete checked the
    tree, so a refused move left a partial copy. Refusing at all told that something hidden
    was there: now hidden entries are not there for the mover (docs/security.md, "no existence
    oracles"). The move takes what the caller sees and leaves the rest where it was."""
    ws, stores = vault
    before = await snapshot(stores["docs"])
    await ws.move("/docs/proj", "/other/proj")
    after = await snapshot(stores["docs"])
    assert after["/proj/hidden/salaries.csv"] == before["/proj/hidden/salaries.csv"]
    assert "/proj/a.txt" not in after
    assert await snapshot(stores["other"]) == {"/proj": None, "/proj/a.txt": b"visible a\n"}
    # to the mover, the source is gone: it holds nothing the mover may see
    assert isinstance(await caught(ws.stat("/docs/proj")), NotFoundError)
    assert "proj" not in {e.path.name for e in await ws.list("/docs")}
