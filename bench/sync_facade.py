"""The blocking facade against the async call it wraps, before and after (issue 11).

.venv/bin/python bench/sync_facade.py [--quick] [--rounds N] [--ops N] [--out FILE]

Median µs per call, in one run, of:

* **read** a 4 KiB file on a ``LocalStore`` mount: raw ``os.open/os.read/os.close``;
  ``await Workspace.read_bytes``; ``SyncWorkspace.read_bytes`` (the facade as it is, called
  from the main thread with no loop running, as a script calls it); and the facade as it was
  before issue 11, every call handed to a loop in a daemon thread and waited for
  (``run_coroutine_threadsafe(...).result()``, the old ``_Portal`` copied here);
* **stat** of that file: raw ``os.stat``; ``await Workspace.stat``; the facade; the old one;
* **write** (overwrite) of a 4 KiB file: ``await Workspace.write``; the facade; the old one
  (the store writes durably: temporary file, fsync, rename);
* **read, a store that waits**: ``read_bytes`` of a 4 KiB file on a ``SqliteStore`` mount,
  whose calls run in worker threads, so the call suspends and the facade has to run the loop.

The workspace: an allow-all policy, the default ``MemoryAuditSink``, labels on (the
defaults). Async cases run on one event loop (``asyncio.Runner``), a batch being one
coroutine that loops. Each case is warmed up with one batch, then timed for ``--rounds``
batches of ``--ops`` calls; the rounds of the cases of a group are interleaved, with a
``gc.collect()`` before each batch. The table gives medians over rounds of the wall-clock µs
per call, this process's CPU µs per call (all threads), and the ratio to the async call.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bastion import Mount, Policy, SyncWorkspace, Workspace
from bastion.stores.local import LocalStore
from bastion.stores.sqlite import SqliteStore

T = TypeVar("T")
SIZE = 4096
PAYLOAD = (b"bastion facade benchmark, a line of 64 bytes of text to read....\n" * 64)[:SIZE]


@dataclass(frozen=True)
class Config:
    rounds: int = 9
    ops: int = 2000
    slow_ops: int = 150
    collect: bool = True
    """A full ``gc.collect()`` before each batch (off for the smoke run: slow in a big heap)."""


FULL = Config()
QUICK = Config(rounds=3, ops=100, slow_ops=20, collect=False)


class OldPortal:
    """The facade before issue 11: one loop in a daemon thread, each call submitted to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="old-portal", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


@dataclass
class Case:
    group: str
    id: str
    label: str
    sync: Callable[[], object] | None = None
    aio: Callable[[], Awaitable[object]] | None = None
    ops: int = 0
    wall_ns: list[float] = field(default_factory=list)
    cpu_ns: list[float] = field(default_factory=list)

    @property
    def wall_us(self) -> float:
        return statistics.median(self.wall_ns) / 1000

    @property
    def cpu_us(self) -> float:
        return statistics.median(self.cpu_ns) / 1000


def _batch(case: Case, runner: asyncio.Runner, collect: bool) -> tuple[float, float]:
    if collect:
        gc.collect()
    n = case.ops
    if case.aio is not None:
        call = case.aio

        async def timed() -> tuple[int, int]:
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            for _ in range(n):
                await call()
            return time.perf_counter_ns() - t0, time.process_time_ns() - c0

        wall, cpu = runner.run(timed())
    else:
        assert case.sync is not None
        fn = case.sync
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        for _ in range(n):
            fn()
        wall, cpu = time.perf_counter_ns() - t0, time.process_time_ns() - c0
    return wall / n, cpu / n


def _cases(
    cfg: Config, root: Path, portal: OldPortal, stores: list[LocalStore | SqliteStore]
) -> list[Case]:
    (root / "disk").mkdir()
    (root / "disk" / "a.txt").write_bytes(PAYLOAD)
    host = str(root / "disk" / "a.txt")
    stores += [LocalStore(root / "disk"), SqliteStore(root / "ws.db")]
    local = Workspace([Mount.of("/d", stores[0])], policy=Policy.allow_all())
    sqlite = Workspace([Mount.of("/q", stores[1])], policy=Policy.allow_all())
    SyncWorkspace(sqlite).write("/q/a.txt", PAYLOAD)

    def raw_read() -> bytes:
        fd = os.open(host, os.O_RDONLY)
        try:
            return os.read(fd, SIZE + 1)
        finally:
            os.close(fd)

    def trio(group: str, ws: Workspace, name: str, *args: Any, ops: int) -> list[Case]:
        """The async call, the facade's and the old facade's, of ``ws.name(*args)``."""
        aio, blocking = getattr(ws, name), getattr(SyncWorkspace(ws), name)
        return [
            Case(group, "async", f"await Workspace.{name}", aio=lambda: aio(*args), ops=ops),
            Case(
                group, "sync", f"SyncWorkspace.{name} (now)", sync=lambda: blocking(*args), ops=ops
            ),
            Case(
                group,
                "old",
                "old facade (thread hop)",
                sync=lambda: portal.run(aio(*args)),
                ops=ops,
            ),
        ]

    raw_stat = functools.partial(os.stat, host)  # the raw system call
    return [
        Case("read", "raw", "raw os.open + os.read + os.close", sync=raw_read, ops=cfg.ops),
        *trio("read", local, "read_bytes", "/d/a.txt", ops=cfg.ops),
        Case("stat", "raw", "raw os.stat", sync=raw_stat, ops=cfg.ops),
        *trio("stat", local, "stat", "/d/a.txt", ops=cfg.ops),
        *trio("write", local, "write", "/d/w.txt", PAYLOAD, ops=cfg.slow_ops),
        *trio("sqlite read", sqlite, "read_bytes", "/q/a.txt", ops=cfg.slow_ops),
    ]


def run(cfg: Config) -> list[Case]:
    portal = OldPortal()
    stores: list[LocalStore | SqliteStore] = []
    with tempfile.TemporaryDirectory(prefix="bastion-facade-") as tmp, asyncio.Runner() as runner:
        cases = _cases(cfg, Path(tmp), portal, stores)
        groups: dict[str, list[Case]] = {}
        for case in cases:
            groups.setdefault(case.group, []).append(case)
        for members in groups.values():
            for case in members:
                _batch(case, runner, cfg.collect)  # warm-up, not recorded
            for _ in range(cfg.rounds):
                for case in members:
                    wall, cpu = _batch(case, runner, cfg.collect)
                    case.wall_ns.append(wall)
                    case.cpu_ns.append(cpu)
        for store in stores:
            store.close()
    portal.close()
    return cases


def report(cases: list[Case], cfg: Config) -> str:
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"{platform.system()} {platform.release()}; {cfg.rounds} rounds of {cfg.ops} calls "
        f"({cfg.slow_ops} for writes and SQLite); medians.",
        "",
        "| operation | call | µs / call | CPU µs / call | x async | x async (CPU) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    by_group: dict[str, dict[str, Case]] = {}
    for case in cases:
        by_group.setdefault(case.group, {})[case.id] = case
    for group, members in by_group.items():
        base, base_cpu = members["async"].wall_us, members["async"].cpu_us
        for case in members.values():
            lines.append(
                f"| {group} | {case.label} | {case.wall_us:.2f} | {case.cpu_us:.2f} "
                f"| {case.wall_us / base:.2f} | {case.cpu_us / base_cpu:.2f} |"
            )
    lines.append("")
    for group, members in by_group.items():
        sync, aio, old = members["sync"], members["async"], members["old"]
        extra = (
            f"{group}: the facade {sync.wall_us / aio.wall_us:.2f}x the async call "
            f"({sync.wall_us - aio.wall_us:+.1f} µs; CPU {sync.cpu_us / aio.cpu_us:.2f}x, "
            f"{sync.cpu_us - aio.cpu_us:+.1f} µs), before {old.wall_us / aio.wall_us:.2f}x "
            f"({old.wall_us - aio.wall_us:+.1f} µs; CPU {old.cpu_us / aio.cpu_us:.2f}x)"
        )
        if "raw" in members:
            extra += f"; the facade {sync.wall_us / members['raw'].wall_us:.1f}x raw"
        lines.append(f"- {extra}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> list[Case]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--ops", type=int)
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.rounds or args.ops:
        cfg = Config(
            rounds=args.rounds or cfg.rounds,
            ops=args.ops or cfg.ops,
            slow_ops=max(1, (args.ops or cfg.ops) * cfg.slow_ops // cfg.ops),
            collect=cfg.collect,
        )
    cases = run(cfg)
    text = report(cases, cfg)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return cases


if __name__ == "__main__":
    main()
