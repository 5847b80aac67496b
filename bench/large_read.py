"""Memory held by reading the last page of a large file, per store (issue 6).

.venv/bin/python bench/large_read.py [--size-mib 1024] [--stores local,sqlite,s3,control]
                                    [--out FILE] [--work DIR]

A file of ``--size-mib`` MiB (1 GiB by default) is put in each store: a folder
(``LocalStore``), a SQLite file (``SqliteStore``, written by appends of 16 MiB) and S3 (moto's
server in a process of its own, the file uploaded in parts; read through ``FsspecStore``).
Then, for each store, a fresh child process builds a ``Workspace`` with one mount, reads the
first 64 KiB page once (imports, sessions, caches), and reads the last 64 KiB page with
``Workspace.read_bytes(path, start=size - 65536, end=size)``, measuring:

* **peak RSS growth**: the process's peak resident memory during the read (``VmHWM``, reset
  to the current RSS just before it through ``/proc/self/clear_refs``) minus the RSS before:
  memory the read made the process hold at its worst, whatever allocated it (Python, SQLite,
  sockets, other threads);
* **tracemalloc peak**: the largest Python allocation total during a second read of the same
  page (tracemalloc runs for that read only, so its own bookkeeping stays out of the first
  figure);
* **RSS growth**: resident memory after the read minus before it (what it kept);
* the wall time of the first measured read, for orientation only.

A control row reads the whole file the naive way (``Path.read_bytes``) under the same
measurement, to show what a store that ignored the range would cost.

The bytes read are checked against what was written. The child runs nothing else, so the
figures are the read's. A store that loaded the whole file would show a growth near the file
size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

PAGE = 64 * 1024
MiB = 1 << 20
KEY = "big/file.bin"
BUCKET = "bench-large-read"
CREDENTIALS = {"key": "bench", "secret": "bench"}


def _block(n: int) -> bytes:
    return bytes([n % 251]) * MiB


def _expected_tail(size_mib: int) -> bytes:
    return _block(size_mib - 1)[-PAGE:]


# -- setup (parent process) ------------------------------------------------------------------


def make_local(work: Path, size_mib: int) -> Path:
    path = work / "local" / KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for n in range(size_mib):
            fh.write(_block(n))
    return path


def make_sqlite(work: Path, source: Path) -> Path:
    from bastion.core.models import WriteMode
    from bastion.core.paths import VPath
    from bastion.stores.sqlite import SqliteStore

    db = work / "ws.db"
    store = SqliteStore(db)

    async def fill() -> None:
        await store.makedirs(VPath.parse("/big"))
        with source.open("rb") as fh:
            while piece := fh.read(16 * MiB):
                await store.write(VPath.parse(f"/{KEY}"), piece, mode=WriteMode.APPEND)

    try:
        asyncio.run(fill())
    finally:
        store.close()
    return db


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    log = (work / "moto.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError("moto's server did not start within 60 s")


def make_s3(endpoint: str, source: Path) -> None:
    import boto3
    from boto3.s3.transfer import TransferConfig

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=CREDENTIALS["key"],
        aws_secret_access_key=CREDENTIALS["secret"],
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    config = TransferConfig(multipart_chunksize=64 * MiB, max_concurrency=2)
    client.upload_file(str(source), BUCKET, KEY, Config=config)


# -- measuring (child process) ---------------------------------------------------------------


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _rss_kib() -> int:
    return _status_kib("VmRSS")


def _peak_start() -> tuple[int, int]:
    """Reset the peak-RSS mark (``VmHWM``) to the current RSS; return (RSS, peak) now.

    ``ru_maxrss`` cannot serve: after ``exec`` it keeps the peak of the process that forked
    the child (the driver, which built the files), hiding any smaller growth."""
    Path("/proc/self/clear_refs").write_text("5")
    return _rss_kib(), _status_kib("VmHWM")


def _peak_growth(start: tuple[int, int]) -> int:
    return _status_kib("VmHWM") - max(start)


def _url(store: str, work: Path, endpoint: str | None) -> tuple[str, dict[str, Any]]:
    if store == "local":
        return f"file://{work / 'local'}", {}
    if store == "sqlite":
        return f"sqlite://{work / 'ws.db'}", {}
    assert endpoint is not None
    return f"s3://{BUCKET}", {"endpoint_url": endpoint, **CREDENTIALS}


def measure_control(work: Path, size_mib: int) -> dict[str, Any]:
    """The same measurement of a read that loads the whole file: what a store that ignored
    the range would cost (shows that the figures above would catch it)."""
    path = work / "local" / KEY
    with path.open("rb") as fh:
        assert fh.read(PAGE) == _block(0)[:PAGE]
    mark = _peak_start()
    started = time.perf_counter()
    tail = path.read_bytes()[-PAGE:]
    elapsed = time.perf_counter() - started
    growth, rss_after = _peak_growth(mark), _rss_kib()
    assert tail == _expected_tail(size_mib)
    tracemalloc.start()
    path.read_bytes()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "store": "control: whole file read",
        "file_bytes": size_mib * MiB,
        "page_bytes": PAGE,
        "rss_before_kib": mark[0],
        "rss_growth_kib": rss_after - mark[0],
        "peak_rss_growth_kib": growth,
        "tracemalloc_peak_bytes": peak,
        "read_ms": round(elapsed * 1000, 2),
    }


def measure(store: str, work: Path, size_mib: int, endpoint: str | None) -> dict[str, Any]:
    if store == "control":
        return measure_control(work, size_mib)
    from bastion import Policy, Workspace
    from bastion.config import close_mounts
    from bastion.stores.registry import mount_from_url

    url, options = _url(store, work, endpoint)
    mount = mount_from_url("/data", url, "read_only", options=options)
    ws = Workspace([mount], policy=Policy.allow_all())
    size = size_mib * MiB
    path = f"/data/{KEY}"

    async def run() -> dict[str, Any]:
        first = await ws.read_bytes(path, start=0, end=PAGE)  # warm-up
        assert first == _block(0)[:PAGE]
        mark = _peak_start()
        started = time.perf_counter()
        tail = await ws.read_bytes(path, start=size - PAGE, end=size)
        elapsed = time.perf_counter() - started
        growth, rss_after = _peak_growth(mark), _rss_kib()
        assert tail == _expected_tail(size_mib), "the last page came back wrong"
        tracemalloc.start()
        again = await ws.read_bytes(path, start=size - PAGE, end=size)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert again == tail
        await close_mounts(ws.mounts)
        return {
            "store": store,
            "file_bytes": size,
            "page_bytes": PAGE,
            "rss_before_kib": mark[0],
            "rss_growth_kib": rss_after - mark[0],
            "peak_rss_growth_kib": growth,
            "tracemalloc_peak_bytes": peak,
            "read_ms": round(elapsed * 1000, 2),
        }

    return asyncio.run(run())


# -- driver ----------------------------------------------------------------------------------


def _report(rows: list[dict[str, Any]], size_mib: int, setup: dict[str, float]) -> str:
    lines = [
        f"# Reading the last 64 KiB page of a {size_mib} MiB file",
        "",
        f"`bench/large_read.py`, {time.strftime('%Y-%m-%d %H:%M')}, Python "
        f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs.",
        "Each row: a fresh process, one warm-up read of the first page, then the last page.",
        "",
        "| store | file | page | RSS before | peak RSS growth | RSS growth | tracemalloc peak "
        "| read time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['store']} | {row['file_bytes'] // MiB} MiB | {row['page_bytes'] // 1024} KiB "
            f"| {row['rss_before_kib'] // 1024} MiB | {row['peak_rss_growth_kib']} KiB "
            f"| {row['rss_growth_kib']} KiB | {row['tracemalloc_peak_bytes'] / 1024:.1f} KiB "
            f"| {row['read_ms']} ms |"
        )
    lines += [
        "",
        "Setup (not measured above): "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in setup.items())
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--stores", default="local,sqlite,s3,control")
    parser.add_argument("--work", type=Path, help="folder for the files (default: a temp one)")
    parser.add_argument("--out", type=Path, help="write the Markdown table here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(measure(args.child, args.work, args.size_mib, args.endpoint)))
        return

    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = set(stores) - {"local", "sqlite", "s3", "control"}
    if unknown:
        parser.error(f"unknown stores: {', '.join(sorted(unknown))}")
    work = args.work or Path(tempfile.mkdtemp(prefix="bastion-large-read-"))
    work.mkdir(parents=True, exist_ok=True)
    setup: dict[str, float] = {}
    server: subprocess.Popen[bytes] | None = None
    endpoint = None
    try:
        started = time.perf_counter()
        source = make_local(work, args.size_mib)
        setup["local file"] = time.perf_counter() - started
        if "sqlite" in stores:
            started = time.perf_counter()
            make_sqlite(work, source)
            setup["sqlite"] = time.perf_counter() - started
        if "s3" in stores:
            started = time.perf_counter()
            server, endpoint = start_moto(work)
            make_s3(endpoint, source)
            setup["s3 upload to moto"] = time.perf_counter() - started
        rows = []
        for store in stores:
            command = [sys.executable, __file__, "--child", store, "--work", str(work)]
            command += ["--size-mib", str(args.size_mib)]
            if endpoint:
                command += ["--endpoint", endpoint]
            env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true"}
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"measuring {store} failed:\n{done.stderr}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    report = _report(rows, args.size_mib, setup)
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
