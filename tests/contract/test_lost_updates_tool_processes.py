"""No lost update through the agent tools' read-before-write across real processes (red-team
variant of issue 16, class: *lost updates*; docs/security.md).

Three processes, each with its own store object and tool session, increment one counter
file of about 300 KiB (so the read tool's page is read in five chunks, and another process's write
can land between two of them) by reading it whole with the read tool and changing it with
the tool's ``edit`` or ``write``; one of them is killed (SIGKILL) mid-run. On the local disk,
SQLite, PostgreSQL and S3 (moto, one request at a time): no page is ever torn (every line of
every page read holds one value), each value is acknowledged once, and the final value is
the number of acknowledged increments (give or take the killed process's last,
unacknowledged one).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from bastion.core.paths import VPath

from .cas_worker import close_store, open_store
from .test_cas_processes import serial_s3  # noqa: F401 - a fixture, used by name
from .test_fsspec_store import FAKE_AWS
from .tool_worker import body, value_of

WORKER = Path(__file__).with_name("tool_worker.py")
WORKERS = 3
ROUNDS = 8
LINES = 60_000  # "n=K;\n" each: about 300 KiB, five chunks of the page reader
KILL_AFTER = 2


@pytest.fixture(params=["local", "sqlite", "postgres", "s3"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    base: dict[str, Any] = {"counter": "/counter", "lines": LINES, "rounds": ROUNDS}
    if request.param == "local":
        (tmp_path / "root").mkdir()
        return base | {"kind": "local", "target": str(tmp_path / "root")}
    if request.param == "sqlite":
        return base | {"kind": "sqlite", "target": str(tmp_path / "ws.db")}
    if request.param == "postgres":
        return base | {"kind": "postgres", "target": str(request.getfixturevalue("pg_dsn"))}
    endpoint = str(request.getfixturevalue("serial_s3"))
    return base | {"kind": "s3", "target": f"cas/{uuid.uuid4().hex}", "endpoint": endpoint}


async def _put(spec: dict[str, Any], text: str) -> None:
    store = open_store(spec)
    try:
        await store.write(VPath.parse(spec["counter"]), text.encode())
    finally:
        await close_store(store)


async def _get(spec: dict[str, Any]) -> str:
    store = open_store(spec)
    try:
        return (await store.read_all(VPath.parse(spec["counter"]))).decode()
    finally:
        await close_store(store)


def _rest(proc: subprocess.Popen[str]) -> list[str]:
    """The lines a worker prints until it ends (stdin already closed)."""
    assert proc.stdout is not None
    lines = proc.stdout.read().splitlines()
    proc.wait(timeout=300)
    return lines


def _errors(proc: subprocess.Popen[str]) -> str:
    assert proc.stderr is not None
    return proc.stderr.read()[-2000:]


def test_tool_increments_across_processes_and_a_kill(spec: dict[str, Any]) -> None:
    asyncio.run(_put(spec, body(0, LINES)))
    env = {**os.environ, **FAKE_AWS, "PYTHONPATH": str(WORKER.parent)}
    procs = []
    for n in range(WORKERS):
        rounds = 10**6 if n == 0 else ROUNDS  # the victim: no end
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), json.dumps(spec | {"rounds": rounds})],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", proc.communicate()[1][-2000:]
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        victim = procs[0]
        assert victim.stdout is not None
        seen = [victim.stdout.readline().strip() for _ in range(KILL_AFTER)]
        assert all(line.startswith("ack ") for line in seen), seen
        os.kill(victim.pid, signal.SIGKILL)
        outs = [seen + _rest(victim)]  # whatever the victim printed before it died
        for proc in procs[1:]:
            lines = _rest(proc)
            assert proc.returncode == 0 and lines[-1:] == ["done"], _errors(proc)
            outs.append(lines)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
    acked = [int(line.split()[1]) for lines in outs for line in lines if line.startswith("ack ")]
    assert len(acked) == len(set(acked)), "a value was acknowledged twice"
    final = value_of(asyncio.run(_get(spec)), LINES)
    assert len(acked) >= KILL_AFTER + (WORKERS - 1) * ROUNDS
    assert set(acked) <= set(range(1, final + 1))
    assert len(set(range(1, final + 1)) - set(acked)) <= 1, "lost updates"
