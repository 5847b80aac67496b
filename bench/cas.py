"""Compare-and-set increments per second, per store, with 1, 4 and 16 processes; and what the
local store's cross-process lock costs.

Each cell runs N spawned worker processes, each with its own store object over one shared
backend, for a fixed time. A worker repeats: read the counter file and its version in one
call (``read_file``), write the next value with ``if_version``, retry on a conflict. The figure
is the total of successful increments per second over the workers (conflicts, the retries, are
counted apart). Stores: memory (one process only: a ``MemoryStore`` lives in its process, so
N processes would be N counters, not one), local disk, SQLite (one file), PostgreSQL (started
here with pgserver) and S3 (moto's server in this process, one request at a time, as the
contract test runs it: moto does not check ``If-Match`` atomically otherwise; a local stand-in,
not S3's latency).

The lock's cost (local store): the same single-process cell with the cross-process locks as
built and with them taken out (the single-process path before issue 16), alternated
``--rounds`` times; medians and their ratio; and the lock calls alone. Then the locks'
granularity: as built (the file's ``flock``, the folder's shared) against the folder's lock
exclusive, one lock per root, and per-path lock files (64 stripes in a hidden folder,
``flock`` on the stripe of the path's hash), with 4 processes on one counter, on a counter
each in its own directory, and on a counter each in one directory.

Run: ``.venv/bin/python bench/cas.py [--seconds 2] [--rounds 5] [--stores ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PROCS = (1, 4, 16)


def _open(kind: str, target: str) -> Any:
    if kind == "memory":
        from bastion.stores.memory import MemoryStore

        return MemoryStore()
    if kind == "local":
        from bastion.stores.local import LocalStore

        return LocalStore(target)
    if kind == "sqlite":
        from bastion.stores.sqlite import SqliteStore

        return SqliteStore(target)
    if kind == "postgres":
        from bastion.stores.postgres import PostgresStore

        return PostgresStore(target, namespace="cas")
    from bastion.stores.fsspec import FsspecStore

    endpoint, _, root = target.partition("#")
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    return FsspecStore(f"s3://{root}", storage_options=options)


async def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        result = close()
        if asyncio.iscoroutine(result):
            await result


# -- lock variants of the local store (in the worker process) ------------------------------------


def _variant(name: str, root: str) -> None:
    """Replace the local store's lock by variant ``name`` in this process."""
    if name == "file":  # as built
        return
    from bastion.stores import _fd, local

    if name == "dir":  # the folder's lock, exclusive, for every write
        local.lock_entry = lambda fd, entry, path: (_fd.lock_dir(fd, path), -1)  # type: ignore[assignment]
        return
    local.lock_entry = lambda fd, entry, path: (True, -1)  # type: ignore[assignment]
    if name == "none":
        return
    write = local.LocalStore.write
    folder = Path(root) / ".bastion-tmp-bench-locks"
    folder.mkdir(exist_ok=True)

    async def locked(self: Any, path: Any, data: bytes, **kw: Any) -> Any:
        if name == "root":
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        else:  # "path": a stripe file per hash of the path
            stripe = zlib.crc32(str(path).encode()) % 64
            fd = os.open(folder / f"{stripe:02x}", os.O_RDONLY | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return await write(self, path, data, **kw)
        finally:
            os.close(fd)

    local.LocalStore.write = locked  # type: ignore[method-assign]


# -- one cell --------------------------------------------------------------------------------------


def _worker(args: tuple[str, str, str, float, Any, str]) -> tuple[int, int]:
    kind, target, counter, seconds, barrier, variant = args
    return asyncio.run(_run(kind, target, counter, seconds, barrier, variant))


async def _run(
    kind: str, target: str, counter: str, seconds: float, barrier: Any, variant: str
) -> tuple[int, int]:
    from bastion.core.errors import ConflictError
    from bastion.core.paths import VPath

    if kind == "local":
        _variant(variant, target)
    store = _open(kind, target)
    path = VPath.parse(counter)
    if kind == "memory":
        await store.write(path, b"0")
    await store.read_file(path)  # connections and sessions made before the clock starts
    barrier.wait()
    done = conflicts = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        info, data = await store.read_file(path)
        try:
            await store.write(path, b"%d" % (int(data) + 1), if_version=info.version)
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    await _close(store)
    return done, conflicts


async def _seed(kind: str, target: str, counters: list[str]) -> None:
    from bastion.core.paths import VPath

    store = _open(kind, target)
    try:
        for counter in counters:
            path = VPath.parse(counter)
            await store.makedirs(path.parent)
            await store.write(path, b"0")
    finally:
        await _close(store)


def cell(
    kind: str,
    target: str,
    procs: int,
    seconds: float,
    *,
    layout: str = "same",
    variant: str = "dir",
) -> tuple[float, float]:
    """Increments and conflicts per second; ``layout``: one counter for all (``same``), one
    each in its own directory (``own-dir``), one each in the root (``own-file``)."""
    counters = {
        "same": ["/counter"] * procs,
        "own-dir": [f"/w{n}/counter" for n in range(procs)],
        "own-file": [f"/counter-{n}" for n in range(procs)],
    }[layout]
    if kind != "memory":
        asyncio.run(_seed(kind, target, sorted(set(counters))))
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(procs)
        with ctx.Pool(procs) as pool:
            jobs = [(kind, target, c, seconds, barrier, variant) for c in counters]
            results = pool.map(_worker, jobs)
    return sum(r[0] for r in results) / seconds, sum(r[1] for r in results) / seconds


def _lock_calls(scratch: Path) -> tuple[float, float]:
    """Microseconds per open-lock-close of the locks a write of an existing file takes, and
    per open-close of the folder alone (what the write does anyway); medians."""
    from bastion.core.paths import VPath
    from bastion.stores._fd import lock_entry

    folder = scratch / "lockcalls"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"a")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    path = VPath.parse("/a.txt")

    def run(lock: bool) -> float:
        started = time.perf_counter()
        for _ in range(20_000):
            fd = os.open(folder, flags)
            if lock:
                os.close(lock_entry(fd, "a.txt", path)[1])
            os.close(fd)
        return (time.perf_counter() - started) / 20_000 * 1e6

    on: list[float] = []
    off: list[float] = []
    for _ in range(5):
        on.append(run(True))
        off.append(run(False))
    return statistics.median(on), statistics.median(off)


# -- S3: moto, one request at a time ---------------------------------------------------------------


class _OneAtATime:
    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


def _start_moto() -> tuple[Any, str]:
    import logging

    import boto3
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }.items():
        os.environ[name] = value  # inherited by the spawned workers
    app = _OneAtATime(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="cas")
    return server, endpoint


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stores", default="memory,local,sqlite,postgres,s3")
    args = parser.parse_args()
    kinds = args.stores.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="bastion-cas-"))
    pg = moto = None
    fresh = iter(range(1 << 30))

    def target(kind: str) -> str:
        """A fresh place for ``kind`` (every cell starts from an empty store)."""
        n = next(fresh)
        if kind == "local":
            (scratch / f"local-{n}").mkdir()
            return str(scratch / f"local-{n}")
        if kind == "sqlite":
            return str(scratch / f"cas-{n}.db")
        if kind == "postgres":
            assert pg is not None
            pg.psql(f"CREATE DATABASE cas{n};")
            return str(pg.get_uri(f"cas{n}"))
        if kind == "s3":
            return f"{endpoint}#cas/run-{n}"
        return ""

    try:
        if "postgres" in kinds:
            import pgserver

            pg = pgserver.get_server(scratch / "pg", cleanup_mode="stop")
        endpoint = ""
        if "s3" in kinds:
            moto, endpoint = _start_moto()
        from bastion.knowledge.eval import describe_machine

        print(f"machine: {describe_machine()}; {args.seconds:g} s per cell\n")
        print("| store | 1 process | 4 processes | 16 processes |")
        print("|---|---:|---:|---:|")
        for kind in kinds:
            row = []
            for procs in PROCS if kind != "memory" else (1,):
                ok, retries = cell(kind, target(kind), procs, args.seconds)
                row.append(f"{ok:,.0f} ({retries:,.0f} conflicts/s)")
            row += ["n/a (one process)"] * (len(PROCS) - len(row))
            print(f"| {kind} | " + " | ".join(row) + " |", flush=True)

        if "local" in kinds:
            print("\nlocal store, 1 process, the cross-process lock on and off (increments/s):")
            on: list[float] = []
            off: list[float] = []
            for _ in range(args.rounds):
                on.append(cell("local", target("local"), 1, args.seconds)[0])
                off.append(cell("local", target("local"), 1, args.seconds, variant="none")[0])
            m_on, m_off = statistics.median(on), statistics.median(off)
            print(f"  with the lock:    {', '.join(f'{v:,.0f}' for v in on)}; median {m_on:,.0f}")
            print(f"  without the lock: {', '.join(f'{v:,.0f}' for v in off)}; median {m_off:,.0f}")
            cost = (1 / m_on - 1 / m_off) * 1e6
            print(f"  ratio with/without {m_on / m_off:.3f}; {cost:+.1f} us per increment")
            with_lock, without = _lock_calls(scratch)
            print(
                f"  the locks alone (a write's of an existing file, uncontended; median of 5 x "
                f"20,000): {with_lock:.2f} us against {without:.2f} us without them"
            )

            print("\nlocal store, 4 processes, lock granularity (increments/s):")
            print(
                "| lock | one counter | a counter each, own directory | a counter each, one dir |"
            )
            print("|---|---:|---:|---:|")
            for variant, label in (
                ("file", "the file's, the folder's shared (as built)"),
                ("dir", "the folder's, exclusive"),
                ("root", "one per root"),
                ("path", "per-path lock files (64 stripes)"),
            ):
                row = [
                    cell("local", target("local"), 4, args.seconds, layout=lay, variant=variant)[0]
                    for lay in ("same", "own-dir", "own-file")
                ]
                print(f"| {label} | " + " | ".join(f"{v:,.0f}" for v in row) + " |", flush=True)
    finally:
        if moto is not None:
            moto.shutdown()
        if pg is not None:
            pg.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
