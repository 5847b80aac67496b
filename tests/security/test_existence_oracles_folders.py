"""A folder whose every entry is hidden is not there, on every call (red-team variants of the
existence-oracle class, docs/security.md, "folder names are content"): the principal meets no
such folder on any call, not only on ``stat`` and ``list``. A read of such a folder answered "is
a directory" (the read path reads without a ``stat`` first, and the store's refusal was only
checked against the policy and the files above), a write of a file at its name "is a directory",
and ``mkdir(exist_ok=False)`` "already exists": each told that hidden entries were there. Each
call runs in two fresh worlds, with the hidden entries and without, on the memory and the local
store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from security_stores import seed

from bastion import (
    BastionError,
    Labels,
    Mount,
    Policy,
    Principal,
    Rule,
    SyncWorkspace,
    Workspace,
)
from bastion.agents.tools import Toolset
from bastion.core.ports import Store
from bastion.workspace.blocking import run_blocking

OWNER = Principal.of("owner", clearance="restricted")
READER = Principal.of("reader", clearance="internal")
SECRET = "---\nclassification: restricted\n---\nzebra secret\n"
RULES = (Rule.deny("*", "/docs/d/**", principals=["reader"]),)


def _world(store: Store, hide: str | None, rules: tuple[Rule, ...] = ()) -> SyncWorkspace:
    files: dict[str, str] = {"/open.md": "zebra open\n"}
    if hide == "labels":
        files |= {"/d/x.md": SECRET, "/d/sub/y.md": SECRET}
    elif hide == "sidecar":
        files |= {"/d/x.md": "zebra\n", "/d/x.md.labels.yaml": "classification: restricted\n"}
        files |= {"/d/sub/y.md": "zebra\n", "/d/sub/y.md.labels.yaml": "roles: [hr]\n"}
    elif hide == "rule":
        files |= {"/d/x.md": "zebra\n", "/d/sub/y.md": "zebra\n"}
    run_blocking(seed(store, files))
    policy = Policy(rules=(*rules, Rule.allow("*", "/**")))
    owner = Workspace(
        [Mount.of("/docs", store, labels=Labels(classification="internal"))],
        policy=policy,
        principal=OWNER,
    )
    return owner.with_principal(READER).sync()


def _tool(name: str, **args: Any) -> Callable[[SyncWorkspace], Any]:
    return lambda r: run_blocking(Toolset(r.aio).call(name, args))


CALLS: dict[str, Callable[[SyncWorkspace], Any]] = {
    "read_text": lambda r: r.read_text("/docs/d"),
    "read_text lines": lambda r: r.read_text("/docs/d", offset=1, limit=2),
    "read_lines": lambda r: r.read_lines("/docs/d"),
    "read_bytes": lambda r: r.read_bytes("/docs/d"),
    "read_bytes range": lambda r: r.read_bytes("/docs/d", start=0, end=3),
    "read below": lambda r: r.read_text("/docs/d/sub"),
    "stat": lambda r: r.stat("/docs/d"),
    "exists": lambda r: r.exists("/docs/d/sub"),
    "list": lambda r: r.list("/docs/d/sub"),
    "grep": lambda r: r.grep("zebra", "/docs/d"),
    "edit": lambda r: r.edit("/docs/d", "zebra", "x"),
    "copy from": lambda r: r.copy("/docs/d", "/docs/e"),
    "mkdir": lambda r: r.mkdir("/docs/d", exist_ok=False),
    "mkdir below": lambda r: r.mkdir("/docs/d/sub", exist_ok=False),
    "mkdir, then below without parents": lambda r: (
        r.mkdir("/docs/d", exist_ok=False),
        r.mkdir("/docs/d/sub", parents=False, exist_ok=False),
    ),
    "copy a folder onto": lambda r: (r.mkdir("/docs/f"), r.copy("/docs/f", "/docs/d")),
    # without parents, a write into the folder answered "parent does not exist" only when
    # the folder was not there (found by the web app's parity scenarios)
    "write into without parents": lambda r: r.write("/docs/d/new.md", "x", parents=False),
    "write below without parents": lambda r: r.write("/docs/d/sub/new.md", "x", parents=False),
    "append into without parents": lambda r: r.append("/docs/d/new.md", "x", parents=False),
    "write into with parents": lambda r: r.write("/docs/d/new.md", "x"),
    "read_file tool": _tool("read_file", path="/docs/d"),
    "access tool": _tool("access", path="/docs/d", operation="read"),
}
ONTO: dict[str, Callable[[SyncWorkspace], Any]] = {
    "write": lambda r: r.write("/docs/d", "x"),
    "write below": lambda r: r.write("/docs/d/sub", "x"),
    "copy onto": lambda r: r.copy("/docs/open.md", "/docs/d", overwrite=True),
    "move onto": lambda r: r.move("/docs/open.md", "/docs/d"),
    "move a folder onto": lambda r: (r.mkdir("/docs/f"), r.move("/docs/f", "/docs/d"))[1],
    "write_file tool": _tool("write_file", path="/docs/d", content="x"),
}


def _answer(reader: SyncWorkspace, call: Callable[[SyncWorkspace], Any]) -> Any:
    try:
        answer = call(reader)
    except BastionError as exc:
        return f"{type(exc).__name__}: {exc}"
    return answer if isinstance(answer, bool | dict) else "done"


@pytest.mark.parametrize("hide", ["labels", "sidecar", "rule"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_folder_of_hidden_entries_answers_as_a_missing_one(
    make_store: Callable[[str], Store], hide: str, call: str
) -> None:
    rules = RULES if hide == "rule" else ()
    hidden = _answer(_world(make_store("with"), hide, rules), CALLS[call])
    assert hidden == _answer(_world(make_store("without"), None, rules), CALLS[call])


@pytest.mark.parametrize("hide", ["labels", "sidecar"])
@pytest.mark.parametrize("call", sorted(ONTO))
def test_a_file_written_at_a_folder_of_hidden_entries_is_refused_as_policy_would(
    make_store: Callable[[str], Store], hide: str, call: str
) -> None:
    # it cannot be written without the folder's entries going: refused in the words a rule
    # reserving the name gives (docs/security.md, "writes onto hidden names")
    hidden = _answer(_world(make_store("with"), hide), ONTO[call])
    reserved = (Rule.deny("write", "/docs/d", principals=["reader"]),)
    if call == "write below":
        reserved = (Rule.deny("write", "/docs/d/sub", principals=["reader"]),)
    assert hidden == _answer(_world(make_store("without"), None, reserved), ONTO[call])
    assert "is not allowed by policy" in str(hidden)


def test_a_folder_shows_no_time_that_moves_with_hidden_entries(
    make_store: Callable[[str], Store],
) -> None:
    # a folder's modification time moves when an entry is added or removed, hidden or not:
    # a reader watching /docs/d learned when hidden documents came and went
    store = make_store("docs")
    reader = _world(store, None)
    reader.write("/docs/d/mine.md", "zebra mine\n")
    owner = Workspace(
        [Mount.of("/docs", store, labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        principal=OWNER,
    ).sync()

    def seen() -> list[Any]:
        tools = Toolset(reader.aio)
        return [
            reader.stat("/docs/d"),
            [(e.path, e.mtime) for e in reader.list("/docs")],
            run_blocking(tools.call("stat", {"path": "/docs/d"})),
        ]

    before = seen()
    owner.write("/docs/d/x.md", SECRET)
    owner.mkdir("/docs/d/new")
    owner.write("/docs/d/new/y.md", SECRET)
    assert seen() == before
    owner.delete("/docs/d/x.md")
    assert seen() == before


@pytest.mark.parametrize("hide", ["labels", "sidecar"])
def test_a_tree_moved_or_deleted_tells_nothing_of_its_folders_of_hidden_entries(
    make_store: Callable[[str], Store], hide: str
) -> None:
    # /docs/d holds a visible file beside hidden ones and a subfolder of hidden ones only: a
    # move carried that subfolder over, empty, and listed it at the target; a delete refused
    # by a rule on it said the tree held something the caller may not delete
    keep = (Rule.deny("delete", "/docs/d/sub", principals=["reader"]),)

    def after(reader: SyncWorkspace) -> tuple[Any, ...]:
        reader.write("/docs/d/vis.md", "zebra visible\n")
        deleted = _answer(reader, lambda r: r.delete("/docs/d", recursive=True))
        reader.write("/docs/d/vis.md", "zebra visible\n")
        moved = _answer(reader, lambda r: r.move("/docs/d", "/docs/m"))
        tree = sorted(str(e.path) for e in reader.glob("/docs/**"))
        return deleted, moved, tree

    with_hidden = after(_world(make_store("with"), hide, keep))
    assert with_hidden == after(_world(make_store("without"), None, keep))
    assert with_hidden[2] == ["/docs/m", "/docs/m/vis.md", "/docs/open.md"]
