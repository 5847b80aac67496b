"""Small-file read and write cost: raw OS vs LocalStore vs the guarded Workspace (issue 2).

.venv/bin/python bench/fs_ops.py [--quick] [--out FILE] [--profile] [--publish]

Measures, in one run on this machine:

1. reading a 4 KiB file (1,000 files in a two-level tree): raw ``os.open/os.read/os.close``,
   ``open(p, "rb").read()``, ``LocalStore.read_range`` alone, ``await Workspace.read_bytes``
   (a realistic policy, the default ``MemoryAuditSink``) and the blocking facade;
2. overwriting a 4 KiB file: raw OS with LocalStore's durability (temporary file, fsync,
   rename, directory fsync), a plain ``open(p, "wb").write`` without fsync (not durable),
   ``LocalStore.write`` alone, ``await Workspace.write`` and the blocking facade;
3. operations per second of a ``MemoryStore`` mount through the Workspace: write, read, stat,
   list (100 entries), grep (100 small files) and glob.

Method: each case is warmed up with one batch, then timed for ``--rounds`` batches of ``N``
operations, timed with ``time.perf_counter_ns`` (wall) and ``time.process_time_ns`` (CPU of
all threads, which leaves out waiting for the disk); the rounds of the cases of one group are
interleaved. The table shows medians over rounds of the per-operation times. Async cases run
on one event loop (``asyncio.Runner``), each batch a coroutine that loops; the blocking facade
runs from the main thread with no loop running, as a script would call it. The garbage
collector stays on (the audit log grows, as it does in use), with a ``gc.collect()`` before
each batch. ``--profile`` adds a cProfile of ``Workspace.read_bytes`` on the local and the
memory mount.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bastion import MemoryAuditSink, MemoryStore, Mount, Policy, Rule, Workspace
from bastion.core.paths import VPath
from bastion.stores.local import LocalStore

FILE_SIZE = 4096
PAYLOAD = (b"bastion benchmark line of text, 64 bytes long, for reads/writes\n" * 64)[:FILE_SIZE]
GREP_FILES = 100
LIST_ENTRIES = 100

ROW_IDS = (
    "read.os",
    "read.open",
    "read.local_store",
    "read.workspace",
    "read.sync",
    "write.os_durable",
    "write.open_plain",
    "write.local_store",
    "write.workspace",
    "write.sync",
    "mem.write",
    "mem.read",
    "mem.stat",
    "mem.list",
    "mem.grep",
    "mem.glob",
)
"""Every row the benchmark reports, in table order."""


@dataclass(frozen=True)
class Config:
    files: int = 1000
    rounds: int = 7
    read_ops: int = 5000
    write_ops: int = 100
    mem_ops: int = 5000
    mem_bulk_ops: int = 300
    """Operations per round for list, grep and glob (each touches 100 entries)."""


FULL = Config()
QUICK = Config(files=200, rounds=3, read_ops=500, write_ops=10, mem_ops=500, mem_bulk_ops=30)


@dataclass
class Row:
    id: str
    group: str
    label: str
    ops: int
    rounds: int
    per_op_ns: list[float] = field(default_factory=list)
    """Wall-clock nanoseconds per operation, one value per timed round."""
    cpu_ns: list[float] = field(default_factory=list)
    """Process CPU nanoseconds per operation (all threads), one value per timed round."""
    baseline: str | None = None
    ratio: float | None = None

    @property
    def median_us(self) -> float:
        return statistics.median(self.per_op_ns) / 1000.0

    @property
    def cpu_us(self) -> float:
        return statistics.median(self.cpu_ns) / 1000.0

    @property
    def ops_per_s(self) -> float:
        return 1e9 / statistics.median(self.per_op_ns)


@dataclass
class Results:
    rows: dict[str, Row]
    machine: dict[str, str]
    command: str
    markdown: str = ""
    profile: str = ""


# -- machine -----------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _fs_type(directory: Path) -> str:
    """``stat -f -c %T`` (statfs magic name) plus the mount's type from /proc/mounts."""
    statfs = "?"
    try:
        out = subprocess.run(
            ["stat", "-f", "-c", "%T", str(directory)], capture_output=True, text=True, check=True
        )
        statfs = out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    mount_type, best = "?", ""
    try:
        real = str(directory.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) < 3:
                continue
            point = parts[1]
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best):
                best, mount_type = point, f"{parts[2]} on {point}"
    except OSError:
        pass
    return f"{mount_type} (stat -f: {statfs})"


def machine_info(directory: Path) -> dict[str, str]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 0
    return {
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} (usable: {usable})",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": f"{platform.system()} {platform.release()}",
        "filesystem": _fs_type(directory),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


# -- fixtures ----------------------------------------------------------------------------------


def _tree_names(files: int) -> list[str]:
    """``files`` relative names spread over a two-level tree (10 x 10 directories)."""
    return [f"d{i % 10}/s{(i // 10) % 10}/f{i}.txt" for i in range(files)]


def _populate(root: Path, names: list[str]) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(PAYLOAD)


def realistic_policy() -> Policy:
    """A few rules as a deployment would have them: denies on other subtrees, then allow-all."""
    return Policy(
        rules=(
            Rule.deny("*", "/data/secret/**", "/mem/secret/**", description="secrets"),
            Rule.deny(["write", "delete"], "/data/archive/**", description="archive is frozen"),
            Rule.allow("*", "/**", description="allow all"),
        )
    )


async def _populate_memory(ws: Workspace, names: list[str]) -> None:
    for name in names:
        await ws.write(f"/mem/rw/{name}", PAYLOAD)
    for i in range(LIST_ENTRIES):
        await ws.write(f"/mem/list/entry{i:03}.txt", b"x")
    for i in range(GREP_FILES):
        lines = [f"line {j} of file {i}: lorem ipsum dolor sit amet" for j in range(20)]
        if i % 10 == 0:
            lines[7] = "this line has the needle in it"
        ext = "md" if i % 2 else "txt"
        await ws.write(f"/mem/grep/doc{i:03}.{ext}", "\n".join(lines) + "\n")


# -- timing ------------------------------------------------------------------------------------

SyncBatch = Callable[[int, int], None]
AsyncBatch = Callable[[int, int], Awaitable[None]]


@dataclass
class Case:
    row: Row
    sync_batch: SyncBatch | None = None
    async_batch: AsyncBatch | None = None


def _time_batch(case: Case, runner: asyncio.Runner, start: int, n: int) -> tuple[float, float]:
    """Wall-clock and process CPU nanoseconds per operation for one batch."""
    gc.collect()
    if case.async_batch is not None:
        batch = case.async_batch

        async def timed() -> tuple[int, int]:
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            await batch(start, n)
            return time.perf_counter_ns() - t0, time.process_time_ns() - c0

        wall, cpu = runner.run(timed())
    else:
        assert case.sync_batch is not None
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        case.sync_batch(start, n)
        wall, cpu = time.perf_counter_ns() - t0, time.process_time_ns() - c0
    return wall / n, cpu / n


def _run_group(cases: list[Case], runner: asyncio.Runner, rounds: int) -> None:
    for case in cases:  # warm-up batch, not recorded
        _time_batch(case, runner, 0, case.row.ops)
    for r in range(rounds):
        for case in cases:
            start = (r + 1) * case.row.ops
            wall, cpu = _time_batch(case, runner, start, case.row.ops)
            case.row.per_op_ns.append(wall)
            case.row.cpu_ns.append(cpu)


# -- the cases ---------------------------------------------------------------------------------


def _read_cases(cfg: Config, root: Path, ws: Workspace, store: LocalStore) -> list[Case]:
    names = _tree_names(cfg.files)
    host = [str(root / "r" / n) for n in names]
    store_paths = [VPath.parse(f"/r/{n}") for n in names]
    ws_paths = [f"/data/r/{n}" for n in names]
    sws = ws.sync()
    count = len(names)
    flags = os.O_RDONLY | os.O_CLOEXEC

    def raw_os(start: int, n: int) -> None:
        for i in range(start, start + n):
            fd = os.open(host[i % count], flags)
            try:
                data = os.read(fd, FILE_SIZE)
            finally:
                os.close(fd)
            assert len(data) == FILE_SIZE

    def raw_open(start: int, n: int) -> None:
        for i in range(start, start + n):
            with open(host[i % count], "rb") as fh:  # noqa: PTH123 - the raw baseline
                data = fh.read()
            assert len(data) == FILE_SIZE

    async def local(start: int, n: int) -> None:
        for i in range(start, start + n):
            data = await store.read_range(store_paths[i % count], 0, None)
            assert len(data) == FILE_SIZE

    async def workspace(start: int, n: int) -> None:
        for i in range(start, start + n):
            data = await ws.read_bytes(ws_paths[i % count])
            assert len(data) == FILE_SIZE

    def sync(start: int, n: int) -> None:
        for i in range(start, start + n):
            data = sws.read_bytes(ws_paths[i % count])
            assert len(data) == FILE_SIZE

    def row(id_: str, label: str) -> Row:
        return Row(id_, "read", label, cfg.read_ops, cfg.rounds, baseline="read.os")

    return [
        Case(row("read.os", "raw OS: os.open + os.read + os.close"), sync_batch=raw_os),
        Case(row("read.open", "raw Python: open(p, 'rb').read()"), sync_batch=raw_open),
        Case(row("read.local_store", "LocalStore.read_range (store only)"), async_batch=local),
        Case(row("read.workspace", "await Workspace.read_bytes"), async_batch=workspace),
        Case(row("read.sync", "SyncWorkspace.read_bytes (blocking facade)"), sync_batch=sync),
    ]


def _write_cases(cfg: Config, root: Path, ws: Workspace, store: LocalStore) -> list[Case]:
    names = _tree_names(cfg.files)
    count = len(names)
    sws = ws.sync()
    create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

    def host(tree: str) -> list[tuple[str, str, str]]:
        out = []
        for n in names:
            p = root / tree / n
            out.append((str(p), str(p.parent / (".tmp-" + p.name)), str(p.parent)))
        return out

    durable_paths, plain_paths = host("w_os"), host("w_plain")
    store_paths = [VPath.parse(f"/w_store/{n}") for n in names]
    ws_paths = [f"/data/w_ws/{n}" for n in names]
    sync_paths = [f"/data/w_sync/{n}" for n in names]

    def os_durable(start: int, n: int) -> None:
        for i in range(start, start + n):
            path, tmp, directory = durable_paths[i % count]
            fd = os.open(tmp, create, 0o666)
            try:
                os.write(fd, PAYLOAD)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, path)  # noqa: PTH104 - the raw baseline
            dfd = os.open(directory, dir_flags)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def open_plain(start: int, n: int) -> None:
        for i in range(start, start + n):
            with open(plain_paths[i % count][0], "wb") as fh:  # noqa: PTH123 - the raw baseline
                fh.write(PAYLOAD)

    async def local(start: int, n: int) -> None:
        for i in range(start, start + n):
            await store.write(store_paths[i % count], PAYLOAD)

    async def workspace(start: int, n: int) -> None:
        for i in range(start, start + n):
            await ws.write(ws_paths[i % count], PAYLOAD)

    def sync(start: int, n: int) -> None:
        for i in range(start, start + n):
            sws.write(sync_paths[i % count], PAYLOAD)

    def row(id_: str, label: str) -> Row:
        return Row(id_, "write", label, cfg.write_ops, cfg.rounds, baseline="write.os_durable")

    return [
        Case(
            row("write.os_durable", "raw OS: temp + write + fsync + rename + dir fsync"),
            sync_batch=os_durable,
        ),
        Case(
            row("write.open_plain", "raw Python: open(p, 'wb').write(), NO fsync (not durable)"),
            sync_batch=open_plain,
        ),
        Case(row("write.local_store", "LocalStore.write (store only)"), async_batch=local),
        Case(row("write.workspace", "await Workspace.write"), async_batch=workspace),
        Case(row("write.sync", "SyncWorkspace.write (blocking facade)"), sync_batch=sync),
    ]


def _memory_cases(cfg: Config, ws: Workspace) -> list[Case]:
    names = _tree_names(cfg.files)
    count = len(names)
    paths = [f"/mem/rw/{n}" for n in names]

    async def write(start: int, n: int) -> None:
        for i in range(start, start + n):
            await ws.write(paths[i % count], PAYLOAD)

    async def read(start: int, n: int) -> None:
        for i in range(start, start + n):
            data = await ws.read_bytes(paths[i % count])
            assert len(data) == FILE_SIZE

    async def stat(start: int, n: int) -> None:
        for i in range(start, start + n):
            await ws.stat(paths[i % count])

    async def listing(start: int, n: int) -> None:
        for _ in range(n):
            entries = await ws.list("/mem/list")
            assert len(entries) == LIST_ENTRIES

    async def grep(start: int, n: int) -> None:
        for _ in range(n):
            result = await ws.grep("needle", "/mem/grep")
            assert result.files_searched == GREP_FILES and len(result.matches) == 10

    async def glob(start: int, n: int) -> None:
        for _ in range(n):
            found = await ws.glob("**/*.md", path="/mem/grep")
            assert len(found) == GREP_FILES // 2

    def row(id_: str, label: str, ops: int) -> Row:
        return Row(id_, "memory", label, ops, cfg.rounds)

    bulk = cfg.mem_bulk_ops
    return [
        Case(row("mem.write", "write 4 KiB (overwrite)", cfg.mem_ops), async_batch=write),
        Case(row("mem.read", "read_bytes 4 KiB", cfg.mem_ops), async_batch=read),
        Case(row("mem.stat", "stat", cfg.mem_ops), async_batch=stat),
        Case(row("mem.list", f"list (dir of {LIST_ENTRIES} entries)", bulk), async_batch=listing),
        Case(
            row("mem.grep", f"grep literal over {GREP_FILES} files x 20 lines", bulk),
            async_batch=grep,
        ),
        Case(
            row("mem.glob", f"glob **/*.md (dir of {GREP_FILES}, 50 match)", bulk), async_batch=glob
        ),
    ]


# -- report ------------------------------------------------------------------------------------


def _ratios(rows: dict[str, Row]) -> None:
    for row in rows.values():
        if row.baseline is not None:
            row.ratio = row.median_us / rows[row.baseline].median_us


def _spread(row: Row) -> str:
    lo, hi = min(row.per_op_ns) / 1000.0, max(row.per_op_ns) / 1000.0
    return f"{lo:,.1f} - {hi:,.1f}"


def render(results: Results) -> str:
    rows = results.rows
    out = [
        f"Command: `{results.command}`",
        "",
        "Machine: " + "; ".join(f"{k}: {v}" for k, v in results.machine.items()),
        "",
        "Times are medians over rounds of µs per operation; *wall* is elapsed time, *CPU* is "
        "process CPU time (all threads, so it leaves out waiting for the disk); *x raw* divides "
        "by the first row of the table.",
        "",
    ]
    titles = {
        "read": "Read a 4 KiB file (local disk, files spread over a 2-level tree)",
        "write": "Overwrite a 4 KiB file (local disk)",
        "memory": "MemoryStore mount through the Workspace (same policy, MemoryAuditSink)",
    }
    for group, title in titles.items():
        members = [r for r in rows.values() if r.group == group]
        first = members[0]
        if group == "memory":
            out += [
                f"**{title}**, {first.rounds} rounds",
                "",
                "| operation | ops/round | wall µs/op | min - max | ops/s | CPU µs/op |",
                "|---|---:|---:|---:|---:|---:|",
            ]
            out += [
                f"| {r.label} | {r.ops} | {r.median_us:,.1f} | {_spread(r)} | "
                f"{r.ops_per_s:,.0f} | {r.cpu_us:,.1f} |"
                for r in members
            ]
        else:
            base = rows[first.id]
            out += [
                f"**{title}**, {first.rounds} rounds x {first.ops} ops",
                "",
                "| case | wall µs/op | min - max | ops/s | x raw | CPU µs/op | CPU x raw |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            out += [
                f"| {r.label} | {r.median_us:,.1f} | {_spread(r)} | {r.ops_per_s:,.0f} | "
                f"{r.ratio or 0:.2f}x | {r.cpu_us:,.1f} | {r.cpu_us / base.cpu_us:.2f}x |"
                for r in members
            ]
        out.append("")
    return "\n".join(out)


def publish(results: Results) -> Path:
    """Write the run as ``bench/published/fs_ops.json`` (``bench/report.py`` renders it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _results import Result, Table, now, write_result

    titles = {"read": "Read a 4 KiB file", "write": "Overwrite a 4 KiB file"}
    titles["memory"] = "MemoryStore mount through the Workspace"
    columns = ["case", "ops/round", "rounds", "wall µs/op", "ops/s", "x first row", "CPU µs/op"]
    tables = []
    for group, title in titles.items():
        members = [r for r in results.rows.values() if r.group == group]
        rows: list[list[str | int | float | None]] = [
            [
                r.label,
                r.ops,
                r.rounds,
                round(r.median_us, 2),
                round(r.ops_per_s),
                None if r.ratio is None else round(r.ratio, 3),
                round(r.cpu_us, 2),
            ]
            for r in members
        ]
        tables.append(Table(title=title, columns=columns, rows=rows))
    return write_result(
        Result(
            bench="fs_ops",
            title="Filesystem operations",
            command=results.command,
            machine=results.machine,
            date=now(),
            tables=tables,
            notes=["Medians over rounds; *x first row* divides by the raw OS row of its table."],
        )
    )


def _profile_reads(ws: Workspace, cfg: Config, runner: asyncio.Runner) -> str:
    """cProfile of ``Workspace.read_bytes`` on the local and on the memory mount."""
    names = _tree_names(cfg.files)
    out = io.StringIO()
    for mount in ("/data/r", "/mem/rw"):
        paths = [f"{mount}/{n}" for n in names]

        async def loop(paths: list[str] = paths) -> None:
            for i in range(max(cfg.read_ops, 2000)):
                await ws.read_bytes(paths[i % len(paths)])

        profiler = cProfile.Profile()
        profiler.enable()
        runner.run(loop())
        profiler.disable()
        for key in ("tottime", "cumulative"):
            out.write(f"\n### read_bytes on {mount}, sorted by {key}\n")
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(22)
    return out.getvalue()


# -- main --------------------------------------------------------------------------------------


def run(cfg: Config, base_dir: Path, *, command: str, profile: bool = False) -> Results:
    work = Path(tempfile.mkdtemp(prefix="bastion-bench-", dir=base_dir))
    try:
        machine = machine_info(work)
        names = _tree_names(cfg.files)
        _populate(work / "r", names)
        for tree in ("w_os", "w_plain", "w_store", "w_ws", "w_sync"):
            _populate(work / tree, names)
        store = LocalStore(work)
        ws = Workspace(
            [Mount.of("/data", store), Mount.of("/mem", MemoryStore())],
            policy=realistic_policy(),
            audit=MemoryAuditSink(),
        )
        rows: dict[str, Row] = {}
        with asyncio.Runner() as runner:
            runner.run(_populate_memory(ws, names))
            groups = [
                _read_cases(cfg, work, ws, store),
                _write_cases(cfg, work, ws, store),
                _memory_cases(cfg, ws),
            ]
            for cases in groups:
                _run_group(cases, runner, cfg.rounds)
                rows.update((c.row.id, c.row) for c in cases)
            prof = _profile_reads(ws, cfg, runner) if profile else ""
        store.close()
        _ratios(rows)
        results = Results({k: rows[k] for k in ROW_IDS}, machine, command, profile=prof)
        results.markdown = render(results)
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> Results:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (well under 20 s)")
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    parser.add_argument("--dir", type=Path, default=Path("/tmp"), help="where files are made")
    parser.add_argument("--profile", action="store_true", help="cProfile Workspace.read_bytes")
    parser.add_argument("--files", type=int, help="files per tree (overrides the preset)")
    parser.add_argument("--rounds", type=int, help="timed rounds (overrides the preset)")
    parser.add_argument("--ops", type=int, help="ops per round for every case (overrides)")
    parser.add_argument("--publish", action="store_true", help="write bench/published/fs_ops.json")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.files is not None:
        cfg = replace(cfg, files=args.files)
    if args.rounds is not None:
        cfg = replace(cfg, rounds=args.rounds)
    if args.ops is not None:
        n = args.ops
        cfg = replace(cfg, read_ops=n, write_ops=n, mem_ops=n, mem_bulk_ops=n)
    shown = ["bench/fs_ops.py", *(argv if argv is not None else sys.argv[1:])]
    command = ".venv/bin/python " + " ".join(shown)
    results = run(cfg, args.dir, command=command, profile=args.profile)
    print(results.markdown)
    if results.profile:
        print(results.profile)
    if args.out is not None:
        args.out.write_text(
            "# Filesystem operations benchmark\n\n" + results.markdown + "\n", encoding="utf-8"
        )
    if args.publish:
        print(f"published: {publish(results)}")
    return results


if __name__ == "__main__":
    main()
