"""A mount the principal may see nothing of is no mount at all (issue 23, class: *a hidden
mount told from no mount*).

Each case builds two worlds that differ only by what the principal may not see: one with the
mount ``/vault`` (holding a file and a folder), one without it; the policy, the other mounts and
their content are the same. Every operation, through the Python API and the agent tools, must
answer the same in both, error class and words included, and a list of mounts in a message
names only mounts the principal may see.

The mount is hidden seven ways: by its labels, by no rule at all (default deny), by a deny rule
that covers it, by a blocked segment in its prefix, by rules for someone else, a write-only
mount the principal may not write, a read-only mount where it may only write. A mount nested
below a visible one is hidden like a missing folder of the visible one (the last tests)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bastion import (
    FileInfo,
    FileLimits,
    Labels,
    MemoryStore,
    Mount,
    NoMountError,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    Workspace,
)
from bastion.agents.tools import Toolset
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.sandbox import SandboxError
from bastion.sandbox.bwrap import bwrap_binary

USER = Principal.of("user", clearance="internal")
ADMIN = Principal.of("admin", roles={"board"}, clearance="restricted")
VISIBLE = (Rule.allow("*", "/docs/**"), Rule.allow("write", "/drop/**"))

WAYS: dict[str, tuple[Callable[[], Mount], tuple[Rule, ...], FileLimits]] = {}


def _way(name: str, vault: Callable[[], Mount], rules: tuple[Rule, ...], **limits: Any) -> None:
    WAYS[name] = (vault, rules, FileLimits(**limits))


_way(
    "labels",
    lambda: Mount.of("/vault", MemoryStore(), labels=Labels(roles=frozenset({"board"}))),
    (Rule.allow("*", "/**"),),
)
_way("no rule", lambda: Mount.of("/vault", MemoryStore()), VISIBLE)
_way(
    "deny rule",
    lambda: Mount.of("/vault", MemoryStore()),
    (Rule.deny("*", "/vault/**", description="the vault"), Rule.allow("*", "/**")),
)
_way(
    "blocked segment",
    lambda: Mount.of("/.vault", MemoryStore()),
    (Rule.allow("*", "/**"),),
    blocked_segments=frozenset({".vault"}),
)
_way(
    "rules for someone else",
    lambda: Mount.of("/vault", MemoryStore()),
    (*VISIBLE, Rule.allow("*", "/vault/**", principals={"alice"})),
)
_way("write-only, no write rule", lambda: Mount.of("/vault", MemoryStore(), "write_only"), VISIBLE)
_way(
    "read-only, only write rules",
    lambda: Mount.of("/vault", MemoryStore(), "read_only"),
    (*VISIBLE, Rule.allow("write", "/vault/**")),
)


async def world(way: str, *, hidden: bool, more: tuple[Rule, ...] = ()) -> tuple[Workspace, str]:
    """The principal's workspace, and the hidden mount's prefix (``/vault`` or ``/.vault``);
    ``more``: rules put first."""
    make, rules, limits = WAYS[way]
    rules = (*more, *rules)
    vault = make()
    mounts = [Mount.of("/docs", MemoryStore()), Mount.of("/drop", MemoryStore(), "write_only")]
    if hidden:
        mounts.append(vault)
    ws = Workspace(
        mounts, policy=Policy(rules=rules, limits=limits), knowledge=Knowledge(MemoryIndex())
    )
    admin = Workspace(ws.mounts, policy=Policy.allow_all(), principal=ADMIN)
    await admin.write("/docs/a.txt", "open zebra\n")
    if hidden:
        await seed(vault, {"/f.txt": "hidden zebra\n", "/dir/g.txt": "hidden zebra\n"})
    return ws.with_principal(USER), str(vault.prefix)


async def seed(mount: Mount, files: dict[str, str]) -> None:
    """Write into ``mount``'s store as its owner would (whatever its scope)."""
    owner = Workspace([Mount.of("/", mount.store)], policy=Policy.allow_all())
    for path, text in files.items():
        await owner.write(path, text)


async def told(call: Awaitable[Any]) -> str:
    """What the caller is told: the error's class and words, or the result's shape."""
    try:
        result = await call
    except Exception as exc:  # the caller sees the type and the words
        return f"{type(exc).__name__}: {exc}"
    if isinstance(result, list):
        return "ok " + repr(sorted(str(e.path) for e in result))
    if isinstance(result, FileInfo):
        return f"ok {result.path} {result.kind} {result.size}"
    if hasattr(result, "hits"):
        return "ok hits " + repr([h.path for h in result.hits])
    if hasattr(result, "matches"):
        return "ok matches " + repr([m.path for m in result.matches])
    if hasattr(result, "citations"):
        return f"ok answer {result.answer!r} {list(result.citations)!r}"
    return f"ok {result!r}"


CALLS: dict[str, Callable[[Workspace, str], Awaitable[Any]]] = {
    "read": lambda ws, v: ws.read_text(f"{v}/f.txt"),
    "read bytes": lambda ws, v: ws.read_bytes(f"{v}/f.txt", start=0, end=3),
    "read lines": lambda ws, v: ws.read_lines(f"{v}/f.txt", limit=1),
    "stat file": lambda ws, v: ws.stat(f"{v}/f.txt"),
    "stat mount": lambda ws, v: ws.stat(v),
    "exists file": lambda ws, v: ws.exists(f"{v}/f.txt"),
    "exists mount": lambda ws, v: ws.exists(v),
    "write": lambda ws, v: ws.write(f"{v}/f.txt", "x"),
    "write new": lambda ws, v: ws.write(f"{v}/new/n.txt", "x"),
    "write create": lambda ws, v: ws.write(f"{v}/f.txt", "x", mode="create"),
    "write no parents": lambda ws, v: ws.write(f"{v}/none/n.txt", "x", parents=False),
    "append": lambda ws, v: ws.append(f"{v}/f.txt", "x"),
    "edit": lambda ws, v: ws.edit(f"{v}/f.txt", "hidden", "open"),
    "mkdir": lambda ws, v: ws.mkdir(f"{v}/dir", exist_ok=False),
    "list mount": lambda ws, v: ws.list(v),
    "list folder": lambda ws, v: ws.list(f"{v}/dir", recursive=True),
    "list root": lambda ws, v: ws.list("/", recursive=True),
    "glob in": lambda ws, v: ws.glob("**", path=v),
    "glob all": lambda ws, v: ws.glob("**"),
    "glob absolute": lambda ws, v: ws.glob(f"{v}/**"),
    "grep in": lambda ws, v: ws.grep("zebra", v),
    "grep all": lambda ws, v: ws.grep("zebra", "/"),
    "delete": lambda ws, v: ws.delete(f"{v}/f.txt"),
    "delete tree": lambda ws, v: ws.delete(f"{v}/dir", recursive=True),
    "move out": lambda ws, v: ws.move(f"{v}/f.txt", "/docs/m.txt"),
    "move in": lambda ws, v: ws.move("/docs/a.txt", f"{v}/m.txt"),
    "copy out": lambda ws, v: ws.copy(f"{v}/dir", "/docs/c"),
    "copy in": lambda ws, v: ws.copy("/docs/a.txt", f"{v}/c.txt", overwrite=True),
    "search in": lambda ws, v: ws.search("zebra", mode="bm25", path=v),
    "search all": lambda ws, v: ws.search("zebra", mode="bm25"),
    "ask in": lambda ws, v: ws.ask("where is the zebra?", mode="bm25", path=v),
    "run in": lambda ws, v: ws.run(["true"], cwd=v),
}


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("call", list(CALLS))
async def test_a_mount_seen_nothing_of_answers_as_no_mount(way: str, call: str) -> None:
    there, v = await world(way, hidden=True)
    absent, _ = await world(way, hidden=False)
    answer = await told(CALLS[call](there, v))
    assert answer == await told(CALLS[call](absent, v))
    assert "/vault," not in answer and "/vault" + ")" not in answer  # never named as mounted


@pytest.mark.parametrize("way", list(WAYS))
async def test_the_no_mount_error_names_only_mounts_the_principal_sees(way: str) -> None:
    there, v = await world(way, hidden=True)
    for call in (there.read_text(f"{v}/f.txt"), there.write(f"{v}/f.txt", "x")):
        with pytest.raises(NoMountError) as caught:
            await call
        assert str(caught.value) == f"{v}/f.txt is not under any mount; mounted: /docs, /drop"
    assert v not in there.filesystem_map()
    assert [str(e.path) for e in await there.list("/")] == ["/docs", "/drop"]


@pytest.mark.parametrize("way", list(WAYS))
async def test_a_command_sees_a_hidden_mount_as_no_mount(way: str) -> None:
    """``run`` with ``execute`` granted everywhere: from the hidden mount, and from a visible
    folder looking for it (the sandbox's view is made of what the principal sees)."""
    try:
        bwrap_binary()
    except SandboxError as exc:  # as the sandbox suites do: the missing part is named
        pytest.skip(f"bubblewrap cannot run here: {exc}")
    execute = (Rule.allow("execute", "/**"),)
    outs = []
    for hidden in (True, False):
        ws, v = await world(way, hidden=hidden, more=execute)
        inside = await told(ws.run(["pwd"], cwd=v))
        looked = await ws.run(["sh", "-c", f"ls -a / {v} 2>&1; cat {v}/f.txt 2>&1"], cwd="/docs")
        outs.append((inside, looked.exit_code, looked.stdout, looked.stderr, looked.changed))
    assert outs[0] == outs[1]
    assert "zebra" not in repr(outs[0])


TOOL_CALLS: dict[str, dict[str, Any]] = {
    "read_file": {"path": "{v}/f.txt"},
    "stat": {"path": "{v}/f.txt"},
    "list_files": {"path": "{v}"},
    "glob": {"pattern": "**", "path": "{v}"},
    "grep": {"pattern": "zebra", "path": "{v}"},
    "write_file": {"path": "{v}/f.txt", "content": "x"},
    "edit_file": {"path": "{v}/f.txt", "old_string": "hidden", "new_string": "open"},
    "mkdir": {"path": "{v}/dir"},
    "delete": {"path": "{v}/f.txt"},
    "move": {"src": "{v}/f.txt", "dst": "/docs/m.txt"},
    "copy": {"src": "/docs/a.txt", "dst": "{v}/c.txt"},
    "search": {"query": "zebra", "path": "{v}"},
}


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("tool", list(TOOL_CALLS))
async def test_the_agent_tools_tell_a_hidden_mount_as_no_mount(way: str, tool: str) -> None:
    """The tools' session looks paths up in the principal's view (an ``edit_file`` once said
    ``not found`` for a hidden mount and ``is not under any mount`` for none)."""
    answers = []
    for hidden in (True, False):
        ws, v = await world(way, hidden=hidden)
        tools = Toolset(ws)
        args = {
            k: a.replace("{v}", v) if isinstance(a, str) else a for k, a in TOOL_CALLS[tool].items()
        }
        answers.append(await tools.call(tool, args) if tool in tools else "no such tool")
    assert answers[0] == answers[1]


# -- a hidden mount below a visible one ------------------------------------------------------

NESTED: dict[str, tuple[Callable[[], Mount], tuple[Rule, ...]]] = {
    "labels": (
        lambda: Mount.of("/docs/sub", MemoryStore(), labels=Labels(roles=frozenset({"board"}))),
        (Rule.allow("*", "/**"),),
    ),
    "deny rule": (
        lambda: Mount.of("/docs/sub", MemoryStore()),
        (Rule.deny("*", "/docs/sub/**", description="reserved"), Rule.allow("*", "/**")),
    ),
    "read-only below a read-only mount": (
        lambda: Mount.of("/docs/sub", MemoryStore(), "read_only"),
        (Rule.allow("*", "/docs/*.txt"), Rule.allow("write", "/**"), Rule.allow("*", "/other/**")),
    ),
}


async def nested(way: str, *, hidden: bool) -> Workspace:
    vault, rules = NESTED[way]
    scope = "read_only" if way.startswith("read-only") else "read_write"
    mounts = [Mount.of("/docs", MemoryStore(), scope), Mount.of("/other", MemoryStore())]
    if hidden:
        mounts.append(vault())
    ws = Workspace(mounts, policy=Policy(rules=rules), knowledge=Knowledge(MemoryIndex()))
    await seed(mounts[0], {"/a.txt": "open zebra\n"})
    await seed(mounts[1], {"/o.txt": "other zebra\n"})
    if hidden:
        await seed(mounts[2], {"/f.txt": "hidden zebra\n"})
    return ws.with_principal(USER)


NESTED_CALLS: dict[str, Callable[[Workspace], Awaitable[Any]]] = {
    "read": lambda ws: ws.read_text("/docs/sub/f.txt"),
    "stat": lambda ws: ws.stat("/docs/sub"),
    "exists": lambda ws: ws.exists("/docs/sub/f.txt"),
    "list parent": lambda ws: ws.list("/docs", recursive=True),
    "list it": lambda ws: ws.list("/docs/sub"),
    "glob": lambda ws: ws.glob("/docs/**"),
    "grep": lambda ws: ws.grep("zebra", "/docs"),
    "delete": lambda ws: ws.delete("/docs/sub/f.txt"),
    "delete it": lambda ws: ws.delete("/docs/sub", recursive=True),
    "move out": lambda ws: ws.move("/docs/sub/f.txt", "/other/m.txt"),
    "copy out": lambda ws: ws.copy("/docs/sub", "/other/c"),
    "edit": lambda ws: ws.edit("/docs/sub/f.txt", "hidden", "open"),
    "search": lambda ws: ws.search("zebra", mode="bm25", path="/docs"),
}


@pytest.mark.parametrize("way", list(NESTED))
@pytest.mark.parametrize("call", list(NESTED_CALLS))
async def test_a_hidden_nested_mount_reads_as_a_missing_folder(way: str, call: str) -> None:
    there = await told(NESTED_CALLS[call](await nested(way, hidden=True)))
    assert there == await told(NESTED_CALLS[call](await nested(way, hidden=False)))


CHANGES: dict[str, Callable[[Workspace], Awaitable[Any]]] = {
    "write": lambda ws: ws.write("/docs/sub/f.txt", "x"),
    "write below": lambda ws: ws.write("/docs/sub/new/n.txt", "x"),
    "append": lambda ws: ws.append("/docs/sub/f.txt", "x"),
    "mkdir": lambda ws: ws.mkdir("/docs/sub/q/r"),
    "copy in": lambda ws: ws.copy("/other/o.txt", "/docs/sub/c.txt"),
    "move in": lambda ws: ws.move("/other/o.txt", "/docs/sub/m.txt"),
}


@pytest.mark.parametrize("way", ["deny rule", "read-only below a read-only mount"])
@pytest.mark.parametrize("call", list(CHANGES))
async def test_a_change_below_a_hidden_nested_mount_is_refused_as_the_mount_above_refuses(
    way: str, call: str
) -> None:
    """Where the visible mount above would refuse the change (a rule, its scope), the answer
    is its refusal, word for word."""
    there = await told(CHANGES[call](await nested(way, hidden=True)))
    assert there == await told(CHANGES[call](await nested(way, hidden=False)))
    assert there.startswith(("PolicyDeniedError", "ScopeError")), there


@pytest.mark.parametrize("call", list(CHANGES))
async def test_a_change_below_a_hidden_nested_mount_is_refused_in_policy_words(call: str) -> None:
    """Where it would be allowed, it cannot be made without touching the hidden mount: it is
    refused as a rule reserving the name would refuse it (docs/security.md, the residual), and
    nothing is written anywhere."""
    ws = await nested("labels", hidden=True)
    with pytest.raises(PolicyDeniedError) as caught:
        await CHANGES[call](ws)
    assert str(caught.value).endswith("is not allowed by policy")
    assert str(caught.value).startswith("write on /docs/sub/")
    admin = Workspace(ws.mounts, policy=Policy.allow_all(), principal=ADMIN)
    assert [str(e.path) for e in await admin.list("/docs", recursive=True)] == [
        "/docs/a.txt",
        "/docs/sub",
        "/docs/sub/f.txt",
    ]
    assert await admin.read_text("/docs/sub/f.txt") == "hidden zebra\n"
