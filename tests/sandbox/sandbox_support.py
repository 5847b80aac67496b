"""The workspace the sandbox tests run commands against, and the skip when bubblewrap cannot
run on this machine (it names what is missing)."""

from __future__ import annotations

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
