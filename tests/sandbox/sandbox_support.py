"""The workspace the sandbox tests run commands against, the skip when bubblewrap cannot run on
this machine (it names what is missing), and the check that nothing is left for the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bastion import Labels, MemoryAuditSink, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.sandbox import SandboxError
from bastion.sandbox.bwrap import bwrap_binary

OWNER = Principal.of("owner", roles={"hr"}, clearance="restricted")
READER = Principal.of("reader", clearance="internal")

RULES = (
    Rule.allow("execute", "/**", description="commands may run anywhere"),
    Rule.deny(
        ["write", "delete"], "/out/**", principals={"reader"}, description="/out is read back only"
    ),
    Rule.allow("*", "/**"),
)

DOCS = {
    "/open.md": "# Open\n\nThe canteen opens at nine.\n",
    "/pay.md": "---\nclassification: confidential\n---\n# Pay\n\nzebra salary\n",
    "/plan.txt": "zebra launch plan\n",
    "/plan.txt.labels.yaml": "roles: [hr]\n",
    "/team/notes.md": "standup at ten\n",
}
"""The read-only mount's files as the store holds them (a disk or a bucket filled by others);
for READER, pay.md, plan.txt and its sidecar are hidden."""


def require_bwrap() -> None:
    try:
        bwrap_binary()
    except SandboxError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


async def workspace(principal: Principal = READER) -> Workspace:
    """``/docs`` read-only (files labelled internal, two hidden from READER), ``/scratch``
    read-write, ``/out`` where the policy refuses writes and deletes; bound to ``principal``."""
    docs = MemoryStore()
    await docs.mkdir(VPath.parse("/team"))
    for path, text in DOCS.items():
        await docs.write(VPath.parse(path), text.encode())
    owner = Workspace(
        [
            Mount.of("/docs", docs, scope="read_only", labels=Labels(classification="internal")),
            Mount.of("/scratch", MemoryStore()),
            Mount.of("/out", MemoryStore()),
        ],
        policy=Policy(rules=RULES),
        principal=OWNER,
        audit=MemoryAuditSink(),
        knowledge=Knowledge(MemoryIndex()),
    )
    await owner.write("/scratch/a.txt", "alpha\n")
    await owner.write("/scratch/sub/b.txt", "beta zebra\n")
    await owner.write("/out/report.txt", "quarterly\n")
    return owner.with_principal(principal)


_SUBREAPER = """
import asyncio, ctypes, json, os, sys
from bastion import RunLimits
from sandbox_support import workspace

# every orphan of this process's tree comes here instead of to the host's init
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
"""

_LEFT = """
asyncio.run(main())
me = os.getpid()
left = []
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            fields = open(f"/proc/{entry}/stat", "rb").read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            left.append([int(entry), fields[0].decode()])
print(json.dumps(left))
"""


def left_for_the_host(main: str, cwd: Path, timeout: float) -> list[list[object]]:
    """The processes (pid, state) still children of a Python process that made itself the
    subreaper and ran ``main`` (source defining ``async def main()``, with ``asyncio``,
    ``RunLimits`` and ``workspace`` at hand) to its end. A sandbox's PID 1 left for the host to
    reap (bubblewrap killed before it) would come back to it, as a zombie if nothing else."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", _SUBREAPER + main + _LEFT],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    left: list[list[object]] = json.loads(done.stdout.splitlines()[-1])
    return left
