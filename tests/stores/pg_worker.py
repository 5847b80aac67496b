"""One process serving a PostgresStore over stdin and stdout, for the many-process tests.

    python pg_worker.py DSN NAMESPACE

It prints ``{"ready": pid}``, then answers each JSON command line with one JSON line:

    {"op": "write", "path": "/a", "data": "text", "mode": "overwrite", "if_version": null}
        -> {"version": "12", "size": 4}
    {"op": "read", "path": "/a"}                      -> {"data": "text"}
    {"op": "stat", "path": "/a"}                      -> {"version": "12", "size": 4}
    {"op": "list", "path": "/"}                       -> {"names": ["a"]}
    {"op": "mkdir", "path": "/d"}                     -> {}
    {"op": "increment", "path": "/n", "times": 20}    -> {"conflicts": 3}
    {"op": "append_lines", "path": "/log", "tag": "p1", "times": 50}  -> {}

A refused call answers ``{"error": "ConflictError", "message": "..."}``. End of input ends it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from bastion.core.errors import ConflictError, OperationError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.stores.postgres import PostgresStore


async def increment(store: PostgresStore, path: VPath, times: int) -> int:
    """Read-modify-write under ``if_version``, retrying conflicts; the number of conflicts."""
    conflicts = done = 0
    while done < times:
        info, data = await store.read_file(path)
        await asyncio.sleep(0.001)  # let the other processes read the same version
        try:
            await store.write(path, b"%d" % (int(data) + 1), if_version=info.version)
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    return conflicts


async def handle(store: PostgresStore, cmd: dict[str, Any]) -> dict[str, Any]:
    op, path = cmd["op"], VPath.parse(cmd.get("path", "/"))
    if op == "write":
        mode = WriteMode(cmd.get("mode", "overwrite"))
        info = await store.write(
            path, cmd["data"].encode(), mode=mode, if_version=cmd.get("if_version")
        )
        return {"version": info.version, "size": info.size}
    if op == "read":
        return {"data": (await store.read_all(path)).decode()}
    if op == "stat":
        info = await store.stat(path)
        return {"version": info.version, "size": info.size}
    if op == "list":
        return {"names": sorted(i.path.name for i in await store.list(path))}
    if op == "mkdir":
        await store.mkdir(path)
        return {}
    if op == "increment":
        return {"conflicts": await increment(store, path, cmd["times"])}
    if op == "append_lines":
        for n in range(cmd["times"]):
            line = f"{cmd['tag']} {n}\n".encode()
            await store.write(path, line, mode=WriteMode.APPEND)
        return {}
    raise ValueError(f"unknown op {op!r}")


async def main(dsn: str, namespace: str) -> None:
    loop = asyncio.get_running_loop()
    async with PostgresStore(dsn, namespace=namespace, timeout=60.0) as store:
        print(json.dumps({"ready": os.getpid()}), flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            try:
                reply = await handle(store, json.loads(line))
            except OperationError as exc:
                reply = {"error": type(exc).__name__, "message": str(exc)}
            print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
