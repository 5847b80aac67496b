"""The index's own disk fills up while the files' disk is fine.

The index folder (``Knowledge.open``, LanceDB) lives on a 2 MiB tmpfs that the test fills. A
write through the workspace reaches its file and returns (the file was written: reporting a
failure would make the caller write it again, an append twice); the index's failure is kept
in the link's ``failures``; a search never shows the stale chunk it still holds; once the
disk has room again, ``reindex`` (or the next search that meets the file) brings it back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import Knowledge, LocalStore, Mount, Policy, Workspace

from .support import Tmpfs, fill, tmpfs


@pytest.fixture
def disk() -> Iterator[Tmpfs]:
    with tmpfs("2m") as mounted:
        yield mounted


async def test_a_full_index_disk_loses_no_write_and_shows_no_stale_hit(
    disk: Tmpfs, tmp_path: Path
) -> None:
    knowledge = Knowledge.open(disk.path / "index", embedder=None)
    ws = Workspace(
        [Mount.of("/notes", LocalStore(tmp_path))], policy=Policy.allow_all(), knowledge=knowledge
    )
    try:
        await ws.write("/notes/log.md", "# Log\n\nlapwing seen at dawn\n")
        assert [h.path for h in (await ws.search("lapwing", mode="bm25")).hits] == ["/notes/log.md"]
        filler = fill(disk.path)

        await ws.write("/notes/log.md", "# Log\n\nlapwing gone, dunlin at dusk\n")
        await ws.append("/notes/log.md", "dunlin again\n")
        assert await ws.read_text("/notes/log.md") == (
            "# Log\n\nlapwing gone, dunlin at dusk\ndunlin again\n"
        )
        failure = ws._link().failures["/notes/log.md"]
        assert failure.startswith("index update failed: ") and "\n" not in failure
        # The index still holds "seen at dawn": the hit is checked against the file, the
        # repair fails on the full disk, and the stale chunk is left out.
        assert (await ws.search("dawn", mode="bm25")).hits == ()
        assert (await ws.search("lapwing", mode="bm25")).hits == ()

        filler.unlink()  # room again
        summary = await ws.reindex()
        assert summary.indexed == 1
        [hit] = (await ws.search("dunlin", mode="bm25")).hits
        assert hit.snippet == "# Log\n\nlapwing gone, dunlin at dusk\ndunlin again"
        assert (await ws.search("dawn", mode="bm25")).hits == ()
    finally:
        knowledge.close()
