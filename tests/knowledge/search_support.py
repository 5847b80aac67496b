"""What the search-check tests share: a store that counts its ``stat`` calls (a file looked
at), and the paths of a result's hits."""

from __future__ import annotations

from bastion import MemoryStore
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.knowledge.hits import SearchResult


class CountingStore(MemoryStore):
    """A memory store that counts its ``stat`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.stats = 0

    async def stat(self, path: VPath) -> FileInfo:
        self.stats += 1
        return await super().stat(path)


def hit_paths(result: SearchResult) -> list[str]:
    return sorted(h.path for h in result.hits)
