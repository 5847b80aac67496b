"""Load on `bastion serve` (issue 13): N principals against 1 and 3 server processes on one
PostgreSQL (store and index), and a static-file server as the floor of a read.

.venv/bin/python bench/serve_load.py [--principals 16] [--seconds 10] [--quick]

Loopback only, bounded in time. PostgreSQL is started here (``pgserver``); each server process
is ``tests/server/pg_worker.py`` (a ``/docs`` mount on a PostgresStore, a keyword-only
PostgresIndex, bearer tokens checked per request). Every principal is its own tenant: its
documents carry ``tenant: <its tenant>`` in their front matter and a canary word of its own.

Each principal is an async client (httpx) that, for ``--seconds``, loops over a mix:
read one of its files (40 %), overwrite one (15 %), search its canary (20 %), ask about it
(10 %), and probe another tenant (15 %): read a file of theirs (must be 404) and search their
canary (must find nothing). Requests go round-robin to the server processes. Counted: requests
per second, p50/p99 per endpoint, the error rate (any status not expected), and the bytes of
any response that carries another tenant's canary (must be 0).

The floor: the same 4 KiB-ish documents served by Starlette's ``StaticFiles`` under the same
uvicorn (no authentication, no guard, no database), read by the same clients at the same
concurrency.

The machine is shared and noisy: run it when it is quiet, and read the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import jwt

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "server" / "pg_worker.py"
SECRET = secrets.token_hex(32)
FILES_PER_PRINCIPAL = 5
BODY = "Line of ordinary text for the load test, repeated to make a small document.\n" * 50


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _token(sub: str, tenant: str) -> str:
    now = int(time.time())
    claims = {
        "iss": "https://id.test",
        "aud": "bastion-api",
        "sub": sub,
        "tenant": tenant,
        "iat": now,
        "exp": now + 3600,
    }
    return jwt.encode(claims, SECRET, algorithm="HS256", headers={"kid": "k1"})


def _doc(tenant: str, canary: str, n: int) -> str:
    return f"---\ntenant: {tenant}\n---\n# Note {n} of {tenant}\n\nThe {canary} lives here.\n{BODY}"


@dataclass
class Stats:
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    leaked_bytes: int = 0
    requests: int = 0


def start_workers(dsn: str, count: int) -> list[tuple[subprocess.Popen[bytes], str]]:
    started = []
    env = {**os.environ, "BASTION_TEST_SECRET": SECRET}
    for _ in range(count):
        port = _port()
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), dsn, str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("a server process did not start")
            time.sleep(0.1)
        started.append((proc, url))
    return started


def stop(workers: list[tuple[subprocess.Popen[bytes], str]]) -> None:
    for proc, _ in workers:
        proc.send_signal(signal.SIGTERM)
    for proc, _ in workers:
        proc.wait(timeout=60)


async def principal(
    n: int, total: int, urls: list[str], seconds: float, stats: Stats, canaries: list[str]
) -> None:
    me, tenant, canary = f"p{n}", f"t{n}", canaries[n]
    others = [c for i, c in enumerate(canaries) if i != n]
    rng = random.Random(n)
    headers = {"Authorization": f"Bearer {_token(me, tenant)}"}
    clients = [httpx.AsyncClient(base_url=u, headers=headers, timeout=60) for u in urls]
    end = time.monotonic() + seconds
    turn = n
    try:
        while time.monotonic() < end:
            client = clients[turn % len(clients)]
            turn += 1
            pick = rng.random()
            mine = f"/docs/{tenant}/n{rng.randrange(FILES_PER_PRINCIPAL)}.md"
            other = f"/docs/t{(n + 1 + rng.randrange(total - 1)) % total}/n0.md"
            if pick < 0.40:
                name, want, call = "read", 200, client.get("/v1/files/read", params={"path": mine})
            elif pick < 0.55:
                name, want = "write", 201
                call = client.post(
                    "/v1/files/write", json={"path": mine, "content": _doc(tenant, canary, 0)}
                )
            elif pick < 0.75:
                name, want, call = (
                    "search",
                    200,
                    client.get("/v1/search", params={"query": canary, "k": 5}),
                )
            elif pick < 0.85:
                name, want = "ask", 200
                call = client.post("/v1/ask", json={"question": f"Where does the {canary} live?"})
            elif pick < 0.925:
                name, want, call = (
                    "probe-read",
                    404,
                    client.get("/v1/files/read", params={"path": other}),
                )
            else:
                name, want = "probe-search", 200
                call = client.get("/v1/search", params={"query": rng.choice(others), "k": 5})
            started = time.perf_counter()
            try:
                response = await call
            except httpx.TransportError:
                stats.errors[name] += 1
                continue
            stats.times[name].append(time.perf_counter() - started)
            stats.requests += 1
            body = response.content
            if response.status_code != want:
                stats.errors[name] += 1
            served = body
            if name in ("search", "probe-search") and response.status_code == 200:
                hits = response.json()["hits"]  # the query itself is echoed: look at the hits
                served = json.dumps(hits).encode()
                if any(not h["path"].startswith(f"/docs/{tenant}/") for h in hits):
                    stats.leaked_bytes += len(served)
                    continue
            if any(c.encode() in served for c in others):
                stats.leaked_bytes += len(served)
    finally:
        for c in clients:
            await c.aclose()


async def seed(url: str, total: int, canaries: list[str]) -> None:
    for n in range(total):
        headers = {"Authorization": f"Bearer {_token(f'p{n}', f't{n}')}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
            for i in range(FILES_PER_PRINCIPAL):
                r = await c.post(
                    "/v1/files/write",
                    json={"path": f"/docs/t{n}/n{i}.md", "content": _doc(f"t{n}", canaries[n], i)},
                )
                r.raise_for_status()


def run_load(
    urls: list[str], total: int, seconds: float, canaries: list[str]
) -> tuple[Stats, float]:
    stats = Stats()

    async def go() -> float:
        started = time.perf_counter()
        await asyncio.gather(
            *(principal(n, total, urls, seconds, stats, canaries) for n in range(total))
        )
        return time.perf_counter() - started

    return stats, asyncio.run(go())


def static_floor(total: int, seconds: float) -> tuple[list[float], int, float]:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    folder = Path(tempfile.mkdtemp(prefix="bastion-static-"))
    for i in range(FILES_PER_PRINCIPAL):
        (folder / f"n{i}.md").write_text(_doc("t0", "static", i))
    app = Starlette(routes=[Mount("/", app=StaticFiles(directory=folder))])
    port = _port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    times: list[float] = []
    errors = 0

    async def reader(n: int) -> None:
        nonlocal errors
        rng = random.Random(n)
        end = time.monotonic() + seconds
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
            while time.monotonic() < end:
                started = time.perf_counter()
                r = await c.get(f"/n{rng.randrange(FILES_PER_PRINCIPAL)}.md")
                times.append(time.perf_counter() - started)
                errors += r.status_code != 200

    async def go() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(reader(n) for n in range(total)))
        return time.perf_counter() - started

    wall = asyncio.run(go())
    server.should_exit = True
    thread.join()
    shutil.rmtree(folder, ignore_errors=True)
    return times, errors, wall


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(label: str, stats: Stats, wall: float) -> None:
    errors = sum(stats.errors.values())
    print(
        f"\n### {label}: {stats.requests / wall:.0f} requests/s, "
        f"errors {errors}/{stats.requests} ({100 * errors / max(stats.requests, 1):.2f} %), "
        f"unauthorized bytes served: {stats.leaked_bytes}"
    )
    print("| endpoint | requests | p50 ms | p99 ms | errors |")
    print("|---|---:|---:|---:|---:|")
    for name in ("read", "write", "search", "ask", "probe-read", "probe-search"):
        values = stats.times.get(name, [])
        p50, p99, bad = pct(values, 0.5), pct(values, 0.99), stats.errors.get(name, 0)
        print(f"| {name} | {len(values)} | {p50:.1f} | {p99:.1f} | {bad} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--principals", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="4 principals, 2 seconds")
    args = parser.parse_args()
    total, seconds = (4, 2.0) if args.quick else (args.principals, args.seconds)
    print(
        f"# bench/serve_load.py: {total} principals, {seconds:g} s per run; "
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    import pgserver

    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-bench-"))
    pg = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        pg.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        for processes in (1, 3):
            name = f"load_{processes}_{secrets.token_hex(4)}"
            pg.psql(f"CREATE DATABASE {name};")
            dsn = pg.get_uri().replace("/postgres?", f"/{name}?", 1)
            canaries = ["".join(random.choices("bcdfghjklmnpqrstvwxz", k=12)) for _ in range(total)]
            workers = start_workers(dsn, processes)
            try:
                asyncio.run(seed(workers[0][1], total, canaries))
                stats, wall = run_load([u for _, u in workers], total, seconds, canaries)
            finally:
                stop(workers)
            report(f"{processes} server process{'es' if processes > 1 else ''}", stats, wall)
    finally:
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    times, errors, wall = static_floor(total, seconds)
    print(
        f"\n### floor: Starlette StaticFiles under uvicorn, same documents, {total} readers: "
        f"{len(times) / wall:.0f} requests/s, read p50 {pct(times, 0.5):.1f} ms, "
        f"p99 {pct(times, 0.99):.1f} ms, errors {errors}"
    )


if __name__ == "__main__":
    main()
