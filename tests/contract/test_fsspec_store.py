"""FsspecStore against the shared store contract: S3 through moto's server on loopback (under a
prefix and at a bucket's root), and fsspec's in-memory filesystem (the generic backend)."""

from __future__ import annotations

import asyncio
import logging
import tracemalloc
import uuid
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import boto3
import fsspec
import pytest
import s3fs
from moto.server import ThreadedMotoServer

from bastion.core.errors import ConfigurationError, ConflictError, InvalidPathError
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.stores._fsspec_objects import ABSENT, MARKER, Objects, PreconditionFailed
from bastion.stores._fsspec_s3 import COMPOSE_MIN
from bastion.stores.fsspec import FsspecStore

from .store_contract import StoreContract

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on loopback, fake credentials in the environment."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in FAKE_AWS.items():
            patch.setenv(name, value)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


def _client(endpoint: str) -> object:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


def _options(endpoint: str) -> dict[str, object]:
    return {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}


@pytest.fixture(scope="module")
def bucket(s3_endpoint: str) -> str:
    _client(s3_endpoint).create_bucket(Bucket="contract")  # type: ignore[attr-defined]
    return "contract"


@pytest.fixture(scope="module")
def s3(s3_endpoint: str, bucket: str) -> Iterator[object]:
    """One S3 filesystem (one client session) shared by the module's stores."""
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **_options(s3_endpoint))
    yield fs
    asyncio.run(FsspecStore(fs, root=bucket).close())


class TestS3Store(StoreContract):
    @pytest.fixture
    def store(self, s3: object, bucket: str) -> FsspecStore:
        return FsspecStore(s3, root=f"{bucket}/tests/{uuid.uuid4().hex}")


class TestMemoryFilesystemStore(StoreContract):
    """The generic backend: any fsspec filesystem, directories kept by marker files."""

    @pytest.fixture
    def store(self) -> Iterator[FsspecStore]:
        root = f"/contract-{uuid.uuid4().hex}"
        fs = fsspec.filesystem("memory")
        try:
            yield FsspecStore(fs, root=root)
        finally:
            if fs.exists(root):
                fs.rm(root, recursive=True)


# -- what the contract does not say --------------------------------------------------------


T = TypeVar("T")
P = VPath.parse
MiB = 1 << 20


def _keys(client: Any, bucket: str, prefix: str) -> list[str]:
    listing = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listing.get("Contents", ()))


async def _on_loop(store: FsspecStore, work: Coroutine[Any, Any, T]) -> T:
    """Run a backend call where the store runs them, without the store's translation."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, store._loop))


class TestS3Specifics:
    @pytest.fixture
    def prefix(self) -> str:
        return f"extra/{uuid.uuid4().hex}"

    @pytest.fixture
    def store(self, s3: object, bucket: str, prefix: str) -> FsspecStore:
        return FsspecStore(s3, root=f"{bucket}/{prefix}")

    @pytest.fixture
    def client(self, s3_endpoint: str) -> Any:
        return _client(s3_endpoint)

    async def test_layout_markers_and_describe(
        self, store: FsspecStore, client: Any, bucket: str, prefix: str
    ) -> None:
        await store.makedirs(P("/a/b"))
        await store.write(P("/a/b/c.txt"), b"c")
        assert _keys(client, bucket, prefix) == [
            f"{prefix}/a/",
            f"{prefix}/a/b/",
            f"{prefix}/a/b/c.txt",
        ]
        head = client.head_object(Bucket=bucket, Key=f"{prefix}/a/b/c.txt")
        assert head["Metadata"]["bastion-version"]  # the version token travels as metadata
        assert store.kind == "s3"
        assert bucket not in store.describe() and prefix not in store.describe()

    async def test_the_server_checks_conditions(self, store: FsspecStore) -> None:
        """Without the in-process lock (another process, say), S3 itself refuses a stale
        or a create-only write."""
        objects: Objects = store._objects
        first = await store.write(P("/f"), b"one")
        stale = await _on_loop(store, objects.head("f"))
        assert stale is not None and stale.version == first.version
        await store.write(P("/f"), b"two")
        with pytest.raises(PreconditionFailed):
            await _on_loop(store, objects.put("f", b"late", stale))
        with pytest.raises(PreconditionFailed):
            await _on_loop(store, objects.put("f", b"again", ABSENT))
        assert await store.read_all(P("/f")) == b"two"

    async def test_objects_written_by_other_tools(
        self, store: FsspecStore, client: Any, bucket: str, prefix: str
    ) -> None:
        for key, body in {
            "reports/2024/q1.csv": b"q1",
            "reports/2024/q2.csv": b"q2",
            "top.txt": b"top",
            "odd//double-slash": b"x",
            "cafe\u0301.txt": b"not NFC",
        }.items():
            client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=body)
        root = {str(i.path): i.kind.value for i in await store.list(VPath.ROOT)}
        assert root == {"/reports": "directory", "/top.txt": "file", "/odd": "directory"}
        assert [str(i.path) for i in await store.list(P("/odd"))] == []  # "" is no name
        q1 = await store.stat(P("/reports/2024/q1.csv"))
        assert q1.version == client.head_object(Bucket=bucket, Key=f"{prefix}/reports/2024/q1.csv")[
            "ETag"
        ].strip('"')  # no token: the ETag is the version
        assert await store.read_all(P("/reports/2024/q1.csv")) == b"q1"
        await store.delete(P("/reports/2024/q1.csv"))
        await store.delete(P("/reports/2024/q2.csv"))
        assert (await store.stat(P("/reports/2024"))).is_dir  # a marker keeps it
        assert await store.list(P("/reports/2024")) == []
        await store.rename(P("/reports"), P("/archive"))
        assert (await store.stat(P("/archive/2024"))).is_dir
        assert not await store.exists(P("/reports"))
        assert f"{prefix}/archive/2024/" in _keys(client, bucket, prefix)

    async def test_append_to_a_large_object_composes_on_the_server(
        self, store: FsspecStore
    ) -> None:
        size = COMPOSE_MIN + 123
        head = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        first = await store.write(P("/log.bin"), head)
        second = await store.write(P("/log.bin"), b"tail", mode=WriteMode.APPEND)
        assert second.size == size + 4
        assert await store.read_range(P("/log.bin"), size - 3, 100) == head[-3:] + b"tail"
        assert await store.read_range(P("/log.bin"), 0, 256) == head[:256]
        empty = await store.write(P("/log.bin"), b"", mode=WriteMode.APPEND)
        assert len({first.version, second.version, empty.version}) == 3
        assert (await store.stat(P("/log.bin"))).size == size + 4
        with pytest.raises(ConflictError):
            await store.write(P("/log.bin"), b"!", mode=WriteMode.APPEND, if_version=first.version)
        appended = await store.write(
            P("/log.bin"), b"!", mode=WriteMode.APPEND, if_version=empty.version
        )
        assert appended.size == size + 5

    async def test_copy_is_made_by_the_server_with_a_new_version(self, store: FsspecStore) -> None:
        source = await store.write(P("/a.bin"), b"payload")
        copied = await store.copy_file(P("/a.bin"), P("/b.bin"))
        assert copied.version != source.version
        assert (await store.stat(P("/b.bin"))).version == copied.version
        assert await store.read_all(P("/b.bin")) == b"payload"
        await store.rename(P("/b.bin"), P("/c.bin"))
        assert (await store.stat(P("/c.bin"))).version == copied.version  # a move keeps it

    async def test_refused_reads_release_their_connection(self, store: FsspecStore) -> None:
        """``check`` refuses after the response's headers arrived: the body is closed, so
        many refusals in a row never exhaust the connection pool."""
        await store.write(P("/secret.bin"), b"s" * 100_000)
        seen: list[FileInfo] = []

        def refuse(info: FileInfo) -> None:
            seen.append(info)
            raise PermissionError("no")

        for _ in range(25):
            with pytest.raises(PermissionError):
                await store.read_file(P("/secret.bin"), 10, 1000, check=refuse)
        assert {(i.size, i.version) for i in seen} == {
            (100_000, (await store.stat(P("/secret.bin"))).version)
        }
        info, data = await asyncio.wait_for(store.read_file(P("/secret.bin"), 99_990), 30)
        assert (info.size, data) == (100_000, b"s" * 10)

    async def test_a_store_at_a_bucket_root(self, s3_endpoint: str, s3: object) -> None:
        name = f"root-{uuid.uuid4().hex[:12]}"
        client = _client(s3_endpoint)
        client.create_bucket(Bucket=name)  # type: ignore[attr-defined]
        store = FsspecStore(s3, root=name)
        await store.mkdir(P("/d"))
        await store.write(P("/d/f.txt"), b"f")
        await store.write(P("/top"), b"t")
        assert {str(i.path) for i in await store.list(VPath.ROOT)} == {"/d", "/top"}
        await store.rename(P("/d"), P("/e"))
        await store.delete(P("/e"), recursive=True)
        await store.delete(P("/top"))
        assert await store.list(VPath.ROOT) == []
        assert _keys(client, name, "") == []

    def test_constructor_errors(self, s3_endpoint: str) -> None:
        with pytest.raises(ConfigurationError, match="cannot open a 'nosuchproto' URL"):
            FsspecStore("nosuchproto://x/y")
        with pytest.raises(ConfigurationError, match="asynchronous=False"):
            FsspecStore(s3fs.S3FileSystem(asynchronous=True, skip_instance_cache=True))
        with pytest.raises(ConfigurationError, match="apply to a URL"):
            FsspecStore(fsspec.filesystem("memory"), storage_options={"x": 1})
        with pytest.raises(ConfigurationError, match="needs a bucket"):
            FsspecStore(fsspec.filesystem("s3", skip_instance_cache=True), root="")


class TestGenericBackend:
    async def test_the_marker_name_is_reserved_and_hidden(self) -> None:
        fs = fsspec.filesystem("memory")
        root = f"/generic-{uuid.uuid4().hex}"
        store = FsspecStore(fs, root=root)
        try:
            await store.mkdir(P("/d"))
            assert fs.exists(f"{root}/d/{MARKER}")
            assert await store.list(P("/d")) == []
            for call in (
                store.write(P(f"/d/{MARKER}"), b"x"),
                store.read_all(P(f"/d/{MARKER}")),
                store.mkdir(P(f"/{MARKER}")),
            ):
                with pytest.raises(InvalidPathError, match="reserved"):
                    await call
        finally:
            fs.rm(root, recursive=True)

    async def test_reading_the_last_page_of_a_large_file_holds_only_the_page(
        self, tmp_path: Path
    ) -> None:
        """A 64 MiB file on disk through fsspec's local filesystem: reading its last 64 KiB
        allocates about 64 KiB, not the file."""
        size, page = 64 * MiB, 64 * 1024
        with (tmp_path / "big.bin").open("wb") as fh:
            for n in range(size // MiB):
                fh.write(bytes([n % 256]) * MiB)
        store = FsspecStore(f"local://{tmp_path}")
        await store.read_range(P("/big.bin"), 0, 16)  # warm up imports and the loop
        tracemalloc.start()
        try:
            data = await store.read_range(P("/big.bin"), size - page, page)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert data == bytes([(size // MiB - 1) % 256]) * page
        assert peak < 4 * page, f"peak {peak} bytes for a {page}-byte page"
