"""An S3 mount whose endpoint answers ``500 InternalError`` for a while, then recovers.

moto's S3 server on loopback, behind :class:`FlakyProxy` (a loopback proxy that fails the
requests it is told to, and passes the others through unchanged). A few failures are absorbed
by the client's retries; a longer outage fails the call with a one-line error naming the mount,
the object keeps its old content whole, and once the endpoint answers again so does the mount.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from bastion import Knowledge, Policy, Workspace
from bastion.core.errors import StoreError
from bastion.stores.registry import mount_from_url
from stores.moto_s3 import make_bucket, moto_endpoint, s3_client

from .flaky_proxy import FlakyProxy
from .support import says

SERVER_FAULT = (
    "the object store of this mount answered with a server error",
    "try again later, and ask an operator if it persists",
)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        make_bucket(url, "lake")
        yield url


@pytest.fixture
def proxy(endpoint: str) -> Iterator[FlakyProxy]:
    flaky = FlakyProxy(endpoint)
    flaky.start()
    try:
        yield flaky
    finally:
        flaky.stop()


@pytest.fixture
def prefix() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def ws(proxy: FlakyProxy, prefix: str) -> Workspace:
    options = {"endpoint_url": proxy.url, "key": "testing", "secret": "testing"}
    mount = mount_from_url("/lake", f"s3://lake/{prefix}", "read_write", options=options)
    return Workspace([mount], policy=Policy.allow_all(), knowledge=Knowledge())


def _stored(endpoint: str, prefix: str, name: str) -> bytes:
    """The object as S3 holds it, read around the proxy."""
    answer = s3_client(endpoint).get_object(Bucket="lake", Key=f"{prefix}/{name}")
    body: bytes = answer["Body"].read()
    return body


async def test_a_few_500s_are_retried_and_the_write_lands_whole(
    ws: Workspace, proxy: FlakyProxy, endpoint: str, prefix: str
) -> None:
    await ws.write("/lake/notes.md", "# Notes\n\nsandpiper\n")
    proxy.fail_next(2)
    await ws.write("/lake/notes.md", "# Notes\n\nsandpiper flock\n")
    assert proxy.failed == 2
    assert _stored(endpoint, prefix, "notes.md") == b"# Notes\n\nsandpiper flock\n"
    assert await ws.read_text("/lake/notes.md") == "# Notes\n\nsandpiper flock\n"


async def test_an_outage_fails_with_the_mount_named_and_recovers(
    ws: Workspace, proxy: FlakyProxy, endpoint: str, prefix: str
) -> None:
    await ws.write("/lake/notes.md", "# Notes\n\ncurlew\n")
    proxy.failing = True
    try:
        with pytest.raises(StoreError) as written:
            await ws.write("/lake/notes.md", "# Notes\n\ncurlew pair\n")
        says(str(written.value), "/lake/notes.md", *SERVER_FAULT)
        with pytest.raises(StoreError) as read:
            await ws.read_text("/lake/notes.md")
        says(str(read.value), "/lake/notes.md", *SERVER_FAULT)
        # The hit cannot be checked against its object: left out, not shown unverified.
        assert (await ws.search("curlew", mode="bm25")).hits == ()
        assert proxy.failed > 2
    finally:
        proxy.failing = False
    assert _stored(endpoint, prefix, "notes.md") == b"# Notes\n\ncurlew\n"  # old content whole
    assert await ws.read_text("/lake/notes.md") == "# Notes\n\ncurlew\n"
    assert [h.path for h in (await ws.search("curlew", mode="bm25")).hits] == ["/lake/notes.md"]
    await ws.write("/lake/notes.md", "# Notes\n\ncurlew pair\n")
    assert await ws.read_text("/lake/notes.md") == "# Notes\n\ncurlew pair\n"
