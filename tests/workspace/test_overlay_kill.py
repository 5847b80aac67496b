"""Apply killed with SIGKILL part way, then run again: every file ends in the base with the
layer's content, none half written, none applied twice as a conflict, the layer empty."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bastion import Policy, Principal, Workspace
from bastion.config import MountConfig

FILES = 40
STOP_AFTER = 7

CHILD = """
import asyncio, sys
from pathlib import Path
from bastion import Policy, Principal, Workspace
from bastion.config import MountConfig
from bastion.stores.local import LocalStore

root, stop_after = Path(sys.argv[1]), int(sys.argv[2])
written = 0
real_write = LocalStore.write

async def write(self, path, data, **kw):  # the base stops for good after some writes
    global written
    if self.root_fd == base_fd:
        written += 1
        if written > stop_after:
            (root / "stopped").write_text("")
            await asyncio.sleep(3600)
    return await real_write(self, path, data, **kw)

LocalStore.write = write
mount = MountConfig("/code", "file:project", overlay="file:layers").open(root)
store = mount.store
while not hasattr(store, "base"):
    store = store.inner
base_fd = store.base.root_fd
ws = Workspace([mount], policy=Policy.allow_all(), principal=Principal.of("p"))
asyncio.run(ws.overlay("/code").apply())
"""


def test_apply_killed_part_way_finishes_when_run_again(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    for i in range(FILES):
        (tmp_path / "project" / f"f{i:02}.txt").write_text("base\n")
    mount = MountConfig("/code", "file:project", overlay="file:layers").open(tmp_path)
    ws = Workspace([mount], policy=Policy.allow_all(), principal=Principal.of("p")).sync()
    for i in range(FILES):
        ws.write(f"/code/f{i:02}.txt", f"layer {i}\n" * 100)
    ws.write("/code/brand-new.txt", "new\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), str(STOP_AFTER)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "stopped").exists():
            assert child.poll() is None, "the apply ended before it was stopped"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    applied = [
        i for i in range(FILES) if (tmp_path / "project" / f"f{i:02}.txt").read_text() != "base\n"
    ]
    assert 0 < len(applied) < FILES  # really killed part way
    done = ws.overlay("/code").apply()
    assert done.conflicts == ()
    for i in range(FILES):
        assert (tmp_path / "project" / f"f{i:02}.txt").read_text() == f"layer {i}\n" * 100
    assert (tmp_path / "project" / "brand-new.txt").read_text() == "new\n"
    assert ws.overlay("/code").changes() == []
    leftovers = [p.name for p in (tmp_path / "project").iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no temporary file of a half write
