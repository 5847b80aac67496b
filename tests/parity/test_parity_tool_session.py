"""The agent tool session treats a mount hidden from the principal as no mount at all: it looks
nothing up there, so a write under it leaves the same answer and the same audit records as a
write under no mount (found by the parity suite: a stat was audited only where the hidden
mount existed)."""

from __future__ import annotations

import pytest

from bastion import Labels, MemoryAuditSink, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools import Toolset

ANA = Principal.of("ana", clearance="internal")
BOARD = Labels(roles=frozenset({"board"}))


def _toolset(*, hidden_mount: bool, sink: MemoryAuditSink) -> Toolset:
    mounts = [Mount.of("/docs", MemoryStore())]
    if hidden_mount:
        mounts.append(Mount.of("/board", MemoryStore(), labels=BOARD))
    ws = Workspace(mounts, policy=Policy.allow_all(), principal=ANA, audit=sink)
    return Toolset(ws)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("write_file", {"path": "/board/new.md", "content": "x"}),
        ("edit_file", {"path": "/board/new.md", "old_string": "a", "new_string": "b"}),
        ("delete", {"path": "/board/new.md"}),
    ],
)
async def test_a_change_under_a_hidden_mount_is_told_and_audited_as_under_none(
    tool: str, arguments: dict[str, str]
) -> None:
    told = []
    for hidden in (True, False):
        sink = MemoryAuditSink()
        output = await _toolset(hidden_mount=hidden, sink=sink).call(tool, arguments)
        records = [(r.operation, r.path, r.allowed, r.told or r.reason) for r in sink.records]
        told.append((output, records))
    assert told[0] == told[1]
    assert told[0][0]["success"] is False


async def test_a_tool_set_builds_where_every_mount_is_hidden() -> None:
    ws = Workspace(
        [Mount.of("/board", MemoryStore(), labels=BOARD)], policy=Policy.allow_all(), principal=ANA
    )
    tools = Toolset(ws)
    assert (await tools.call("write_file", {"path": "/board/a.md", "content": "x"}))[
        "success"
    ] is False
