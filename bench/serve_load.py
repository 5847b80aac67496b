"""`bastion serve` under load, and a held lock (issue 26): p50/p99 of read, search and ask at
1, 16 and 64 concurrent clients on 1 and 3 server processes over one PostgreSQL, three times:
alone, with one more client writing freely, and with that client's writes stalled by a lock
held on its file's row. The ratio stalled/alone of the others' p99 says whether the stall
reached them (free/alone is what a writer that is not stalled costs them, for scale).

.venv/bin/python bench/serve_load.py [--seconds 4] [--clients 1,16,64] [--processes 1,3]
.venv/bin/python bench/serve_load.py --quick      # smoke run: 1 process, 1 and 4 clients, 1 s

Loopback only, bounded in time (``--seconds`` per cell, 12 cells by default). PostgreSQL is
started here (``pgserver``, as ``tests/pg_support.py`` does); each server process is
``tests/server/pg_worker.py`` (a ``/docs`` mount on a PostgresStore, a keyword-only
PostgresIndex, bearer tokens verified on every request). Every client is its own principal
and tenant, with two documents of its own (``tenant:`` in their front matter) holding a
canary word of its own; it loops read, search (its canary), ask (about its canary), round
robin over the server processes, and checks that nothing of another tenant comes back.

The writer is one more client that overwrites its own file in a loop. In the stalled cells
the benchmark holds ``SELECT ... FOR UPDATE`` on that file's row (the row every write of it
locks) for the whole cell: each of its writes waits for the lock, and the others' requests
should not notice. Releasing the lock at the end of the cell lets the last write finish.

The machine is shared and noisy; with one client a cell holds a few dozen requests per
operation, so its p99 is close to its maximum. Read the ratios, not the absolute figures.
"""

from __future__ import annotations

import argparse
import asyncio
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
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "server" / "pg_worker.py"
SECRET = secrets.token_hex(32)
OPS = ("read", "search", "ask")
BODY = "Line of ordinary text for the load test, repeated to make a small document.\n" * 40
WRITER = "writer"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


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
class Cell:
    """One run: latencies (seconds) per operation of the readers; the writer's."""

    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: int = 0
    error_statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    """The readers' unexpected answers by status (0: no answer)."""
    leaks: int = 0
    writes: list[float] = field(default_factory=list)
    write_statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))


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


async def seed(url: str, total: int, canaries: list[str]) -> None:
    async def one(n: int) -> None:
        tenant = f"t{n}"
        headers = {"Authorization": f"Bearer {_token(f'p{n}', tenant)}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as c:
            for i in range(2):
                r = await c.post(
                    "/v1/files/write",
                    json={
                        "path": f"/docs/{tenant}/n{i}.md",
                        "content": _doc(tenant, canaries[n], i),
                    },
                )
                r.raise_for_status()

    for start in range(0, total, 8):
        await asyncio.gather(*(one(n) for n in range(start, min(total, start + 8))))
    headers = {"Authorization": f"Bearer {_token(WRITER, WRITER)}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as c:
        r = await c.post(
            "/v1/files/write", json={"path": f"/docs/{WRITER}/n0.md", "content": "first\n"}
        )
        r.raise_for_status()


async def reader(
    n: int, clients: list[httpx.AsyncClient], end: float, cell: Cell, canaries: list[str]
) -> None:
    """Client ``n``: read, search, ask in turn, round robin over the processes, until
    ``end``; its connections come from ``clients`` (one pool per process, made before the
    clock starts: making 64 x 3 clients took longer than a cell on a loaded machine)."""
    tenant, canary = f"t{n}", canaries[n]
    others = [c.encode() for i, c in enumerate(canaries) if i != n]
    headers = {"Authorization": f"Bearer {_token(f'p{n}', tenant)}"}
    rng = random.Random(n)
    turn = n
    while time.monotonic() < end:
        client = clients[turn % len(clients)]
        name = OPS[turn % len(OPS)]
        turn += 1
        if name == "read":
            path = f"/docs/{tenant}/n{rng.randrange(2)}.md"
            call = client.get("/v1/files/read", params={"path": path}, headers=headers)
        elif name == "search":
            call = client.get("/v1/search", params={"query": canary, "k": 5}, headers=headers)
        else:
            question = {"question": f"Where does the {canary} live?"}
            call = client.post("/v1/ask", json=question, headers=headers)
        started = time.perf_counter()
        try:
            response = await call
        except httpx.TransportError:
            cell.errors += 1
            cell.error_statuses[0] += 1
            continue
        cell.times[name].append(time.perf_counter() - started)
        if response.status_code != 200:
            cell.errors += 1
            cell.error_statuses[response.status_code] += 1
        if any(o in response.content for o in others):
            cell.leaks += 1


async def writer(urls: list[str], stop_at: asyncio.Event, cell: Cell) -> None:
    headers = {"Authorization": f"Bearer {_token(WRITER, WRITER)}"}
    async with httpx.AsyncClient(base_url=urls[0], headers=headers, timeout=120) as c:
        n = 0
        while not stop_at.is_set():
            n += 1
            started = time.perf_counter()
            try:
                r = await c.post(
                    "/v1/files/write",
                    json={"path": f"/docs/{WRITER}/n0.md", "content": f"version {n}\n"},
                )
                status = r.status_code
            except httpx.TransportError:
                status = 0
            cell.writes.append(time.perf_counter() - started)
            cell.write_statuses[status] += 1


MODES = ("alone", "free", "stalled")


def run_cell(
    urls: list[str], clients: int, seconds: float, canaries: list[str], mode: str, dsn: str
) -> Cell:
    """``clients`` readers for ``seconds``; the writer too unless ``alone``; ``stalled``: the
    writer's file row held locked (on ``dsn``) for the whole cell."""
    cell = Cell()
    lock_dsn = dsn if mode == "stalled" else None

    async def go() -> None:
        done = asyncio.Event()
        writing = asyncio.create_task(writer(urls, done, cell) if mode != "alone" else done.wait())
        limits = httpx.Limits(max_connections=clients + 1, max_keepalive_connections=clients + 1)
        pools = [httpx.AsyncClient(base_url=u, timeout=120, limits=limits) for u in urls]
        end = time.monotonic() + seconds
        try:
            await asyncio.gather(
                *(reader(n, pools, end, cell, canaries[:clients]) for n in range(clients))
            )
        finally:
            for pool in pools:
                await pool.aclose()
        done.set()
        if held is not None:
            held.rollback()  # the lock goes: the writer's last write finishes
        await writing

    held = None
    if lock_dsn is not None:
        import psycopg

        held = psycopg.connect(lock_dsn)
        row = held.execute(
            "SELECT 1 FROM bastion_fs_entries WHERE path = %s FOR UPDATE", (f"/{WRITER}/n0.md",)
        ).fetchone()
        assert row is not None, "the writer's file row is not there to lock"
    try:
        asyncio.run(go())
    finally:
        if held is not None:
            held.close()
    return cell


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs ({model or 'unknown model'}), "
        f"Python {platform.python_version()}, load average {load}"
    )


def main(argv: list[str] | None = None, *, pg: Any = None) -> dict[str, dict[str, Cell]]:
    """Run the cells; ``pg``: a running ``pgserver`` to use (else one is started here)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=4.0, help="per cell")
    parser.add_argument("--clients", default="1,16,64")
    parser.add_argument("--processes", default="1,3")
    parser.add_argument("--quick", action="store_true", help="1 process, 1 and 4 clients, 1 s")
    args = parser.parse_args(argv)
    if args.quick:
        seconds, counts, processes = 1.0, [1, 4], [1]
    else:
        seconds = args.seconds
        counts = [int(x) for x in args.clients.split(",")]
        processes = [int(x) for x in args.processes.split(",")]
    print(f"# bench/serve_load.py: {seconds:g} s per cell; {_machine()}")
    results: dict[str, dict[str, Cell]] = {}
    header()
    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-bench-"))
    own = pg is None
    if own:
        import pgserver

        pg = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        pg.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        for count in processes:
            name = f"load_{count}_{secrets.token_hex(4)}"
            pg.psql(f"CREATE DATABASE {name};")
            dsn = pg.get_uri().replace("/postgres?", f"/{name}?", 1)
            total = max(counts)
            canaries = ["".join(random.choices("bcdfghjklmnpqrstvwxz", k=12)) for _ in range(total)]
            workers = start_workers(dsn, count)
            urls = [u for _, u in workers]
            try:
                asyncio.run(seed(urls[0], total, canaries))
                for clients in counts:
                    cells = {m: run_cell(urls, clients, seconds, canaries, m, dsn) for m in MODES}
                    results[f"{count}x{clients}"] = cells
                    report(count, clients, cells)
            finally:
                stop(workers)
    finally:
        if own:
            pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\n# done; load average now {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return results


def header() -> None:
    print(
        "\n| processes | clients | op | requests alone / free / stalled "
        "| p50 ms alone / free / stalled | p99 ms alone / free / stalled "
        "| p99 stalled / alone | p99 free / alone |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|")


def _three(cells: dict[str, Cell], values: str, q: float | None) -> str:
    def one(cell: Cell) -> str:
        found = cell.writes if values == "writer" else cell.times.get(values, [])
        if q is None:
            return str(len(found))
        return f"{pct(found, q):.0f}" if found else "—"

    return " / ".join(one(cells[m]) for m in MODES)


def report(processes: int, clients: int, cells: dict[str, Cell]) -> None:
    for op in OPS:
        alone, free, stalled = (pct(cells[m].times.get(op, []), 0.99) for m in MODES)
        print(
            f"| {processes} | {clients} | {op} | {_three(cells, op, None)} "
            f"| {_three(cells, op, 0.5)} | {_three(cells, op, 0.99)} "
            f"| {stalled / alone:.2f} | {free / alone:.2f} |"
        )
    errors = " / ".join(
        f"{cells[m].errors}{' ' + str(dict(cells[m].error_statuses)) if cells[m].errors else ''}"
        for m in MODES
    )
    leaks = sum(c.leaks for c in cells.values())
    statuses = " / ".join(str(dict(cells[m].write_statuses)) for m in MODES[1:])
    print(
        f"| {processes} | {clients} | writer | {_three(cells, 'writer', None)} "
        f"| {_three(cells, 'writer', 0.5)} | {_three(cells, 'writer', 0.99)} "
        f"| errors {errors}; leaks {leaks} | writes {statuses} |"
    )


if __name__ == "__main__":
    main()
