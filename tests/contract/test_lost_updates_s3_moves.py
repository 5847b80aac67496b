"""No lost update when a move on S3 races a write of the moved file (red-team variant of issue
16, class: *lost updates*; docs/security.md, docs/stores.md).

A move of a file on object storage is a server-side copy and a delete. A write of the source
by another process between the two (S3 took it, the writer was told so) used to be deleted
with the source: the target held the content from before it, and the acknowledged write was
gone. The delete is now conditional on the object that was copied (S3's ``If-Match`` on
``DeleteObject``): a write in between makes the move fail with a ``ConflictError``, the
source keeps the write, and the copy is taken back. moto's server on loopback, the writer a
second store object (as another process would hold).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bastion.core.errors import ConflictError
from bastion.core.paths import VPath
from bastion.stores.fsspec import FsspecStore

from .test_fsspec_store import (
    _client,
    s3_endpoint,  # noqa: F401 - a fixture, used by name
)

SRC, DST = VPath.parse("/a.txt"), VPath.parse("/b.txt")


@pytest.fixture(scope="module")
def endpoint(request: pytest.FixtureRequest) -> Iterator[str]:
    url = str(request.getfixturevalue("s3_endpoint"))
    _client(url).create_bucket(Bucket="moves")  # type: ignore[attr-defined]
    yield url


def _store(endpoint: str, prefix: str) -> FsspecStore:
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    return FsspecStore(f"s3://moves/{prefix}", storage_options=options)


def _write_after_copy(mover: FsspecStore, endpoint: str, prefix: str, data: bytes) -> None:
    """Let another process's writer (a client of its own, outside this process's locks)
    write the source once, right after ``mover``'s copy of it."""
    objects: Any = mover._objects
    copy = objects.copy

    async def copy_then_write(src: str, dst: str, expect: Any, *, keep_version: bool) -> Any:
        copied = await copy(src, dst, expect, keep_version=keep_version)
        objects.copy = copy
        client: Any = _client(endpoint)
        client.put_object(Bucket="moves", Key=f"{prefix}/a.txt", Body=data)  # acknowledged
        return copied

    objects.copy = copy_then_write


async def test_a_write_between_the_copy_and_the_delete_is_kept(endpoint: str) -> None:
    prefix = uuid.uuid4().hex
    mover, writer = _store(endpoint, prefix), _store(endpoint, prefix)
    try:
        await mover.write(SRC, b"before\n")
        _write_after_copy(mover, endpoint, prefix, b"acknowledged\n")
        with pytest.raises(ConflictError, match="changed while it was being moved"):
            await mover.rename(SRC, DST)
        assert await writer.read_all(SRC) == b"acknowledged\n"
        assert not await writer.exists(DST)  # the copy taken back
        await mover.rename(SRC, DST)  # nothing in between: moved, with the write
        assert await writer.read_all(DST) == b"acknowledged\n"
        assert not await writer.exists(SRC)
    finally:
        await mover.close()
        await writer.close()


async def test_a_move_without_a_race_keeps_its_version(endpoint: str) -> None:
    store = _store(endpoint, uuid.uuid4().hex)
    try:
        written = await store.write(SRC, b"x\n")
        await store.rename(SRC, DST)
        assert (await store.stat(DST)).version == written.version
        assert not await store.exists(SRC)
    finally:
        await store.close()
