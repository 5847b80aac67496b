"""Host permissions that change under a local mount (``chmod 000`` of a file, of a folder).

Root reads any file whatever its mode, so the workspace runs in a helper process as the
unprivileged user ``nobody`` (it drops root with ``setuid`` once its imports are done),
driven line by line over its stdin; this test process changes the modes between the steps. Each fault: a one-line error
naming the mount, the content intact, search leaves out what it cannot vouch for, and once the
modes are back every operation works.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .support import NO_PERMISSION, says, tells_the_mount

CHILD = r"""
import asyncio, json, os, sys
from bastion import Knowledge, LocalStore, MemoryStore, Mount, Policy, Workspace

async def warm_up():
    # Python's own library may lie where the unprivileged user cannot read (a root-only home):
    # everything the steps use is imported by doing each step once before the switch.
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all(), knowledge=Knowledge())
    await ws.write("/m/a.md", "# A\n\nwarm\n")
    await ws.read_text("/m/a.md")
    await ws.list("/m")
    await ws.search("warm", mode="bm25", path="/m")
    try:
        await ws.read_text("/m/none.md")
    except Exception as exc:
        json.dumps({"error": type(exc).__name__, "message": str(exc)})

async def main():
    await warm_up()
    uid, gid = int(sys.argv[2]), int(sys.argv[3])
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    ws = Workspace(
        [Mount.of("/share", LocalStore(sys.argv[1]))], policy=Policy.allow_all(),
        knowledge=Knowledge(),
    )
    for line in sys.stdin:
        op, path, text = json.loads(line)
        try:
            if op == "write":
                await ws.write(path, text)
                answer = {"ok": None}
            elif op == "read":
                answer = {"ok": await ws.read_text(path)}
            elif op == "list":
                answer = {"ok": sorted(e.path.name for e in await ws.list(path))}
            elif op == "search":
                hits = (await ws.search(text, mode="bm25", path=path)).hits
                answer = {"ok": sorted(h.path for h in hits)}
        except Exception as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(answer), flush=True)

asyncio.run(main())
"""


class Helper:
    """The workspace in a process of its own, running as ``nobody``."""

    def __init__(self, folder: Path, uid: int, gid: int) -> None:
        # It starts as root and switches to ``uid`` itself, once its imports are done.
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(folder), str(uid), str(gid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )

    def __call__(self, op: str, path: str, text: str | None = None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([op, path, text]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            assert self.proc.stderr is not None
            pytest.fail(f"the helper process stopped: {self.proc.stderr.read()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ok(self, op: str, path: str, text: str | None = None) -> Any:
        answer = self(op, path, text)
        assert "ok" in answer, answer
        return answer["ok"]

    def fails(self, op: str, path: str, text: str | None = None) -> str:
        answer = self(op, path, text)
        assert answer.get("error") == "StoreError", answer
        message: str = answer["message"]
        tells_the_mount(message, "/share")
        return message

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            assert pipe is not None
            pipe.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def nobody() -> tuple[int, int]:
    if os.geteuid() != 0:
        pytest.skip("permission fault test needs root to run its helper as another user")
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("permission fault test needs an unprivileged user 'nobody'; there is none")
    return user.pw_uid, user.pw_gid


@pytest.fixture
def folder(nobody: tuple[int, int]) -> Iterator[Path]:
    # Not under pytest's temporary folder, which only root may enter.
    where = Path(tempfile.mkdtemp(prefix="bastion-perm-"))
    os.chmod(where, 0o755)
    os.chown(where, *nobody)
    try:
        yield where
    finally:
        for path in [where, *where.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        shutil.rmtree(where)


@pytest.fixture
def helper(folder: Path, nobody: tuple[int, int]) -> Iterator[Helper]:
    running = Helper(folder, *nobody)
    try:
        yield running
    finally:
        running.close()


def test_a_file_made_unreadable_under_the_store(folder: Path, helper: Helper) -> None:
    helper.ok("write", "/share/a.md", "# A\n\ngannet colony\n")
    assert helper.ok("search", "/share", "gannet") == ["/share/a.md"]
    os.chmod(folder / "a.md", 0)
    try:
        says(helper.fails("read", "/share/a.md"), "/share/a.md", *NO_PERMISSION)
        assert helper.ok("list", "/share") == ["a.md"]
    finally:
        os.chmod(folder / "a.md", 0o644)
    assert helper.ok("read", "/share/a.md") == "# A\n\ngannet colony\n"
    helper.ok("write", "/share/a.md", "# A\n\ngannet chicks\n")
    assert helper.ok("read", "/share/a.md") == "# A\n\ngannet chicks\n"
    assert helper.ok("search", "/share", "chicks") == ["/share/a.md"]


def test_a_folder_made_unreachable_under_the_store(folder: Path, helper: Helper) -> None:
    helper.ok("write", "/share/sub/b.md", "# B\n\ntern nest\n")
    assert helper.ok("search", "/share", "tern") == ["/share/sub/b.md"]
    os.chmod(folder / "sub", 0)
    try:
        # The store names the folder it may not open; the caller reads it under the mount.
        for op, path, text in (
            ("read", "/share/sub/b.md", None),
            ("write", "/share/sub/b.md", "# B\n\ntern eggs\n"),
            ("write", "/share/sub/c.md", "# C\n\ntern\n"),
            ("list", "/share/sub", None),
        ):
            says(helper.fails(op, path, text), "/share/sub", *NO_PERMISSION)
        # The hit cannot be checked against its file: it is left out, not shown stale.
        assert helper.ok("search", "/share", "tern") == []
        assert helper.ok("list", "/share") == ["sub"]
    finally:
        os.chmod(folder / "sub", 0o755)
    assert sorted(os.listdir(folder / "sub")) == ["b.md"]  # nothing half-written
    assert helper.ok("read", "/share/sub/b.md") == "# B\n\ntern nest\n"
    assert helper.ok("search", "/share", "tern") == ["/share/sub/b.md"]
    helper.ok("write", "/share/sub/c.md", "# C\n\ntern eggs\n")
    assert helper.ok("list", "/share/sub") == ["b.md", "c.md"]
