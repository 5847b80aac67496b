"""A process killed at the local store's commit point (the change journal's ``RecordGate``,
decision 0099): killed before the gate opens, the change is not there (a record started
ahead of the gate may be, naming a write that did not happen); killed right after it, the
record is there and the file is still the old one. An undo of such a record is refused as a
conflict. Never a change without its record. A real process, killed by SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bastion import ConflictError, LocalStore, Mount, Policy, Principal, Workspace
from bastion.workspace.journal import Journal

CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from bastion import LocalStore, Mount, Policy, Principal, Workspace
    from bastion.workspace.journal import Journal, gate

    root, db, when = sys.argv[1], sys.argv[2], sys.argv[3]
    opened = gate.RecordGate.open

    def open_then_die(self, ticket):
        if when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        opened(self, ticket)
        os.kill(os.getpid(), signal.SIGKILL)

    gate.RecordGate.open = open_then_die
    ws = Workspace([Mount.of("/w", LocalStore(root))], policy=Policy.allow_all(),
                   principal=Principal.of("bot"), journal=Journal(db))
    asyncio.run(ws.write("/w/a.md", "new\\n"))
    print("not killed")
    """
)


def _ws(root: Path, db: Path) -> Workspace:
    return Workspace(
        [Mount.of("/w", LocalStore(root))],
        policy=Policy.allow_all(),
        principal=Principal.of("bot"),
        journal=Journal(db),
    )


@pytest.mark.parametrize("when", ["before", "after"])
async def test_a_process_killed_at_the_gate_leaves_no_change_without_its_record(
    tmp_path: Path, when: str
) -> None:
    root, db = tmp_path / "files", tmp_path / "journal.db"
    root.mkdir()
    (root / "a.md").write_text("old\n")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(db), when],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (root / "a.md").read_text() == "old\n"  # killed before the rename
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".bastion-tmp")) == [
        "a.md"
    ]
    ws = _ws(root, db)
    changes = await ws.changes()
    if when == "after":  # the record was committed at the gate
        assert len(changes) == 1
    # before: a record started ahead of the gate may be committed too (the safe side)
    assert [(c.op, c.path) for c in changes] in ([], [("write", "/w/a.md")])
    for change in changes:  # a record of a write that did not happen: its undo is refused
        with pytest.raises(ConflictError):
            await ws.undo(change.id)
    assert (root / "a.md").read_text() == "old\n"
