"""A child process that drives a store, for tests that need real, separate processes.

Run as a script, ``python store_child.py COMMAND KIND TARGET [COUNT]``:

* ``flip KIND TARGET`` overwrites :data:`FLIP_PATH` with :data:`CONTENT_A` and
  :data:`CONTENT_B` in turn until it is killed, printing ``begin N`` (flushed) before write
  ``N`` starts and ``wrote N SECONDS`` once it returned. Write ``N`` is ``content_of(N)``.
* ``increment KIND TARGET COUNT`` adds one to the decimal counter in :data:`COUNTER_PATH`
  ``COUNT`` times, read-modify-write under ``if_version``, retrying on conflicts, then prints
  ``done CONFLICTS``.

``KIND`` names an entry of :data:`OPENERS`, which opens the store from ``TARGET`` (a folder, a
file, a DSN). A new store kind joins the process tests with one entry there; the tests import
this module too, for the contents and :func:`open_store` / :func:`close_store`.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import time
from collections.abc import Callable

from bastion.core.errors import ConflictError
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = [
    "CONTENT_A",
    "CONTENT_B",
    "COUNTER_PATH",
    "FLIP_PATH",
    "OPENERS",
    "ORIGINAL",
    "close_store",
    "content_of",
    "open_store",
]

MiB = 1 << 20


def _opener(module: str, cls: str, **options: object) -> Callable[[str], Store]:
    def open_(target: str) -> Store:
        store: Store = getattr(importlib.import_module(module), cls)(target, **options)
        return store

    return open_


OPENERS: dict[str, Callable[[str], Store]] = {
    "local": _opener("bastion.stores.local", "LocalStore", create=True),
    "sqlite": _opener("bastion.stores.sqlite", "SqliteStore"),
    # PostgreSQL: TARGET is the DSN.
    "postgres": _opener("bastion.stores.postgres", "PostgresStore"),
}
"""How each store kind is opened from ``TARGET``."""

FLIP_PATH = VPath.parse("/crash/flip.bin")
COUNTER_PATH = VPath.parse("/counter.txt")


def _content(tag: bytes, size: int) -> bytes:
    """``size`` bytes that are ``tag`` all through: a header line, then 64-byte lines."""
    line = tag * 63 + b"\n"
    body = b"BASTION CRASH TEST CONTENT " + tag + b"\n" + line * (size // len(line) + 1)
    return body[:size]


ORIGINAL = _content(b"O", MiB + 3)
CONTENT_A = _content(b"A", 4 * MiB)
CONTENT_B = _content(b"B", 4 * MiB + 12_345)


def content_of(n: int) -> bytes:
    """What write ``n`` of ``flip`` writes."""
    return CONTENT_A if n % 2 == 0 else CONTENT_B


def open_store(kind: str, target: str) -> Store:
    return OPENERS[kind](target)


async def close_store(store: Store) -> None:
    """Close ``store`` if it has a ``close`` (plain or ``async``)."""
    close = getattr(store, "close", None)
    if close is not None:
        result = close()
        if inspect.isawaitable(result):
            await result


async def _flip(store: Store) -> None:
    n = 0
    while True:
        print(f"begin {n}", flush=True)
        started = time.perf_counter()
        await store.write(FLIP_PATH, content_of(n))
        print(f"wrote {n} {time.perf_counter() - started:.6f}", flush=True)
        n += 1


async def _increment(store: Store, count: int) -> None:
    conflicts = done = 0
    while done < count:
        version = (await store.stat(COUNTER_PATH)).version
        value = int(await store.read_all(COUNTER_PATH))
        try:
            await store.write(COUNTER_PATH, b"%d" % (value + 1), if_version=version)
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    print(f"done {conflicts}", flush=True)


async def _main(command: str, kind: str, target: str, count: int) -> None:
    store = open_store(kind, target)
    try:
        if command == "flip":
            await _flip(store)
        elif command == "increment":
            await _increment(store, count)
        else:
            raise SystemExit(f"unknown command {command!r}")
    finally:
        await close_store(store)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) not in (3, 4):
        raise SystemExit("usage: store_child.py flip|increment KIND TARGET [COUNT]")
    asyncio.run(_main(args[0], args[1], args[2], int(args[3]) if len(args) == 4 else 0))
