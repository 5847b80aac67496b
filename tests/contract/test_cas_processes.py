"""Compare-and-set across real processes, on every store that can be shared by processes.

Four worker processes (``cas_worker.py``), each with its own store object, start together and

1. race to create the same files with ``mode="create"``: each file is created by exactly one
   of them and holds that one's name;
2. append lines to one file: every acknowledged line is there, once, whole;
3. increment one counter file by compare-and-set (read with its version, write the next value
   with ``if_version``, retry on conflict). One of them, the victim, never stops: it is killed
   with SIGKILL after a few acknowledged increments, at a random moment, often in the middle
   of a write. The others finish their count.

Every write of value ``V`` read ``V - 1`` under the version it replaced, so with no lost update
the acknowledged values are distinct, and they are all of ``1 .. final`` except at most one:
the victim's last write, which may have landed without being acknowledged. Every read parses
(a counter file is the value on 256 lines: a torn or mixed file would not), in the workers and
at the end. On the local store, a writer killed while holding the directory's lock must not
stop the others: the kernel releases the lock.

Stores: the local disk (also two roots nested in each other, both reaching the counter),
SQLite, PostgreSQL (``pg_dsn``) and S3 through moto's server, which here handles one request
at a time: S3 checks a condition and writes in one step, moto's threaded server does not (two
requests may pass the same ``If-Match`` before either writes), so this stands in for S3's own
promise while testing that Bastion asks for it. The memory store lives in one process and is
not shared; fsspec filesystems other than S3 and LangGraph stores check conditions within one
process only and refuse ``if_version`` and ``mode="create"`` unless the mount says that only
this process writes there (``single_process=True``): tested at the end.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import pytest
from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.memory import InMemoryStore

from bastion.core.errors import ConflictError, StoreError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.stores import local
from bastion.stores._fd import lock_entry
from bastion.stores.fsspec import FsspecStore
from bastion.stores.langgraph import LangGraphStore
from bastion.stores.local import LocalStore
from bastion.stores.registry import store_from_url

from .cas_worker import close_store, counter_body, open_store, parse_counter
from .test_fsspec_store import FAKE_AWS, _client

WORKER = Path(__file__).with_name("cas_worker.py")
WORKERS = 4
INCREMENTS = 25
"""Increments of each worker that is not killed."""
CLAIMS = 12
APPENDS = 8
KILL_AFTER = 5
"""Acknowledged increments of the victim before it is killed."""
WAIT = 120.0
"""Seconds a worker may stay silent before the test fails (a lock never released, say)."""


# -- S3: moto, one request at a time -----------------------------------------------------------


class _OneAtATime:
    """A WSGI app that handles one request at a time (see the module doc)."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


@pytest.fixture(scope="module")
def serial_s3() -> Iterator[str]:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = _OneAtATime(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in FAKE_AWS.items():
                patch.setenv(name, value)
            endpoint = f"http://127.0.0.1:{server.server_address[1]}"
            _client(endpoint).create_bucket(Bucket="cas")  # type: ignore[attr-defined]
            yield endpoint
    finally:
        server.shutdown()
        thread.join(timeout=30)


# -- the race ----------------------------------------------------------------------------------


@pytest.fixture(params=["local", "local-nested-roots", "sqlite", "postgres", "s3"])
def specs(request: pytest.FixtureRequest, tmp_path: Path) -> list[dict[str, Any]]:
    """One worker spec per worker (the first is the victim), over a fresh store."""
    kind: str = request.param
    base: dict[str, Any] = {"counter": "/counter", "claims_dir": "/claims", "log": "/log"}
    if kind == "local":
        (tmp_path / "root").mkdir()
        base |= {"kind": "local", "target": str(tmp_path / "root")}
    elif kind == "local-nested-roots":
        # half the workers open the store at root/, half at root/sub/: one counter file
        (tmp_path / "root" / "sub").mkdir(parents=True)
        outer = {"target": str(tmp_path / "root"), "counter": "/sub/counter", "log": "/sub/log"}
        inner = {"target": str(tmp_path / "root" / "sub")}
        return [
            {"kind": "local", **base, **(outer | {"claims_dir": "/sub/claims"} if n % 2 else inner)}
            for n in range(WORKERS)
        ]
    elif kind == "sqlite":
        base |= {"kind": "sqlite", "target": str(tmp_path / "ws.db")}
    elif kind == "postgres":
        base |= {"kind": "postgres", "target": str(request.getfixturevalue("pg_dsn"))}
    else:
        endpoint = str(request.getfixturevalue("serial_s3"))
        base |= {"kind": "s3", "target": f"cas/{uuid.uuid4().hex}", "endpoint": endpoint}
        base["increments"] = INCREMENTS // 2  # moto, one request at a time, is the slow one
    return [dict(base) for _ in range(WORKERS)]


async def _prepare(spec: dict[str, Any]) -> None:
    store = open_store(spec)
    try:
        counter = VPath.parse(spec["counter"])
        await store.makedirs(counter.parent)
        await store.makedirs(VPath.parse(spec["claims_dir"]))
        await store.write(counter, counter_body(0))
        await store.write(VPath.parse(spec["log"]), b"")
    finally:
        await close_store(store)


async def _final(spec: dict[str, Any]) -> tuple[int, dict[int, bytes], bytes]:
    """The counter's value, each claim file's content and the log, read by a fresh store."""
    store = open_store(spec)
    try:
        value = parse_counter(await store.read_all(VPath.parse(spec["counter"])))
        claims = VPath.parse(spec["claims_dir"])
        owners = {n: await store.read_all(claims / str(n)) for n in range(CLAIMS)}
        log = await store.read_all(VPath.parse(spec["log"]))
    finally:
        await close_store(store)
    return value, owners, log


@dataclass
class _Worker:
    name: str
    proc: subprocess.Popen[str]
    errors: Path
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def pump(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.lines.put(line.strip())
        self.lines.put(None)

    def next_line(self) -> str | None:
        line = self.lines.get(timeout=WAIT)
        if line is not None:
            self.seen.append(line)
        return line

    def why(self) -> str:
        return f"{self.name} (exit {self.proc.poll()}): {self.errors.read_text()[-1000:]}"


def _start(specs: list[dict[str, Any]], folder: Path) -> list[_Worker]:
    env = {**os.environ, **FAKE_AWS}
    workers = []
    for n, given in enumerate(specs):
        name = f"w{n}"
        increments = 10**9 if n == 0 else given.get("increments", INCREMENTS)  # victim: no end
        spec = {**given, "name": name, "claims": CLAIMS, "appends": APPENDS}
        spec["increments"] = increments
        errors = folder / f"{name}.err"
        with errors.open("w") as stderr:
            proc = subprocess.Popen(
                [sys.executable, str(WORKER), json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=env,
            )
        worker = _Worker(name, proc, errors)
        threading.Thread(target=worker.pump, daemon=True).start()
        workers.append(worker)
    return workers


def _run(workers: list[_Worker], rng: random.Random) -> None:
    """Start the workers together, kill the victim mid-run, let the others finish."""
    for worker in workers:
        assert worker.next_line() == "ready", worker.why()
    for worker in workers:
        assert worker.proc.stdin is not None
        worker.proc.stdin.write("go\n")
        worker.proc.stdin.close()
    victim = workers[0]
    acks = 0
    while acks < KILL_AFTER:
        line = victim.next_line()
        assert line is not None, victim.why()
        acks += line.startswith("ack ")
    time.sleep(rng.uniform(0, 0.02))
    os.kill(victim.proc.pid, signal.SIGKILL)
    for worker in workers:
        while worker.next_line() is not None:
            pass
        worker.proc.wait(timeout=WAIT)
    assert victim.proc.returncode == -signal.SIGKILL, victim.why()
    for worker in workers[1:]:
        assert worker.proc.returncode == 0, worker.why()
        assert worker.seen[-1].startswith("done "), worker.why()


def test_compare_and_set_holds_across_processes_and_a_kill(
    specs: list[dict[str, Any]], tmp_path: Path
) -> None:
    asyncio.run(_prepare(specs[1]))
    seed = random.randrange(1 << 32)
    workers = _start(specs, tmp_path)
    try:
        _run(workers, random.Random(seed))
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.proc.kill()
                worker.proc.wait()
    final, owners, log = asyncio.run(_final(specs[1]))

    # create-only: each claim file was created by exactly one worker, and holds its name
    for n in range(CLAIMS):
        winners = [w.name for w in workers if f"won {n}" in w.seen]
        losers = [w.name for w in workers if f"lost {n}" in w.seen]
        assert len(winners) == 1, f"claim {n}: created by {winners} (seed {seed})"
        assert len(losers) == WORKERS - 1, f"claim {n}: refused to {losers} (seed {seed})"
        assert owners[n] == winners[0].encode()

    # appends: every acknowledged line once, whole (all appends end before the kill)
    appended = sorted(
        f"{w.name} {line.split()[1]}"
        for w in workers
        for line in w.seen
        if line.startswith("appended ")
    )
    assert len(appended) == WORKERS * APPENDS
    assert sorted(log.decode().splitlines()) == appended, f"appends lost (seed {seed})"
    assert log.endswith(b"\n")

    # compare-and-set: no acknowledged increment lost, none applied twice
    acked = [int(line.split()[1]) for w in workers for line in w.seen if line.startswith("ack ")]
    assert len(acked) == len(set(acked)), f"a value was written twice (seed {seed})"
    assert len(acked) >= KILL_AFTER + (WORKERS - 1) * specs[1].get("increments", INCREMENTS)
    assert set(acked) <= set(range(1, final + 1)), f"final {final} < an acked value ({seed})"
    unacknowledged = set(range(1, final + 1)) - set(acked)
    assert len(unacknowledged) <= 1, f"lost updates: {sorted(unacknowledged)} (seed {seed})"


# -- stores that cannot check across processes refuse rather than pretend -----------------------

P = VPath.parse
REFUSED = "cannot check versions or existing files across processes"


async def _conditional_writes_are_refused(store: Store) -> None:
    """Plain overwrites work; if_version, create-only writes, appends and create-only copies
    are refused with one line that says what to do, and change nothing."""
    first = await store.write(P("/f.txt"), b"one")
    for call in (
        store.write(P("/f.txt"), b"two", if_version=first.version),
        store.write(P("/g.txt"), b"new", mode=WriteMode.CREATE),
        store.write(P("/f.txt"), b"+", mode=WriteMode.APPEND),
    ):
        with pytest.raises(StoreError, match=REFUSED) as caught:
            await call
        assert "\n" not in str(caught.value) and "overwrite the whole file" in str(caught.value)
    assert await store.read_all(P("/f.txt")) == b"one"
    assert not await store.exists(P("/g.txt"))
    await store.write(P("/f.txt"), b"two")
    assert await store.read_all(P("/f.txt")) == b"two"


async def _conditional_writes_work(store: Store) -> None:
    first = await store.write(P("/f.txt"), b"one", mode=WriteMode.CREATE)
    second = await store.write(P("/f.txt"), b"+", mode=WriteMode.APPEND, if_version=first.version)
    with pytest.raises(ConflictError):
        await store.write(P("/f.txt"), b"stale", if_version=first.version)
    assert (await store.stat(P("/f.txt"))).version == second.version
    assert await store.read_all(P("/f.txt")) == b"one+"


async def test_a_generic_fsspec_filesystem_refuses_unless_single_process(tmp_path: Path) -> None:
    """fsspec's local filesystem: other processes can write it and nothing checks a
    condition on its side."""
    shared = FsspecStore(fsspec.filesystem("file"), root=str(tmp_path / "a"))
    (tmp_path / "a").mkdir()
    await _conditional_writes_are_refused(shared)
    with pytest.raises(StoreError, match=REFUSED):
        await shared.copy_file(P("/f.txt"), P("/copy.txt"))
    assert (await shared.copy_file(P("/f.txt"), P("/copy.txt"), overwrite=True)).size == 3
    (tmp_path / "b").mkdir()
    await _conditional_writes_work(
        FsspecStore(fsspec.filesystem("file"), root=str(tmp_path / "b"), single_process=True)
    )


async def test_the_single_process_option_reaches_an_fsspec_store_by_url(tmp_path: Path) -> None:
    await _conditional_writes_are_refused(store_from_url(f"local://{tmp_path}"))
    (tmp_path / "sub").mkdir()
    await _conditional_writes_work(store_from_url(f"local://{tmp_path}/sub", single_process=True))


class _SharedBackend(BaseStore):
    """A LangGraph store that is not ``InMemoryStore`` (as a Postgres or platform store, which
    other processes share), kept in memory here by delegation."""

    def __init__(self) -> None:
        self._inner = InMemoryStore()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._inner.abatch(ops)


async def test_a_shared_langgraph_store_refuses_unless_single_process() -> None:
    await _conditional_writes_are_refused(LangGraphStore(_SharedBackend(), namespace=("fs",)))
    await _conditional_writes_work(
        LangGraphStore(_SharedBackend(), namespace=("fs",), single_process=True)
    )
    await _conditional_writes_work(LangGraphStore(InMemoryStore(), namespace=("fs",)))


async def test_a_local_disk_without_flock_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the filesystem has no ``flock`` (some network disks), overwrites go on and the
    writes that need the lock are refused."""
    monkeypatch.setattr(local, "lock_entry", lambda fd, name, path: (False, -1))
    store = LocalStore(tmp_path, create=True)
    try:
        await _conditional_writes_are_refused(store)
    finally:
        store.close()


def _try(path: Path, how: int, *, directory: bool = False) -> bool:
    """Whether a new description of ``path`` gets the lock ``how`` at once."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_what_a_writer_of_an_existing_file_locks(tmp_path: Path) -> None:
    """The locks the local store relies on: a writer of an existing file holds the folder's
    lock shared and the file's exclusive, so a writer of another file of the folder goes on,
    a writer of the same file and a creator of a new name (the folder's exclusive) wait; a
    missing name takes the folder's exclusive; closing the descriptors releases all."""
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "b.txt").write_bytes(b"b")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        locked, fd = lock_entry(folder, "a.txt", P("/a.txt"))
        assert locked and fd >= 0
        assert _try(tmp_path / "b.txt", fcntl.LOCK_EX)  # another file: free
        assert _try(tmp_path, fcntl.LOCK_SH, directory=True)  # its other writers: free
        assert not _try(tmp_path / "a.txt", fcntl.LOCK_EX)  # the same file: held
        assert not _try(tmp_path, fcntl.LOCK_EX, directory=True)  # a creator: waits
        os.close(fd)
        assert _try(tmp_path / "a.txt", fcntl.LOCK_EX)
    finally:
        os.close(folder)
    assert _try(tmp_path, fcntl.LOCK_EX, directory=True)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert lock_entry(folder, "new.txt", P("/new.txt")) == (True, -1)
        assert not _try(tmp_path, fcntl.LOCK_SH, directory=True)  # a creator holds it all
    finally:
        os.close(folder)
    assert _try(tmp_path, fcntl.LOCK_EX, directory=True)


def test_a_file_replaced_while_waiting_is_locked_anew(tmp_path: Path) -> None:
    """A writer that locked a file another writer has just replaced locks the new one."""
    (tmp_path / "a.txt").write_bytes(b"old")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    old = os.open(tmp_path / "a.txt", os.O_RDONLY)
    fcntl.flock(old, fcntl.LOCK_EX)  # another writer holds the old file...
    done: list[tuple[bool, int]] = []
    waiter = threading.Thread(target=lambda: done.append(lock_entry(folder, "a.txt", P("/a"))))
    waiter.start()
    time.sleep(0.2)  # ...while the waiter queues on it (no assertion rests on the timing)
    (tmp_path / "new.tmp").write_bytes(b"new")
    os.rename(tmp_path / "new.tmp", tmp_path / "a.txt")  # replaces it, then lets go
    os.close(old)
    waiter.join(timeout=30)
    try:
        assert done and done[0][0]
        fd = done[0][1]
        assert os.fstat(fd).st_ino == (tmp_path / "a.txt").stat().st_ino
        assert not _try(tmp_path / "a.txt", fcntl.LOCK_EX)
        os.close(fd)
    finally:
        os.close(folder)
