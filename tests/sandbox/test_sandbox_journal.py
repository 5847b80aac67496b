"""What a command in the sandbox changes comes back through the workspace, and so lands in the
change journal like any other write, and can be undone."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_support import require_bwrap

from bastion import MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.workspace.journal import Journal

POLICY = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


@pytest.mark.usefixtures("bwrap")
async def test_a_commands_changes_are_journalled_and_undone(tmp_path: Path) -> None:
    ws = Workspace(
        [Mount.of("/scratch", MemoryStore())],
        policy=POLICY,
        principal=Principal.of("agent"),
        journal=Journal(tmp_path / "journal.db"),
    ).with_thread("sandboxed")
    await ws.write("/scratch/a.txt", "alpha\n")
    result = await ws.run(
        ["/bin/sh", "-c", "echo beta > a.txt && echo new > b.txt"], cwd="/scratch"
    )
    assert result.exit_code == 0, result.stderr
    changes = await ws.changes(thread="sandboxed")
    touched = {e.path for c in changes[1:] for e in c.entries}
    assert touched == {"/scratch/a.txt", "/scratch/b.txt"}
    await ws.revert("sandboxed")
    assert not await ws.exists("/scratch/a.txt")
    assert not await ws.exists("/scratch/b.txt")
