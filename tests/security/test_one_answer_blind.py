"""Writers who may not read learn nothing of what is there (issue 23, class: *blind writes told
what is there*).

On a write-only mount and under a drop-box rule (write allowed, read and list denied), a
create, an append or an overwrite once answered with the size, time and version of the file it
landed on (``"size": 781``), ``mode="create"`` refused an existing file, and a file labelled
above the writer was refused where a missing one was written. Each case runs the same call in
two worlds, one where files are there and one where they are not, and demands identical
answers, result records and errors included. The decision (docs/policy.md, "Blind writes"):
a blind write replaces what is there (the last write wins, ``create`` included), an append adds
to it, and the answer carries the path and the bytes written, no time, version or labels."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bastion import (
    FileInfo,
    FileLimits,
    MemoryStore,
    Mount,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    Workspace,
)
from bastion.agents.tools import Toolset

USER = Principal.of("user", clearance="internal")
RESTRICTED = "---\nclassification: restricted\n---\nTOPSECRET\n"
BASES = {"write-only mount": "/wo", "drop-box rule": "/docs/inbox"}
THERE = {
    "/r.txt": "x" * 781,
    "/s.txt": RESTRICTED,
    "/t.txt": "plain\n",
    "/t.txt.labels.yaml": "classification: restricted\n",
    "/dir/a.txt": "a\n",
}


async def world(kind: str, *, present: bool) -> tuple[Workspace, Workspace, str]:
    """The writer's workspace, the owner's, and the blind folder."""
    mounts = [Mount.of("/docs", MemoryStore()), Mount.of("/wo", MemoryStore(), "write_only")]
    rules = (Rule.deny(["read", "list"], "/docs/inbox/**"), Rule.allow("*", "/**"))
    ws = Workspace(mounts, policy=Policy(rules=rules, limits=FileLimits(max_file_bytes=1000)))
    owner = Workspace(
        [Mount.of("/docs", mounts[0].store), Mount.of("/wo", mounts[1].store)],
        policy=Policy.allow_all(),
        principal=Principal.of("owner", clearance="restricted"),
    )
    await owner.write("/docs/src.txt", "source\n")  # first: its version is the same in both
    await owner.write("/docs/srcdir/b.txt", "b\n")
    base = BASES[kind]
    if present:
        for path, text in THERE.items():
            await owner.write(base + path, text)
    return ws.with_principal(USER), owner, base


async def told(call: Awaitable[Any]) -> str:
    try:
        result = await call
    except Exception as exc:  # the caller sees the type and the words
        return f"{type(exc).__name__}: {exc}"
    return f"ok {result!r}"


CALLS: dict[str, Callable[[Workspace, str], Awaitable[Any]]] = {
    "overwrite": lambda ws, b: ws.write(f"{b}/r.txt", "new"),
    "create": lambda ws, b: ws.write(f"{b}/r.txt", "new", mode="create"),
    "append": lambda ws, b: ws.append(f"{b}/r.txt", "new"),
    "append near the limit": lambda ws, b: ws.append(f"{b}/r.txt", "y" * 900),
    "over the limit": lambda ws, b: ws.append(f"{b}/r.txt", "y" * 1001),
    "backup": lambda ws, b: ws.write(f"{b}/r.txt", "new", backup=True),
    "onto a labelled file": lambda ws, b: ws.write(f"{b}/s.txt", "new"),
    "append to a labelled file": lambda ws, b: ws.append(f"{b}/s.txt", "new"),
    "onto a file a sidecar labels": lambda ws, b: ws.write(f"{b}/t.txt", "new"),
    "create a labelled file": lambda ws, b: ws.write(f"{b}/s.txt", "new", mode="create"),
    "conditional": lambda ws, b: ws.write(f"{b}/r.txt", "new", if_version="1"),
    "a sidecar": lambda ws, b: ws.write(f"{b}/r.txt.labels.yaml", "classification: public\n"),
    "no parents": lambda ws, b: ws.write(f"{b}/dir/n.txt", "new", parents=False),
    "mkdir": lambda ws, b: ws.mkdir(f"{b}/dir", exist_ok=False),
    "mkdir no parents": lambda ws, b: ws.mkdir(f"{b}/dir", parents=False, exist_ok=False),
    "copy in": lambda ws, b: ws.copy("/docs/src.txt", f"{b}/r.txt"),
    "copy in, overwrite": lambda ws, b: ws.copy("/docs/src.txt", f"{b}/r.txt", overwrite=True),
    "copy a folder in": lambda ws, b: ws.copy("/docs/srcdir", f"{b}/new"),
    "move in": lambda ws, b: ws.move("/docs/src.txt", f"{b}/r.txt"),
    "move in, overwrite": lambda ws, b: ws.move("/docs/src.txt", f"{b}/r.txt", overwrite=True),
    "read": lambda ws, b: ws.read_text(f"{b}/r.txt"),
    "stat": lambda ws, b: ws.stat(f"{b}/r.txt"),
    "exists": lambda ws, b: ws.exists(f"{b}/r.txt"),
    "delete": lambda ws, b: ws.delete(f"{b}/r.txt"),
}


@pytest.mark.parametrize("kind", list(BASES))
@pytest.mark.parametrize("call", list(CALLS))
async def test_a_blind_writer_is_told_the_same_whether_or_not_a_file_is_there(
    kind: str, call: str
) -> None:
    there, _, base = await world(kind, present=True)
    nothing, _, _ = await world(kind, present=False)
    answer = await told(CALLS[call](there, base))
    assert answer == await told(CALLS[call](nothing, base))
    assert "781" not in answer and "TOPSECRET" not in answer and "restricted" not in answer


@pytest.mark.parametrize("kind", list(BASES))
async def test_a_blind_write_answers_with_what_was_written_only(kind: str) -> None:
    ws, owner, base = await world(kind, present=True)
    info = await ws.append(f"{base}/r.txt", "new")
    assert info == FileInfo(info.path, info.kind, 3)  # no time, no version, no labels
    assert await owner.read_text(f"{base}/r.txt") == "x" * 781 + "new"  # appended
    await ws.write(f"{base}/r.txt", "over", mode="create")
    assert await owner.read_text(f"{base}/r.txt") == "over"  # the last write wins
    await ws.write(f"{base}/s.txt", "mine\n")
    assert await owner.read_text(f"{base}/s.txt") == "mine\n"
    t = await ws.write(f"{base}/t.txt", "mine\n")
    assert t.labels is None
    # the sidecar stays: the file written there is as hard to read as the one it replaced
    assert (await owner.stat(f"{base}/t.txt")).labels.classification == "restricted"


@pytest.mark.parametrize("kind", list(BASES))
async def test_what_cannot_be_done_blind_is_always_refused(kind: str) -> None:
    ws, owner, base = await world(kind, present=False)
    with pytest.raises(PolicyDeniedError, match="if_version"):
        await ws.write(f"{base}/new.txt", "x", if_version="1")
    with pytest.raises(PolicyDeniedError, match="labels sidecar"):
        await ws.write(f"{base}/new.txt.labels.yaml", "classification: public\n")
    assert not await owner.exists(f"{base}/new.txt.labels.yaml")


@pytest.mark.parametrize("kind", list(BASES))
async def test_a_blind_write_onto_a_folder_is_refused_in_policy_words(kind: str) -> None:
    """The residual (docs/security.md, "Writes onto hidden names"): a write onto a folder's
    name, or below a file, cannot succeed without touching what is there; it is refused as a
    rule reserving the name would refuse it, never "is a directory" or "not found"."""
    ws, owner, base = await world(kind, present=True)
    for path in (f"{base}/dir", f"{base}/r.txt/below.txt"):
        with pytest.raises(PolicyDeniedError) as caught:
            await ws.write(path, "x")
        assert str(caught.value) == f"write on {path} is not allowed by policy"
    assert await owner.read_text(f"{base}/r.txt") == "x" * 781


TOOLS: dict[str, dict[str, Any]] = {
    "write_file": {"path": "R", "content": "new"},
    "edit_file": {"path": "R", "old_string": "x", "new_string": "y"},
    "read_file": {"path": "R"},
    "stat": {"path": "R"},
    "delete": {"path": "R"},
    "copy": {"src": "/docs/src.txt", "dst": "R"},
    "move": {"src": "/docs/src.txt", "dst": "R", "overwrite": True},
}


@pytest.mark.parametrize("kind", list(BASES))
@pytest.mark.parametrize("tool", list(TOOLS))
async def test_the_agent_tools_tell_a_blind_writer_the_same(kind: str, tool: str) -> None:
    answers = []
    for present in (True, False):
        ws, _, base = await world(kind, present=present)
        tools = Toolset(ws)
        args = {
            k: v.replace("R", f"{base}/r.txt") if v == "R" else v for k, v in TOOLS[tool].items()
        }
        answers.append(await tools.call(tool, args) if tool in tools else None)
    assert answers[0] == answers[1]
    assert "781" not in repr(answers[0])


@pytest.mark.parametrize("kind", list(BASES))
async def test_the_write_tool_says_nothing_of_a_file_there(kind: str) -> None:
    ws, owner, base = await world(kind, present=True)
    out = await Toolset(ws).call("write_file", {"path": f"{base}/r.txt", "content": "new"})
    assert out == {"success": True, "path": f"{base}/r.txt", "size": 3, "created": False}
    assert await owner.read_text(f"{base}/r.txt") == "new"
