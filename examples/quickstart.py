"""Quickstart: one governed workspace over two mounts, searchable, refusing what it must.

Run: python examples/quickstart.py
"""

import asyncio

from bastion import Knowledge, MemoryStore, Mount, Policy, Principal, ScopeError, Workspace

mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/notes", MemoryStore())]
ws = Workspace(
    mounts, policy=Policy.allow_all(), principal=Principal.of("me"), knowledge=Knowledge()
)


async def main() -> None:
    print(ws.filesystem_map())
    await ws.write("/notes/canary.md", "# Canary\nRotate the canary keys every week.\n")
    print(await ws.read_text("/notes/canary.md"), end="")
    found = await ws.search("rotate keys", mode="bm25")
    print("search:", [hit.path for hit in found.hits])
    try:
        await ws.write("/docs/new.md", "no")
    except ScopeError as refused:
        print("refused:", refused)


asyncio.run(main())
