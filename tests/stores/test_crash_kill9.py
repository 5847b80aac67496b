"""A process killed with SIGKILL in the middle of a write leaves the old or the new content.

For each store kind a real child process (``store_child.py flip``) overwrites one large file
with content A (4 MiB) and B (4 MiB + 12,345 bytes) in turn, announcing each write before it
starts and after it returns. The parent waits for a write to start, lets it run for a random
part of a write's duration, and kills the child with SIGKILL; then it opens the store afresh
and checks the file: it must be exactly the last completed write, or exactly the one in
flight, never a mix, a truncation or the original. This is repeated several times on the
same store, so each round also starts from the state the previous crash left.

Adding a store kind: one entry in ``store_child.OPENERS`` and its name in the ``params`` of
the ``crash_target`` fixture (PostgreSQL's branch, which takes the ``pg_dsn`` fixture, is
already there).
"""

from __future__ import annotations

import asyncio
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from store_child import (
    CONTENT_A,
    CONTENT_B,
    FLIP_PATH,
    ORIGINAL,
    close_store,
    content_of,
    open_store,
)

from bastion.core.models import WriteMode
from bastion.core.paths import VPath

ROUNDS = 6
CHILD = Path(__file__).with_name("store_child.py")
AFTER = VPath.parse("/crash/after.txt")


@pytest.fixture(params=["local", "sqlite", "postgres"])
def crash_target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(kind, target)`` for one store kind, in a fresh place."""
    kind: str = request.param
    if kind == "postgres":
        return kind, str(request.getfixturevalue("pg_dsn"))
    return kind, str(tmp_path / {"local": "root", "sqlite": "ws.db"}[kind])


def _sqlite_is_intact(target: str) -> None:
    conn = sqlite3.connect(target)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


INTACT: dict[str, Callable[[str], None]] = {"sqlite": _sqlite_is_intact}
"""Backend-level checks after a crash, for the kinds that have one."""


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.strip())
    lines.put(None)


def _next_line(lines: queue.Queue[str | None], errors: Path) -> str:
    line = lines.get(timeout=120)
    if line is None:
        pytest.fail(f"the child ended before it was killed: {errors.read_text()[-2000:]}")
    return line


def _run_and_kill(kind: str, target: str, rng: random.Random, errors: Path) -> list[str]:
    """Start a ``flip`` child, kill it with SIGKILL during a write, return what it printed."""
    with errors.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), "flip", kind, target],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        duration = None
        while duration is None:  # at least one write completes in every round
            seen.append(_next_line(lines, errors))
            if seen[-1].startswith("wrote "):
                duration = float(seen[-1].split()[2])
        while not seen[-1].startswith("begin "):  # then the next write starts...
            seen.append(_next_line(lines, errors))
        time.sleep(rng.uniform(0, duration))  # ...and is killed somewhere in its course
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        reader.join(timeout=60)
        proc.stdout.close()
    while (line := lines.get_nowait()) is not None:
        seen.append(line)
    assert proc.returncode == -signal.SIGKILL, errors.read_text()[-2000:]
    return seen


def _expected(seen: list[str]) -> tuple[set[bytes], bool]:
    """The contents the file may hold after the kill, and whether a write was in flight."""
    completed = [int(line.split()[1]) for line in seen if line.startswith("wrote ")]
    begun = [int(line.split()[1]) for line in seen if line.startswith("begin ")]
    last_done, last_begun = completed[-1], begun[-1]
    if last_begun == last_done:
        return {content_of(last_done)}, False
    return {content_of(last_done), content_of(last_begun)}, True


def _describe(data: bytes) -> str:
    counts = {tag: data.count(tag * 63) for tag in (b"O", b"A", b"B")}
    return f"{len(data)} bytes, 63-byte runs per tag {counts}"


async def _prepare(kind: str, target: str) -> None:
    store = open_store(kind, target)
    try:
        await store.mkdir(FLIP_PATH.parent)
        await store.write(FLIP_PATH, ORIGINAL, mode=WriteMode.CREATE)
        await store.write(AFTER, b"before")
    finally:
        await close_store(store)


async def _inspect(kind: str, target: str, round_: int) -> tuple[bytes, list[str]]:
    """The file's content after a crash; also checks that the store still lists and writes."""
    store = open_store(kind, target)
    try:
        data = await store.read_all(FLIP_PATH)
        names = sorted(info.path.name for info in await store.list(FLIP_PATH.parent))
        note = b"after round %d" % round_
        await store.write(AFTER, note)
        assert await store.read_all(AFTER) == note
    finally:
        await close_store(store)
    return data, names


def test_kill9_during_writes_leaves_old_or_new(
    crash_target: tuple[str, str], tmp_path: Path
) -> None:
    kind, target = crash_target
    asyncio.run(_prepare(kind, target))
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    in_flight = 0
    for round_ in range(ROUNDS):
        seen = _run_and_kill(kind, target, rng, tmp_path / f"child-{round_}.err")
        allowed, mid_write = _expected(seen)
        in_flight += mid_write
        data, names = asyncio.run(_inspect(kind, target, round_))
        intact = data in allowed  # not in the assert: its repr would show megabytes
        assert intact, (
            f"{kind}, round {round_} (seed {seed}), after {seen[-2:]}: "
            f"the file holds {_describe(data)}, expected {[_describe(a) for a in allowed]}"
        )
        assert names == ["after.txt", "flip.bin"]
        if kind in INTACT:
            INTACT[kind](target)
    assert in_flight >= 1, f"no kill landed during a write in {ROUNDS} rounds (seed {seed})"


def test_contents_are_distinct_all_through() -> None:
    """The three contents differ in size and in every 64-byte line, so any mix shows."""
    assert len({len(ORIGINAL), len(CONTENT_A), len(CONTENT_B)}) == 3
    for data, tag in ((ORIGINAL, b"O"), (CONTENT_A, b"A"), (CONTENT_B, b"B")):
        body = data[data.index(b"\n") + 1 :]
        assert set(body) == {tag[0], ord("\n")}
