"""An error tells a hidden entry and a missing one alike in everything it carries, not only in
its message: its attributes (``path``), its ``args``, its chained errors (``__context__``,
``__cause__``: ``raise ... from None`` still keeps the store's own error, which names a store
path and what is there: "/h.md is a file, not a directory"), the traceback a caller prints
(a hidden entry and a missing one are answered by different lines of the guard) and its
pickled form. No store path and no host path of a local store is in any of them.

Two workspaces that differ only by entries the principal may not see (a labelled file, a
folder holding only labelled files) answer each request; every store kind of the security
suite (memory, local) serves them, and SQLite and PostgreSQL (which keep labels in the store)
serve the calls of one test too.

The guard's own refusals carry the mount too (a scope, a policy rule, a limit, a change onto
a hidden name), as the store's errors and the hidden answers do: before 2026-11-28 they carried
``mount`` ``None``. A change onto a hidden name and one onto a name a rule reserves carry the
same in everything (the answer to both is the policy's refusal).
"""

from __future__ import annotations

import inspect
import itertools
import pickle
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from security_stores import seed

from bastion.core.mounts import Mount
from bastion.core.policy import Policy, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.stores.postgres import PostgresStore
from bastion.stores.sqlite import SqliteStore
from bastion.workspace import Workspace

AGENT = Principal.of("agent", roles={"engineer"}, clearance="internal")
HIDDEN_HEAD = "---\nclassification: restricted\n---\nTOPSECRET\n"

VISIBLE = {"/pub.txt": "public\n", "/dir/a.txt": "a\n"}
HIDDEN = {"/h.md": HIDDEN_HEAD, "/hd/deep.md": HIDDEN_HEAD, "/dir/h.md": HIDDEN_HEAD}

Op = Callable[[Workspace], Awaitable[Any]]

OPS: dict[str, Op] = {
    "read a hidden file": lambda ws: ws.read_text("/docs/h.md"),
    "stat a hidden file": lambda ws: ws.stat("/docs/h.md"),
    "read below a hidden file": lambda ws: ws.read_text("/docs/h.md/child"),
    "stat below a hidden file": lambda ws: ws.stat("/docs/h.md/x"),
    "list a hidden file": lambda ws: ws.list("/docs/h.md"),
    "read a folder of hidden files": lambda ws: ws.read_text("/docs/hd"),
    "list a folder of hidden files": lambda ws: ws.list("/docs/hd"),
    "delete a folder of hidden files": lambda ws: ws.delete("/docs/hd"),
    "delete a hidden file": lambda ws: ws.delete("/docs/h.md"),
    "delete a hidden file in a folder": lambda ws: ws.delete("/docs/dir/h.md"),
    "edit a hidden file": lambda ws: ws.edit("/docs/h.md", "TOPSECRET", "x"),
    "copy a hidden file": lambda ws: ws.copy("/docs/h.md", "/docs/new.md"),
    "move a hidden file": lambda ws: ws.move("/docs/h.md", "/docs/new.md"),
    "grep a hidden file": lambda ws: ws.grep("TOPSECRET", "/docs/h.md"),
    "read a folder's hidden file": lambda ws: ws.read_text("/docs/hd/deep.md"),
}


async def _world(make_store: Callable[[str], Store], hidden: bool) -> Workspace:
    store = make_store("with" if hidden else "without")
    await seed(store, {**VISIBLE, **(HIDDEN if hidden else {})})
    return Workspace(
        [Mount.of("/docs", store)],
        policy=Policy(rules=(Rule.allow("*", "/**"),)),
        principal=AGENT,
    )


async def _error(ws: Workspace, op: Op) -> BaseException:
    try:
        await op(ws)
    except Exception as exc:
        return exc
    raise AssertionError("expected an error, the call succeeded")


def _carried(exc: BaseException, root: Path) -> dict[str, Any]:
    """Everything a caller can read from ``exc`` (a local store's folder named ``<root>``)."""
    chained = exc.__cause__ or exc.__context__
    told = {
        "type": type(exc).__name__,
        "str": str(exc),
        "repr": repr(exc),
        "args": exc.args,
        "path": getattr(exc, "path", None),
        "reason": getattr(exc, "reason", None),
        "mount": getattr(exc, "mount", None),
        "chained": None if chained is None else (type(chained).__name__, str(chained)),
        "suppress": exc.__suppress_context__,
        "traceback": "".join(traceback.format_exception(exc)),
        "pickled": _pickled(exc),
    }
    return {key: _without(value, root) for key, value in told.items()}


def _pickled(exc: BaseException) -> tuple[str, str, object]:
    copy = pickle.loads(pickle.dumps(exc))
    return type(copy).__name__, str(copy), getattr(copy, "path", None)


def _without(value: object, root: Path) -> object:
    """``value`` with each local store's folder written ``<root>`` (a missing entry's error
    may not name it either; checked apart)."""
    text = repr(value)
    for name in ("with", "without"):
        text = text.replace(str(root / "stores" / name), "<root>")
    return text


@pytest.mark.parametrize("name", sorted(OPS))
async def test_a_hidden_entry_and_a_missing_one_carry_the_same(
    name: str, make_store: Callable[[str], Store], tmp_path: Path
) -> None:
    op = OPS[name]
    hidden = await _error(await _world(make_store, hidden=True), op)
    missing = await _error(await _world(make_store, hidden=False), op)
    told_hidden, told_missing = _carried(hidden, tmp_path), _carried(missing, tmp_path)
    assert told_hidden == told_missing
    for told in (told_hidden, told_missing):
        assert "<root>" not in repr(told)
        assert str(tmp_path) not in repr(told)
        assert "TOPSECRET" not in repr(told)


@pytest.mark.parametrize("name", sorted(OPS))
async def test_an_answer_keeps_no_store_error_behind_it(
    name: str, make_store: Callable[[str], Store]
) -> None:
    """The store's own error (its store path: ``/h.md``, not ``/docs/h.md``) is dropped."""
    for hidden in (True, False):
        exc = await _error(await _world(make_store, hidden=hidden), OPS[name])
        assert exc.__cause__ is None
        assert exc.__context__ is None
        assert exc.__suppress_context__


async def test_a_missing_entry_names_its_workspace_path_and_mount(
    make_store: Callable[[str], Store],
) -> None:
    """What the missing answer carries (the hidden one must carry the same: above)."""
    exc = await _error(await _world(make_store, hidden=False), OPS["read a hidden file"])
    assert (str(exc), getattr(exc, "path", None)) == ("/docs/h.md not found", "/docs/h.md")


@pytest.fixture(params=["sqlite", "postgres"])
async def labelled_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[str], Store]]:
    """Stores that keep labels themselves: a SQLite file, a PostgreSQL namespace (a fresh
    one for each world made; every store closed at the end)."""
    made: list[Store] = []
    count = itertools.count()

    def make(name: str) -> Store:
        if request.param == "sqlite":
            store: Store = SqliteStore(tmp_path / f"{name}-{next(count)}.db")
        else:
            dsn = str(request.getfixturevalue("pg_dsn"))
            store = PostgresStore(dsn, namespace=f"{name}-{next(count)}", timeout=60.0)
        made.append(store)
        return store

    yield make
    for store in made:
        closed = store.close()  # type: ignore[attr-defined]
        if inspect.isawaitable(closed):  # SQLite closes at once, PostgreSQL awaits its pool
            await closed


async def test_stores_that_keep_labels_tell_a_hidden_entry_like_a_missing_one(
    labelled_store: Callable[[str], Store], tmp_path: Path
) -> None:
    for name, op in sorted(OPS.items()):
        hidden = await _error(await _world(labelled_store, hidden=True), op)
        missing = await _error(await _world(labelled_store, hidden=False), op)
        told_hidden, told_missing = _carried(hidden, tmp_path), _carried(missing, tmp_path)
        assert told_hidden == told_missing, name
        assert str(tmp_path) not in repr(told_hidden), name


# -- the guard's own refusals -------------------------------------------------------------------

RESERVE = Rule.deny(["write", "delete"], "/docs/h.md", "/docs/dir/h.md", "/docs/hd/**")
"""A world without the hidden entries whose policy reserves their names instead."""

CHANGES: dict[str, Op] = {
    "write onto the name": lambda ws: ws.write("/docs/h.md", "x"),
    "write onto the name in a folder": lambda ws: ws.write("/docs/dir/h.md", "x"),
    "copy onto the name": lambda ws: ws.copy("/docs/pub.txt", "/docs/h.md"),
    "move onto the name": lambda ws: ws.move("/docs/pub.txt", "/docs/h.md"),
    "write into the folder": lambda ws: ws.write("/docs/hd/deep.md", "x"),
}


async def _reserved(make_store: Callable[[str], Store]) -> Workspace:
    store = make_store("reserved")
    await seed(store, VISIBLE)
    return Workspace(
        [Mount.of("/docs", store)],
        policy=Policy(rules=(RESERVE, Rule.allow("*", "/**"))),
        principal=AGENT,
    )


@pytest.mark.parametrize("name", sorted(CHANGES))
async def test_a_change_onto_a_hidden_name_carries_what_a_reserved_name_does(
    name: str, make_store: Callable[[str], Store], tmp_path: Path
) -> None:
    op = CHANGES[name]
    hidden = await _error(await _world(make_store, hidden=True), op)
    reserved = await _error(await _reserved(make_store), op)
    told_hidden, told_reserved = _carried(hidden, tmp_path), _carried(reserved, tmp_path)
    assert told_hidden == told_reserved
    assert getattr(hidden, "mount", None) == "/docs"
    assert "TOPSECRET" not in repr(told_hidden) and str(tmp_path) not in repr(told_hidden)


REFUSALS: dict[str, tuple[Policy, Op]] = {
    "a scope": (Policy(rules=(Rule.allow("*", "/**"),)), lambda ws: ws.write("/ro/a.md", "x")),
    "a policy rule": (
        Policy(rules=(Rule.deny("write", "/docs/**"), Rule.allow("*", "/**"))),
        lambda ws: ws.write("/docs/new.md", "x"),
    ),
    "a policy rule on a delete": (
        Policy(rules=(Rule.deny("delete", "/docs/**"), Rule.allow("*", "/**"))),
        lambda ws: ws.delete("/docs/pub.txt"),
    ),
    "a blocked name": (
        Policy.from_dict(
            {
                "rules": [{"effect": "allow", "actions": ["*"], "paths": ["/**"]}],
                "limits": {"blocked_segments": [".git"]},
            }
        ),
        lambda ws: ws.write("/docs/.git/x", "x"),
    ),
    "a file size limit": (
        Policy.from_dict(
            {
                "rules": [{"effect": "allow", "actions": ["*"], "paths": ["/**"]}],
                "limits": {"max_file_bytes": 4},
            }
        ),
        lambda ws: ws.write("/docs/big.txt", "0123456789"),
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
async def test_the_guards_own_refusals_name_their_mount(
    name: str, make_store: Callable[[str], Store]
) -> None:
    from bastion.core.models import Scope

    policy, op = REFUSALS[name]
    docs, ro = make_store("docs"), make_store("ro")
    await seed(docs, VISIBLE)
    ws = Workspace(
        [Mount.of("/docs", docs), Mount.of("/ro", ro, Scope.READ_ONLY)],
        policy=policy,
        principal=AGENT,
    )
    exc = await _error(ws, op)
    assert getattr(exc, "mount", None) == ("/ro" if name == "a scope" else "/docs"), exc


async def test_stores_that_keep_labels_refuse_a_hidden_name_as_a_reserved_one(
    labelled_store: Callable[[str], Store], tmp_path: Path
) -> None:
    for name, op in sorted(CHANGES.items()):
        hidden = await _error(await _world(labelled_store, hidden=True), op)
        reserved = await _error(await _reserved(labelled_store), op)
        assert _carried(hidden, tmp_path) == _carried(reserved, tmp_path), name
        assert getattr(hidden, "mount", None) == "/docs", name
