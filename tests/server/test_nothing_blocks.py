"""Nothing blocks the server's event loop (issue 26): a write waiting for a lock another
process holds, or a store that does not answer, delays only the requests that need it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from bastion import LocalStore, MemoryStore, Mount, Policy, VPath
from bastion.core.models import FileInfo
from bastion.governance.identity import IdentityConfig
from bastion.server import create_app
from bastion.workspace import Workspace

from .support import Token, auth, running

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


class _Holder:
    """Another process holding the ``flock`` of a folder until told to let it go."""

    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "held\n"
        self.released = False

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.released = True
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(4) as p:
        yield p


def _client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60)


def test_a_write_waiting_for_a_held_lock_delays_no_one_else(
    tmp_path: Path, identity: IdentityConfig, token: Token, pool: ThreadPoolExecutor
) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.md").write_text("bob's notes\n")
    ws = Workspace(
        [
            Mount.of("/team", LocalStore(tmp_path / "team")),
            Mount.of("/other", LocalStore(tmp_path / "other")),
        ],
        policy=Policy.allow_all(),
    )
    ana, bob = auth(token("ana")), auth(token("bob"))
    holder = _Holder(tmp_path / "team")
    try:
        with running(create_app(ws, identity=identity)) as url, _client(url) as c:
            # A new name in /team needs the folder's lock, which the other process holds.
            write: Future[httpx.Response] = pool.submit(
                c.post, "/v1/files/write", json={"path": "/team/a.md", "content": "x"}, headers=ana
            )
            time.sleep(0.3)  # let the write reach the lock (not an assertion on time)
            health = c.get("/healthz")
            read = c.get("/v1/files/read", params={"path": "/other/notes.md"}, headers=bob)
            listing = c.get("/v1/files", params={"path": "/other"}, headers=bob)
            # They answered while the lock is still held and the write still waits.
            assert not holder.released and not write.done()
            assert health.status_code == 200
            assert read.status_code == 200 and "bob's notes" in read.text
            assert listing.status_code == 200
            holder.release()
            wrote = write.result(timeout=60)
            assert wrote.status_code == 201, wrote.text
            assert (tmp_path / "team" / "a.md").read_text() == "x"
    finally:
        holder.kill()


class SleepyStore(MemoryStore):
    """A memory store whose every read and stat takes 5 seconds (a backend gone slow)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()

    async def stat(self, path: VPath) -> FileInfo:
        self.started.set()
        await asyncio.sleep(5)
        return await super().stat(path)

    async def read_file(self, *args: object, **kwargs: object) -> tuple[FileInfo, bytes]:
        self.started.set()
        await asyncio.sleep(5)
        return await super().read_file(*args, **kwargs)  # type: ignore[arg-type]


def test_a_slow_store_fails_at_its_timeout_and_slows_no_one_else(
    tmp_path: Path, identity: IdentityConfig, token: Token, pool: ThreadPoolExecutor
) -> None:
    (tmp_path / "fast").mkdir()
    (tmp_path / "fast" / "a.md").write_text("quick answer\n")
    sleepy = SleepyStore()
    ws = Workspace(
        [
            Mount.of("/fast", LocalStore(tmp_path / "fast")),
            Mount.of("/slow", sleepy, timeout=2),
        ],
        policy=Policy.allow_all(),
    )
    ana, bob = auth(token("ana")), auth(token("bob"))
    with running(create_app(ws, identity=identity)) as url, _client(url) as c:
        slow = pool.submit(c.get, "/v1/files/read", params={"path": "/slow/a.md"}, headers=ana)
        assert sleepy.started.wait(30)
        answers = [
            c.get("/v1/files/read", params={"path": "/fast/a.md"}, headers=bob) for _ in range(5)
        ]
        answers.append(c.get("/healthz"))
        assert not slow.done()  # all answered while the slow store was still being waited for
        assert [r.status_code for r in answers] == [200] * 6
        assert "quick answer" in answers[0].text
        failed = slow.result(timeout=60)
        assert failed.status_code == 503
        error = failed.json()["error"]
        assert error["code"] == "store_unavailable"
        assert "/slow" in error["message"] and "within 2 s" in error["message"]
