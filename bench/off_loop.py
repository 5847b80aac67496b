"""Nothing on the event loop (issue 26): what the hop costs, and what it buys.

.venv/bin/python bench/off_loop.py [--quick] [--baseline REV]

Part 1, before and after in one run (each tree in its own child process, rounds interleaved):
median µs per call (wall clock, and CPU time of the process: steadier on a loaded machine)
on a ``LocalStore`` mount, allow-all policy, labels on:

* raw ``os.open/os.read/os.close`` of a 4 KiB file (the floor of the speed goal);
* ``await Workspace.read_bytes`` and ``await Workspace.stat`` of it (hot in the page cache);
* ``await Workspace.write`` (overwrite, 4 KiB, durable);
* ``SyncWorkspace.read_bytes`` from plain code;
* after only: the same read with the cached path turned off, so every call hops to a worker
  thread (the hop's cost is this less the hot read).

Part 2: how late a 1 ms ticker on the loop runs (p50 / p99 / max ms) while
(a) nothing else runs, (b) a write waits 1 s for a lock another process holds, (c) PDFs and a
large Markdown file are parsed in a worker thread, (d) the same in a process pool (the GIL
question: does CPU work in a thread still starve the loop?); (b) before too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = "74b4254"  # the last commit before issue 26's work
PAYLOAD = (b"bastion off-loop benchmark, one line of 64 bytes of plain text.\n" * 64)[:4096]
PDF = ROOT / "tests" / "knowledge" / "fixtures" / "ingest" / "report.pdf"


def _per_call_us(fn: Callable[[], object], ops: int) -> tuple[float, float]:
    """Wall-clock and CPU (this process, all threads) µs per call."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(ops):
        fn()
    return (time.perf_counter() - start) / ops * 1e6, (time.process_time() - cpu) / ops * 1e6


async def _aper_call_us(fn: Callable[[], Awaitable[object]], ops: int) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(ops):
        await fn()
    return (time.perf_counter() - start) / ops * 1e6, (time.process_time() - cpu) / ops * 1e6


def _files(quick: bool, after: bool) -> dict[str, list[float]]:
    from bastion import LocalStore, Mount, Policy, Principal, SyncWorkspace, Workspace

    ops, rounds = (200, 3) if quick else (2000, 9)
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bastion-offloop-") as tmp:
        folder = Path(tmp)
        (folder / "a.md").write_bytes(PAYLOAD)
        raw_path = str(folder / "a.md")

        def raw() -> bytes:
            fd = os.open(raw_path, os.O_RDONLY)
            try:
                return os.read(fd, 1 << 20)
            finally:
                os.close(fd)

        def workspace(store: Any) -> Any:
            return Workspace(
                [Mount.of("/docs", store, "read_write")],
                policy=Policy.allow_all(),
                principal=Principal.of("bench"),
            )

        ws = workspace(LocalStore(folder))
        cold = LocalStore(folder)
        if after:
            cold._cached = None  # every call in a worker thread
        hop = workspace(cold)
        sync = SyncWorkspace(workspace(LocalStore(folder)))

        async def async_cases() -> dict[str, tuple[float, float]]:
            row = {
                "read_bytes": await _aper_call_us(lambda: ws.read_bytes("/docs/a.md"), ops),
                "stat": await _aper_call_us(lambda: ws.stat("/docs/a.md"), ops),
                "write": await _aper_call_us(
                    lambda: ws.write("/docs/b.md", PAYLOAD), max(ops // 10, 20)
                ),
            }
            if after:
                row["read_bytes_hop"] = await _aper_call_us(
                    lambda: hop.read_bytes("/docs/a.md"), ops
                )
            return row

        sync.read_bytes("/docs/a.md")

        def keep(name: str, us: tuple[float, float]) -> None:
            out.setdefault(name, []).append(us[0])
            out.setdefault(name + "_cpu", []).append(us[1])

        for _ in range(rounds):
            keep("raw", _per_call_us(raw, ops))
            for name, us in asyncio.run(async_cases()).items():
                keep(name, us)
            keep("sync_read_bytes", _per_call_us(lambda: sync.read_bytes("/docs/a.md"), ops))
    return out


# -- part 2: the loop's lateness -------------------------------------------------------------


async def _ticker(stop: asyncio.Event, late: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.001)
        late.append((time.perf_counter() - start - 0.001) * 1000)


async def _lateness(work: Callable[[], Awaitable[object]]) -> dict[str, float]:
    stop, late = asyncio.Event(), []
    tick = asyncio.create_task(_ticker(stop, late))
    await asyncio.sleep(0.05)
    late.clear()
    await work()
    stop.set()
    await tick
    late.sort()
    return {
        "p50": statistics.median(late),
        "p99": late[int(len(late) * 0.99)],
        "max": late[-1],
        "ticks": len(late),
    }


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _parse_all(docs: list[tuple[bytes, str]]) -> int:
    from bastion.knowledge.ingest import parse_document

    return sum(len(parse_document(data, path).text) for data, path in docs)


def _lag(quick: bool) -> dict[str, Any]:
    from bastion import LocalStore, Mount, Policy, Workspace

    pdf = PDF.read_bytes()
    markdown = (
        "# Part\n\n" + "A sentence of the large document, with *some* words. " * 40 + "\n\n"
    ) * (300 if quick else 1500)
    docs = [(pdf, f"/r{n}.pdf") for n in range(20 if quick else 200)]
    docs.append((markdown.encode(), "/big.md"))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bastion-offloop-") as tmp:
        folder = Path(tmp) / "team"
        folder.mkdir()
        ws = Workspace([Mount.of("/team", LocalStore(folder))], policy=Policy.allow_all())

        async def idle() -> None:
            await asyncio.sleep(1.0)

        async def held_write() -> None:
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLD, str(folder), "1.0"], stdout=subprocess.PIPE, text=True
            )
            assert holder.stdout is not None
            await asyncio.to_thread(holder.stdout.readline)
            await ws.write("/team/a.md", "x")
            await asyncio.to_thread(holder.wait)
            holder.stdout.close()

        async def in_thread() -> None:
            start = time.perf_counter()
            await asyncio.to_thread(_parse_all, docs)
            out["parse_thread_s"] = time.perf_counter() - start

        pool = ProcessPoolExecutor(1)
        pool.submit(int).result()  # started before it is timed

        async def in_process() -> None:
            start = time.perf_counter()
            await asyncio.get_running_loop().run_in_executor(pool, _parse_all, docs)
            out["parse_process_s"] = time.perf_counter() - start

        async def run() -> None:
            out["idle"] = await _lateness(idle)
            out["held_write"] = await _lateness(held_write)
            out["parse_thread"] = await _lateness(in_thread)
            out["parse_process"] = await _lateness(in_process)

        asyncio.run(run())
        pool.shutdown()
    return out


# -- the parent: both trees, one report ------------------------------------------------------


def _child(src: Path, part: str, quick: bool, after: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", part]
    cmd += ["--quick"] * quick + ["--after"] * after
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{part} failed ({src}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child")
    parser.add_argument("--after", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="child runs per tree, interleaved")
    args = parser.parse_args()
    if args.child == "files":
        print(json.dumps(_files(args.quick, args.after)))
        return
    if args.child == "lag":
        print(json.dumps(_lag(args.quick)))
        return
    with tempfile.TemporaryDirectory(prefix="bastion-baseline-") as tmp:
        archive = subprocess.run(
            ["git", "archive", args.baseline, "src"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        before_src, after_src = Path(tmp) / "src", ROOT / "src"
        merged: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
        for _ in range(args.repeat):
            for label, src in (("before", before_src), ("after", after_src)):
                row = _child(src, "files", args.quick, label == "after")
                for name, values in row.items():
                    merged[label].setdefault(name, []).extend(values)
        lag_before = _child(before_src, "lag", args.quick, False)
    lag = _child(ROOT / "src", "lag", args.quick, True)
    _report(merged, lag, lag_before, args)


def _report(
    merged: dict[str, dict[str, list[float]]],
    lag: dict[str, Any],
    lag_before: dict[str, Any],
    args: Any,
) -> None:
    med = {t: {k: statistics.median(v) for k, v in rows.items()} for t, rows in merged.items()}
    print(f"# off-loop bench (baseline {args.baseline}, {'quick' if args.quick else 'full'})")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

    def cell(tree: str, name: str) -> str:
        wall, cpu = med[tree].get(name), med[tree].get(name + "_cpu")
        return "—" if wall is None or cpu is None else f"{wall:.1f} / {cpu:.1f}"

    print("\n| µs per call, median (wall / CPU) | before | after |")
    print("|---|---|---|")
    for name in ("raw", "read_bytes", "stat", "write", "sync_read_bytes", "read_bytes_hop"):
        print(f"| {name} | {cell('before', name)} | {cell('after', name)} |")
    print("\n| ratio (wall / CPU) | before | after | goal |")
    print("|---|---|---|---|")
    rows = [
        ("read_bytes / raw", "read_bytes", "raw", "≤ 2"),
        ("stat / raw read", "stat", "raw", "≤ 2"),
        ("SyncWorkspace / async read_bytes", "sync_read_bytes", "read_bytes", "≤ 1.5"),
    ]

    def ratio(tree: str, num: str, den: str) -> str:
        m = med[tree]
        return f"{m[num] / m[den]:.2f} / {m[num + '_cpu'] / m[den + '_cpu']:.2f}"

    for label, num, den, goal in rows:
        print(f"| {label} | {ratio('before', num, den)} | {ratio('after', num, den)} | {goal} |")
    after = med["after"]
    hop = after["read_bytes_hop"] - after["read_bytes"]
    hop_cpu = after["read_bytes_hop_cpu"] - after["read_bytes_cpu"]
    print(f"\nthe hop to a worker thread (cold less hot read): {hop:.1f} µs, CPU {hop_cpu:.1f}")
    print("\n| loop lateness of a 1 ms ticker, ms | p50 | p99 | max |")
    print("|---|---|---|---|")
    cases = [("before", "held_write"), ("after", "idle"), ("after", "held_write")]
    cases += [("after", "parse_thread"), ("after", "parse_process")]
    for tree, case in cases:
        r = (lag_before if tree == "before" else lag)[case]
        print(f"| {case} ({tree}) | {r['p50']:.2f} | {r['p99']:.2f} | {r['max']:.2f} |")
    print(
        f"\nparse wall time: thread {lag['parse_thread_s']:.2f} s, "
        f"process {lag['parse_process_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
