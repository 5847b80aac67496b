"""A read through the document labels while other writers keep changing the file between its
labels and its bytes: it waits them out, a little longer each try, for a bounded time, and then
says the file kept changing. It never returns bytes under labels worked out for other bytes."""

from __future__ import annotations

import pytest

from bastion import MemoryStore, Policy
from bastion.core.errors import ConflictError
from bastion.core.models import FileInfo, Labels
from bastion.core.paths import VPath
from bastion.labels import store as doclabels
from bastion.labels.store import DocumentLabels

FILE = VPath.parse("/counter.md")


class _Churning(MemoryStore):
    """A memory store whose file another writer rewrites right after each ``stat`` of it, so
    the bytes read next are never the version the labels were worked out for, ``changes``
    times (then it is left alone)."""

    def __init__(self, changes: int) -> None:
        super().__init__()
        self.changes = changes

    async def stat(self, path: VPath) -> FileInfo:
        info = await super().stat(path)
        if path == FILE and self.changes > 0:
            self.changes -= 1
            await super().write(
                path, f"---\nclassification: internal\n---\nv{self.changes}\n".encode()
            )
        return info


async def _labelled(changes: int) -> tuple[_Churning, DocumentLabels]:
    store = _Churning(0)
    await store.write(FILE, b"---\nclassification: internal\n---\nfirst\n")
    store.changes = changes
    return store, DocumentLabels(store, Labels(), Policy.allow_all().classifications)


async def test_a_file_that_changes_many_times_is_read_once_it_holds_still() -> None:
    # More changes in a row than a fixed count of tries would allow (eight, before).
    store, labelled = await _labelled(changes=12)
    info, data = await labelled.read_file(FILE)
    assert store.changes == 0
    assert data.endswith(b"v0\n")
    assert info.version == (await store.stat(FILE)).version
    assert info.labels is not None and info.labels.classification == "internal"


async def test_a_file_that_never_holds_still_is_a_conflict_not_a_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(doclabels, "_PATIENCE", 0.2)
    store, labelled = await _labelled(changes=10**9)
    with pytest.raises(ConflictError, match="kept changing while it was being read; retry"):
        await labelled.read_file(FILE)
    assert store.changes < 10**9  # it did try, more than once
