"""Stores and mounts by URL: every scheme opens its real store; bad URLs, missing buckets,
refused credentials and unreachable servers fail in one line that names the mount and never
the secret."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto_s3 import make_bucket, moto_endpoint, s3_client

from bastion.core.errors import (
    ConfigurationError,
    NotFoundError,
    ScopeError,
    StoreError,
    StoreUnavailableError,
)
from bastion.core.models import Labels, Scope
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.core.timeouts import TimedStore
from bastion.stores.fsspec import FsspecStore
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.stores.registry import mount_from_url, store_from_url
from bastion.stores.sqlite import SqliteStore
from bastion.workspace.workspace import Workspace

P = VPath.parse
SECRET = "s3cr3t-Do-Not-Show"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        make_bucket(url, "registry")
        yield url


def _s3_options(endpoint: str, secret: str = "testing") -> dict[str, object]:
    return {"endpoint_url": endpoint, "key": "testing", "secret": secret}


def _one_line_without(message: str, *secrets: str) -> None:
    assert "\n" not in message
    for secret in secrets:
        assert secret not in message, message


async def _round_trip(store: object) -> bytes:
    assert hasattr(store, "write")
    await store.write(P("/hello.txt"), b"hi")  # type: ignore[attr-defined]
    data: bytes = await store.read_all(P("/hello.txt"))  # type: ignore[attr-defined]
    return data


# -- each scheme ---------------------------------------------------------------------------


async def test_memory_url() -> None:
    store = store_from_url("memory://")
    assert isinstance(store, MemoryStore)
    assert await _round_trip(store) == b"hi"
    assert store_from_url("memory://") is not store  # a fresh one each time
    for bad in ("memory://somewhere", "memory:///x"):
        with pytest.raises(ConfigurationError, match="memory:// takes no path"):
            store_from_url(bad)
    with pytest.raises(ConfigurationError, match="no path and no options"):
        store_from_url("memory://", create=True)


async def test_file_urls_absolute_relative_and_percent_encoded(tmp_path: Path) -> None:
    (tmp_path / "docs dir").mkdir()
    absolute = store_from_url(f"file://{tmp_path}/docs%20dir")
    assert isinstance(absolute, LocalStore)
    assert await _round_trip(absolute) == b"hi"
    assert (tmp_path / "docs dir" / "hello.txt").read_bytes() == b"hi"
    relative = store_from_url("file:docs%20dir", relative_to=tmp_path)
    assert await relative.read_all(P("/hello.txt")) == b"hi"
    created = store_from_url("file:new/tree", relative_to=tmp_path, create=True)
    await created.write(P("/x"), b"x")
    assert (tmp_path / "new" / "tree" / "x").read_bytes() == b"x"


def test_file_url_with_a_host_or_no_path_is_refused(tmp_path: Path) -> None:
    for bad in ("file://server/share", "file://", "file:///x?mode=ro"):
        with pytest.raises(ConfigurationError, match="names a path on this machine"):
            store_from_url(bad)
    with pytest.raises(ConfigurationError):
        store_from_url(f"file://{tmp_path}/missing")  # LocalStore: the root must exist


async def test_sqlite_urls_and_options(tmp_path: Path) -> None:
    store = store_from_url(f"sqlite://{tmp_path}/ws.db", chunk_size=4096)
    assert isinstance(store, SqliteStore)
    try:
        assert await _round_trip(store) == b"hi"
        await store.write(P("/big"), b"x" * 10_000)
        assert await store.read_range(P("/big"), 9_000, 5) == b"xxxxx"
    finally:
        store.close()
    assert (tmp_path / "ws.db").is_file()
    relative = store_from_url("sqlite:ws.db", relative_to=tmp_path)
    assert isinstance(relative, SqliteStore)
    try:
        assert await relative.read_all(P("/hello.txt")) == b"hi"  # the same file
    finally:
        relative.close()
    with pytest.raises(ConfigurationError, match="does not take these options: colour"):
        store_from_url(f"sqlite://{tmp_path}/other.db", colour="blue")


async def test_postgresql_url_opens_a_namespace(pg_dsn: str) -> None:
    from bastion.stores.postgres import PostgresStore

    store = store_from_url(pg_dsn, namespace="team-a")
    assert isinstance(store, PostgresStore)
    other = store_from_url(pg_dsn.replace("postgresql://", "postgres://", 1), namespace="team-b")
    try:
        assert await _round_trip(store) == b"hi"
        assert not await other.exists(P("/hello.txt"))  # namespaces never meet
    finally:
        await store.close()
        await other.close()  # type: ignore[attr-defined]


def test_postgresql_url_errors_never_show_the_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        mount_from_url("/db", f"postgresql://user:{SECRET}@host/db", options={"pool_max": 0})
    assert str(caught.value).startswith("mount /db: ")
    _one_line_without(str(caught.value), SECRET)


async def test_s3_url_opens_a_bucket_prefix(endpoint: str) -> None:
    prefix = uuid.uuid4().hex
    store = store_from_url(f"s3://registry/{prefix}", **_s3_options(endpoint))
    assert isinstance(store, FsspecStore)
    assert store.kind == "s3"
    try:
        assert await _round_trip(store) == b"hi"
        keys = s3_client(endpoint).list_objects_v2(Bucket="registry", Prefix=prefix)
        assert [o["Key"] for o in keys["Contents"]] == [f"{prefix}/hello.txt"]
    finally:
        await store.close()


async def test_other_fsspec_protocols_open_an_fsspec_store(tmp_path: Path) -> None:
    """fsspec's ``local://`` (a blocking filesystem, run in threads): not one of ours."""
    store = store_from_url(f"local://{tmp_path}")
    assert isinstance(store, FsspecStore)
    assert store.kind == "file"  # fsspec names its local filesystem "file"
    await store.mkdir(P("/sub"))
    await store.write(P("/sub/a.txt"), b"generic")
    assert (tmp_path / "sub" / "a.txt").read_bytes() == b"generic"
    assert [i.path for i in await store.list(P("/sub"))] == [P("/sub/a.txt")]


# -- bad URLs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("gopherx://host/x", "unknown URL scheme 'gopherx'"),
        ("no scheme at all", "starts with a scheme"),
        ("C:\\data\\ws.db", "starts with a scheme"),
        ("", "non-empty string"),
        ("s3://", "needs a bucket"),
        ("s3:///prefix/only", "needs a bucket"),
        ("sqlite://relative/ws.db", "names a path on this machine"),
        ("http://[::1/x", "malformed"),
    ],
)
def test_bad_urls_name_the_mount(url: str, expected: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        mount_from_url("/data", url)
    message = str(caught.value)
    assert message.startswith("mount /data: "), message
    assert expected in message
    _one_line_without(message)


def test_a_bad_url_with_a_password_never_shows_it() -> None:
    for url in (f"gopherx://me:{SECRET}@host/x", f"sqlite://me:{SECRET}@host/ws.db"):
        with pytest.raises(ConfigurationError) as caught:
            mount_from_url("/data", url)
        _one_line_without(str(caught.value), SECRET)


def test_mount_options_carry_scope_labels_description_and_timeout(tmp_path: Path) -> None:
    labels = Labels(tenant="acme", classification="internal", roles=frozenset({"eng"}))
    mount = mount_from_url(
        "/kb",
        f"sqlite://{tmp_path}/kb.db",
        "read_only",
        labels=labels,
        description="the knowledge base",
        timeout=2.5,
        options={"chunk_size": 2048},
    )
    assert mount.prefix == P("/kb")
    assert mount.scope is Scope.READ_ONLY
    assert mount.labels == labels
    assert mount.description == "the knowledge base"
    assert isinstance(mount.store, TimedStore)
    assert mount.store.timeout == 2.5
    mount.store.inner.close()  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="mount /kb: unknown scope"):
        mount_from_url("/kb", "memory://", "read_mostly")


def test_the_registry_imports_no_backend_until_used() -> None:
    code = (
        "import sys, bastion.stores.registry as r\n"
        "heavy = ('s3fs', 'psycopg', 'bastion.stores.fsspec', 'bastion.stores.postgres')\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "r.store_from_url('memory://')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")
    assert out[:2] == ["[]", "[]"]


# -- S3 failures, through a workspace ------------------------------------------------------


def _workspace(mount: object) -> Workspace:
    return Workspace([mount], policy=Policy.allow_all())  # type: ignore[list-item]


async def test_s3_mount_in_a_workspace_is_guarded(endpoint: str) -> None:
    mount = mount_from_url(
        "/lake",
        f"s3://registry/{uuid.uuid4().hex}",
        "read_write",
        labels=Labels(tenant="acme", classification="internal"),
        options=_s3_options(endpoint),
    )
    ws = Workspace(
        [mount],
        policy=Policy.allow_all(),
        principal=Principal.of("ana", tenant="acme", clearance="internal"),
    )
    await ws.mkdir("/lake/reports")
    await ws.write("/lake/reports/q1.md", "# Q1\nrevenue up\n")
    assert await ws.read_text("/lake/reports/q1.md") == "# Q1\nrevenue up\n"
    assert [e.path for e in await ws.list("/lake/reports")] == [P("/lake/reports/q1.md")]
    outsider = ws.with_principal(Principal.of("guest", tenant="other", clearance="restricted"))
    with pytest.raises(NotFoundError):
        await outsider.read_text("/lake/reports/q1.md")
    reader = _workspace(
        mount_from_url(
            "/lake", f"s3://registry/{uuid.uuid4().hex}", "read_only", options=_s3_options(endpoint)
        )
    )
    with pytest.raises(ScopeError):
        await reader.write("/lake/x.md", "no")


async def test_missing_bucket_is_a_one_line_store_error(endpoint: str) -> None:
    store = store_from_url("s3://no-such-bucket/x", **_s3_options(endpoint, SECRET))
    assert isinstance(store, FsspecStore)
    mount = mount_from_url("/lake", "s3://no-such-bucket/x", options=_s3_options(endpoint, SECRET))
    workspace = _workspace(mount)
    for call in (workspace.read_text("/lake/a.md"), workspace.list("/lake")):
        with pytest.raises(StoreError) as caught:
            await call
        message = str(caught.value)
        assert message.startswith("/lake"), message
        assert "bucket of this mount does not exist" in message
        _one_line_without(message, SECRET, "no-such-bucket")
    with pytest.raises(StoreError, match="bucket of this mount does not exist"):
        await store.check()
    await store.close()


async def test_refused_credentials_are_a_one_line_store_error(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto import settings

    store = store_from_url("s3://registry/creds", **_s3_options(endpoint, SECRET))
    assert isinstance(store, FsspecStore)
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # moto checks keys now
    try:
        for call in (store.check(), store.write(P("/a"), b"x"), store.stat(P("/a"))):
            with pytest.raises(StoreError) as caught:
                await call
            message = str(caught.value)
            assert "refused this mount's credentials" in message
            _one_line_without(message, SECRET, "testing")
    finally:
        monkeypatch.undo()
        await store.close()


async def test_unreachable_endpoint_is_store_unavailable() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = store_from_url(
        "s3://bucket/x",
        endpoint_url=f"http://127.0.0.1:{port}",
        key="testing",
        secret=SECRET,
        config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 1},
    )
    assert isinstance(store, FsspecStore)
    store._objects.fs.retries = 1  # type: ignore[attr-defined]  # s3fs's own retry loop
    try:
        with pytest.raises(StoreUnavailableError) as caught:
            await store.stat(P("/a"))
        assert "unreachable" in str(caught.value)
        _one_line_without(str(caught.value), SECRET, str(port))
    finally:
        await store.close()


async def test_a_hanging_endpoint_fails_within_the_mount_timeout(endpoint: str) -> None:
    """A server that accepts the connection and never answers: the mount's timeout ends the
    call (the request on fsspec's loop is cancelled) and other mounts keep working."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        hanging = mount_from_url(
            "/slow",
            "s3://bucket/x",
            timeout=0.5,
            options={"endpoint_url": f"http://127.0.0.1:{port}", "key": "k", "secret": SECRET},
        )
        fast = mount_from_url("/fast", "memory://")
        ws = Workspace([hanging, fast], policy=Policy.allow_all())
        with pytest.raises(StoreUnavailableError, match="filesystem unresponsive"):
            await ws.read_text("/slow/a.md")
        await ws.write("/fast/ok.md", "still fine")
        assert await ws.read_text("/fast/ok.md") == "still fine"
        await asyncio.wait_for(hanging.store.inner.close(), 5)  # type: ignore[attr-defined]
