"""Many processes, one PostgreSQL-backed filesystem: real processes (``pg_worker.py``), each
with its own PostgresStore, driven line by line so that interleavings are chosen by the test.

A write in one process is readable in the others at once; of two processes that edit one file
from the same version, one wins and the other gets a conflict; concurrent read-modify-write
loops and appends from several processes lose nothing; processes that open a fresh database
at the same moment create its schema once; namespaces stay apart across processes too.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bastion.stores._pg_schema import SCHEMA_VERSION

WORKER = Path(__file__).with_name("pg_worker.py")
ANSWER = 120.0
"""Seconds a worker may take to answer one command before the test fails."""


class Worker:
    """A ``pg_worker.py`` process: ``call(op=..., ...)`` sends a command and waits for the
    answer; ``send`` and ``answer`` split the two so that several workers run at once."""

    def __init__(self, dsn: str, namespace: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), dsn, namespace],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put("")

    def ready(self) -> None:
        assert "ready" in self.answer()

    def send(self, **cmd: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        line = self._lines.get(timeout=ANSWER)
        assert line, f"worker {self.proc.pid} exited with {self.proc.wait(timeout=10)}"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def call(self, **cmd: Any) -> dict[str, Any]:
        self.send(**cmd)
        return self.answer()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            assert self.proc.wait(timeout=60) == 0
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(timeout=10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()


@pytest.fixture
def workers(pg_dsn: str) -> Iterator[Callable[..., list[Worker]]]:
    """Start workers on the test's database: ``workers(3)`` or ``workers(2, namespace=...)``;
    they are all started before any is waited for."""
    started: list[Worker] = []

    def start(count: int, namespace: str = "default") -> list[Worker]:
        batch = [Worker(pg_dsn, namespace) for _ in range(count)]
        started.extend(batch)
        for worker in batch:
            worker.ready()
        return batch

    yield start
    for worker in started:
        worker.close()


def test_a_write_in_one_process_is_read_in_another(
    workers: Callable[..., list[Worker]],
) -> None:
    a, b = workers(2)
    written = a.call(op="write", path="/shared.txt", data="from a")
    assert b.call(op="read", path="/shared.txt") == {"data": "from a"}
    assert b.call(op="stat", path="/shared.txt") == written
    b.call(op="mkdir", path="/docs")
    b.call(op="write", path="/docs/b.md", data="from b")
    assert a.call(op="list", path="/") == {"names": ["docs", "shared.txt"]}
    assert a.call(op="read", path="/docs/b.md") == {"data": "from b"}


def test_of_two_stale_editors_one_wins_and_one_conflicts(
    workers: Callable[..., list[Worker]],
) -> None:
    a, b = workers(2)
    a.call(op="write", path="/plan.md", data="v1")
    seen_a, seen_b = a.call(op="stat", path="/plan.md"), b.call(op="stat", path="/plan.md")
    assert seen_a["version"] == seen_b["version"]
    assert "version" in a.call(op="write", path="/plan.md", data="a's edit", **_if(seen_a))
    refused = b.call(op="write", path="/plan.md", data="b's edit", **_if(seen_b))
    assert refused["error"] == "ConflictError"
    assert b.call(op="read", path="/plan.md") == {"data": "a's edit"}
    # Both at once, from the same version: exactly one of them lands.
    current = a.call(op="stat", path="/plan.md")
    a.send(op="write", path="/plan.md", data="a again", **_if(current))
    b.send(op="write", path="/plan.md", data="b again", **_if(current))
    replies = [a.answer(), b.answer()]
    winners = [r for r in replies if "version" in r]
    assert len(winners) == 1
    assert [r["error"] for r in replies if "error" in r] == ["ConflictError"]
    final = a.call(op="read", path="/plan.md")["data"]
    assert final == ("a again" if "version" in replies[0] else "b again")


def _if(stat: dict[str, Any]) -> dict[str, Any]:
    return {"if_version": stat["version"]}


def test_concurrent_increments_from_processes_lose_no_update(
    workers: Callable[..., list[Worker]],
) -> None:
    procs, each = workers(3), 25
    procs[0].call(op="write", path="/counter", data="0")
    for worker in procs:
        worker.send(op="increment", path="/counter", times=each)
    replies = [worker.answer() for worker in procs]
    assert all("conflicts" in r for r in replies), replies
    assert procs[1].call(op="read", path="/counter") == {"data": str(len(procs) * each)}


def test_concurrent_appends_from_processes_lose_nothing(
    workers: Callable[..., list[Worker]],
) -> None:
    procs, each = workers(3), 30
    for n, worker in enumerate(procs):
        worker.send(op="append_lines", path="/log", tag=f"p{n}", times=each)
    assert [worker.answer() for worker in procs] == [{}] * len(procs)
    lines = procs[0].call(op="read", path="/log")["data"].splitlines()
    assert sorted(lines) == sorted(f"p{n} {i}" for n in range(len(procs)) for i in range(each))
    for n in range(len(procs)):  # each process's lines in its own order
        assert [line for line in lines if line.startswith(f"p{n} ")] == [
            f"p{n} {i}" for i in range(each)
        ]


def test_processes_opening_a_fresh_database_at_once_create_the_schema_once(
    pg_dsn: str, workers: Callable[..., list[Worker]]
) -> None:
    procs = workers(4)
    for n, worker in enumerate(procs):  # every first use at once, on an empty database
        worker.send(op="write", path=f"/p{n}.txt", data=f"process {n}")
    assert all("version" in worker.answer() for worker in procs)
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT version FROM bastion_fs_schema").fetchall() == [
            (SCHEMA_VERSION,)
        ]
        assert conn.execute("SELECT count(*) FROM bastion_fs_namespaces").fetchall() == [(1,)]
    names = [f"p{n}.txt" for n in range(len(procs))]
    assert all(worker.call(op="list", path="/") == {"names": names} for worker in procs)


def test_namespaces_stay_apart_across_processes(workers: Callable[..., list[Worker]]) -> None:
    [a] = workers(1, namespace="tenant-a")
    [b] = workers(1, namespace="tenant-b")
    [a2] = workers(1, namespace="tenant-a")
    a.call(op="write", path="/secret.txt", data="a's secret")
    assert b.call(op="stat", path="/secret.txt")["error"] == "NotFoundError"
    assert b.call(op="list", path="/") == {"names": []}
    assert a2.call(op="read", path="/secret.txt") == {"data": "a's secret"}
    b.call(op="write", path="/secret.txt", data="b's own")
    assert a.call(op="read", path="/secret.txt") == {"data": "a's secret"}
