"""A child process racing others on one store, for ``test_cas_processes`` and ``bench/cas.py``.

Run as a script: ``python cas_worker.py SPEC`` where ``SPEC`` is JSON::

    {"kind": "local" | "sqlite" | "postgres" | "s3", "target": ..., "counter": "/counter",
     "claims": 20, "claims_dir": "/claims", "appends": 10, "log": "/log",
     "increments": 30, "name": "w1", "endpoint": ... (s3 only)}

It opens its own store (:func:`open_store`), prints ``ready`` and waits for one line on
stdin (so that every worker starts together), then:

1. tries to create ``<claims_dir>/0`` .. ``<claims_dir>/<claims - 1>`` with ``mode="create"``,
   printing ``won N`` for each it created and ``lost N`` for each that existed already;
2. appends the line ``<name> <i>`` to the file ``log`` for ``i`` in ``range(appends)``,
   printing ``appended I`` once each append returned (retrying one that raised a conflict);
3. adds one to the counter ``increments`` times by compare-and-set: read the file and its
   version in one call, check that the content parses (a torn file would not), write the
   next value with ``if_version``, retry on a conflict. It prints ``ack V`` (flushed) once
   the write of value ``V`` returned, and never before;
4. prints ``done CONFLICTS SECONDS``.

Any other failure ends the process with a non-zero status and a one-line reason on stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from bastion.core.errors import AlreadyExistsError, ConflictError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = ["LINES", "close_store", "counter_body", "open_store", "parse_counter"]

LINES = 256
"""Lines of a counter file: the value repeated, so that a torn or mixed file cannot parse."""


def counter_body(value: int) -> bytes:
    return b"%d\n" % value * LINES


def parse_counter(data: bytes) -> int:
    """The value of a counter file; ``ValueError`` for anything but a whole one."""
    lines = data.split(b"\n")
    if len(lines) != LINES + 1 or lines[-1] or len(set(lines[:-1])) != 1:
        raise ValueError(f"torn counter file: {len(data)} bytes, {len(set(lines))} distinct lines")
    return int(lines[0])


def open_store(spec: dict[str, Any]) -> Store:
    kind, target = spec["kind"], spec["target"]
    if kind == "local":
        from bastion.stores.local import LocalStore

        return LocalStore(target)
    if kind == "sqlite":
        from bastion.stores.sqlite import SqliteStore

        return SqliteStore(target)
    if kind == "postgres":
        from bastion.stores.postgres import PostgresStore

        return PostgresStore(target)
    if kind == "s3":
        from bastion.stores.fsspec import FsspecStore

        options = {"endpoint_url": spec["endpoint"], "key": "testing", "secret": "testing"}
        return FsspecStore(f"s3://{target}", storage_options=options)
    raise SystemExit(f"unknown store kind {kind!r}")


async def close_store(store: Store) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        result = close()
        if asyncio.iscoroutine(result):
            await result


async def _claim(store: Store, claims: VPath, count: int, name: str) -> None:
    for n in range(count):
        try:
            await store.write(claims / str(n), name.encode(), mode=WriteMode.CREATE)
        except AlreadyExistsError:
            print(f"lost {n}", flush=True)
        else:
            print(f"won {n}", flush=True)


async def _append(store: Store, log: VPath, count: int, name: str) -> None:
    for i in range(count):
        while True:
            try:
                await store.write(log, f"{name} {i}\n".encode(), mode=WriteMode.APPEND)
            except ConflictError:  # S3: the object kept changing under its retries; nothing written
                continue
            break
        print(f"appended {i}", flush=True)


async def _increment(store: Store, counter: VPath, count: int) -> int:
    conflicts = done = 0
    while done < count:
        info, data = await store.read_file(counter)
        value = parse_counter(data)
        try:
            await store.write(counter, counter_body(value + 1), if_version=info.version)
        except ConflictError:
            conflicts += 1
            continue
        print(f"ack {value + 1}", flush=True)
        done += 1
    return conflicts


async def _main(spec: dict[str, Any]) -> None:
    store = open_store(spec)
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        started = time.perf_counter()
        claims = VPath.parse(spec.get("claims_dir", "/claims"))
        name = str(spec.get("name", "?"))
        await _claim(store, claims, int(spec.get("claims", 0)), name)
        log = VPath.parse(spec.get("log", "/log"))
        await _append(store, log, int(spec.get("appends", 0)), name)
        conflicts = await _increment(
            store, VPath.parse(spec.get("counter", "/counter")), int(spec["increments"])
        )
        print(f"done {conflicts} {time.perf_counter() - started:.6f}", flush=True)
    finally:
        await close_store(store)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: cas_worker.py SPEC_JSON")
    try:
        asyncio.run(_main(json.loads(sys.argv[1])))
    except Exception as exc:  # one line for the parent, then a failure status
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
