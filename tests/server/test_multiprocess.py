"""Several server processes on one PostgreSQL serve one workspace: a write through one is
read and found through another, concurrent conditional writes lose no update, and a process
killed in the middle of writing leaves an index that the next process start repairs."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import jwt
import pytest

from .support import free_port

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("pg_worker.py")
SECRET = secrets.token_hex(32)


def _token(sub: str) -> str:
    now = int(time.time())
    claims = {
        "iss": "https://id.test",
        "aud": "bastion-api",
        "sub": sub,
        "tenant": "t",
        "iat": now,
        "exp": now + 600,
    }
    return jwt.encode(claims, SECRET, algorithm="HS256", headers={"kid": "k1"})


class Worker:
    def __init__(self, dsn: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "BASTION_TEST_SECRET": SECRET}
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), dsn, str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(
                    self.process.stderr.read().decode() if self.process.stderr else "exited"
                )
            if time.monotonic() > deadline:
                raise RuntimeError("the worker did not start")
            time.sleep(0.1)

    def client(self, sub: str = "ana") -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {_token(sub)}"}, timeout=30
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=30)
        if self.process.stderr:
            self.process.stderr.close()


@pytest.fixture
def workers(pg_dsn: str) -> Iterator[Callable[[], Worker]]:
    started: list[Worker] = []

    def start() -> Worker:
        worker = Worker(pg_dsn)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def test_a_write_through_one_is_read_and_found_through_another(
    workers: Callable[[], Worker],
) -> None:
    a, b = workers(), workers()
    with a.client() as ca, b.client() as cb:
        wrote = ca.post(
            "/v1/files/write",
            json={"path": "/docs/birds.md", "content": "# Birds\n\nThe pelican report is due.\n"},
        )
        assert wrote.status_code == 201
        read = cb.get("/v1/files/read", params={"path": "/docs/birds.md"})
        assert read.json()["content"] == "# Birds\n\nThe pelican report is due.\n"
        hits = cb.get("/v1/search", params={"query": "pelican report"}).json()["hits"]
        assert [h["path"] for h in hits] == ["/docs/birds.md"]
        assert cb.post("/v1/files/delete", json={"path": "/docs/birds.md"}).status_code == 200
        assert ca.get("/v1/search", params={"query": "pelican report"}).json()["hits"] == []


def test_concurrent_increments_through_two_processes_lose_nothing(
    workers: Callable[[], Worker],
) -> None:
    a, b = workers(), workers()
    clients = [a.client(), b.client()]
    clients[0].post("/v1/files/write", json={"path": "/docs/counter.txt", "content": "0"})

    def increment(n: int) -> int:
        client = clients[n % 2]
        conflicts = 0
        while True:
            stat = client.get("/v1/files/stat", params={"path": "/docs/counter.txt"}).json()
            value = int(
                client.get(
                    "/v1/files/read", params={"path": "/docs/counter.txt", "format": "bytes"}
                ).content
            )
            again = client.get("/v1/files/stat", params={"path": "/docs/counter.txt"}).json()
            if again["version"] != stat["version"]:
                conflicts += 1
                continue
            r = client.post(
                "/v1/files/write",
                json={
                    "path": "/docs/counter.txt",
                    "content": str(value + 1),
                    "if_version": stat["version"],
                },
            )
            if r.status_code == 201:
                return conflicts
            assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
            conflicts += 1

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(increment, range(40)))
    final = (
        clients[1]
        .get("/v1/files/read", params={"path": "/docs/counter.txt", "format": "bytes"})
        .content
    )
    assert int(final) == 40
    for client in clients:
        client.close()


def test_a_process_killed_mid_write_leaves_an_index_the_next_start_repairs(
    workers: Callable[[], Worker],
) -> None:
    a = workers()
    stop = threading.Event()
    written: list[int] = []

    def keep_writing() -> None:
        with a.client() as client:
            n = 0
            while not stop.is_set():
                try:
                    client.post(
                        "/v1/files/write",
                        json={"path": f"/docs/w{n}.md", "content": f"# W{n}\n\nmarker{n}x here\n"},
                    )
                except httpx.TransportError:
                    return
                written.append(n)
                n += 1

    thread = threading.Thread(target=keep_writing)
    thread.start()
    while len(written) < 20:
        time.sleep(0.01)
    a.stop(signal.SIGKILL)
    stop.set()
    thread.join()
    b = workers()  # repairs the index before it listens
    with b.client() as client:
        files = [
            e["path"] for e in client.get("/v1/files", params={"path": "/docs"}).json()["entries"]
        ]
        assert len(files) >= 20
        for path in files:
            n = path.removeprefix("/docs/w").removesuffix(".md")
            hits = client.get("/v1/search", params={"query": f"marker{n}x"}).json()["hits"]
            assert [h["path"] for h in hits] == [path]
