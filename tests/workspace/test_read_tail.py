"""Reads from the end: a negative line offset gives the last lines of a file, read backwards
in chunks from its end, and they are the file's own last lines (the same rows a read from the
start gives), on every store; a hidden file is as absent as ever; the read limit holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import (
    FileLimits,
    LocalStore,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    Workspace,
)
from bastion.agents.tools import OutputLimits, Toolset
from bastion.core.errors import LimitError
from bastion.workspace import tail
from bastion.workspace.files import rows_of


@pytest.fixture(params=["memory", "local"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    store = MemoryStore() if request.param == "memory" else LocalStore(tmp_path)
    return Workspace([Mount.of("/m", store)], policy=Policy.allow_all())


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="ab\n\r é", max_size=60),
    count=st.integers(1, 12),
    limit=st.one_of(st.none(), st.integers(1, 4)),
    chunk=st.sampled_from([1, 3, 7, 64 * 1024]),
)
def test_the_last_lines_are_the_files_last_lines(
    text: str, count: int, limit: int | None, chunk: int
) -> None:
    store = MemoryStore()
    ws = Workspace([Mount.of("/m", store)], policy=Policy.allow_all())
    asyncio.run(ws.write("/m/a.txt", text))
    old, tail.TAIL_CHUNK = tail.TAIL_CHUNK, chunk
    try:
        page = asyncio.run(ws.read_lines("/m/a.txt", offset=-count, limit=limit))
        as_text = asyncio.run(ws.read_text("/m/a.txt", offset=-count, limit=limit))
    finally:
        tail.TAIL_CHUNK = old
    last = list(rows_of(text))[-count:]
    assert list(page.rows) == last[: limit or None]
    assert page.rows == rows_of(page.text)  # the rows the read kept are the page's lines
    assert page.more == (limit is not None and len(last) > limit)
    assert page.from_end == -len(last)
    assert as_text == page.text


async def test_a_tail_of_a_big_file_on_every_store(ws: Workspace) -> None:
    lines = [f"line {i:06}" for i in range(50_000)]
    await ws.write("/m/big.log", "\n".join(lines) + "\n")
    page = await ws.read_lines("/m/big.log", offset=-100)
    assert list(page.rows) == lines[-100:]
    assert page.info.size == sum(len(x) + 1 for x in lines)
    one = await ws.read_lines("/m/big.log", offset=-3, limit=1)
    assert (list(one.rows), one.more, one.from_end) == (lines[-3:-2], True, -3)


async def test_a_hidden_file_is_as_absent_from_the_end(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    admin = Workspace([Mount.of("/m", store)], policy=Policy.allow_all())
    await admin.write("/m/secret.md", "---\nclassification: restricted\n---\nTOPSECRET\n")
    user = admin.with_principal(Principal.of("u", clearance="internal"))
    errors = []
    for path in ("/m/secret.md", "/m/absent.md"):
        with pytest.raises(NotFoundError) as caught:
            await user.read_lines(path, offset=-5)
        errors.append(str(caught.value).replace(path, "<p>"))
    assert errors[0] == errors[1]


async def test_the_read_limit_holds_from_the_end() -> None:
    policy = Policy(rules=Policy.allow_all().rules, limits=FileLimits(max_file_bytes=500))
    admin = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())
    ws = Workspace(admin.mounts, policy=policy)
    await admin.write("/m/a.txt", "x" * 150 + "\n" + "y" * 400 + "\n")
    assert list((await ws.read_lines("/m/a.txt", offset=-1)).rows) == ["y" * 400]
    with pytest.raises(LimitError, match="over the 500-byte read limit"):
        await ws.read_lines("/m/a.txt", offset=-2)


async def test_the_read_tool_numbers_a_tail_from_the_end() -> None:
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())
    await ws.write("/m/a.txt", "one\ntwo\nthree\n")
    tools = Toolset(ws, limits=OutputLimits(max_chars=2000))
    out = await tools.call("read_file", {"path": "/m/a.txt", "offset": -2})
    assert out == {"success": True, "path": "/m/a.txt", "content": "    -2\ttwo\n    -1\tthree"}
    out = await tools.call("read_file", {"path": "/m/a.txt", "offset": -9, "limit": 1})
    assert out["content"] == "    -3\tone\n[... more lines: call again with offset=-2]"
