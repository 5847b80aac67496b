"""A real S3 API for tests: moto's server on loopback, with fake credentials.

``moto_endpoint()`` starts ``ThreadedMotoServer`` on 127.0.0.1 (a free port) and yields its
URL; ``FAKE_AWS`` is the environment that keeps botocore away from real credentials and the
instance metadata service. Used by ``test_registry`` and ``test_workspace_config`` (the
contract suite in ``tests/contract/test_fsspec_store.py`` starts its own).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["FAKE_AWS", "make_bucket", "moto_endpoint", "s3_client"]

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
}


@contextmanager
def moto_endpoint() -> Iterator[str]:
    """Start moto's S3 server on loopback and yield its URL; stop it afterwards."""
    import pytest
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in FAKE_AWS.items():
            patch.setenv(name, value)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield f"http://{host}:{port}"
        finally:
            server.stop()


def s3_client(endpoint: str) -> Any:
    """A boto3 S3 client of the server at ``endpoint``, with the fake credentials."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


def make_bucket(endpoint: str, name: str) -> Any:
    """Create bucket ``name`` on the server at ``endpoint``; return the boto3 client."""
    client = s3_client(endpoint)
    client.create_bucket(Bucket=name)
    return client
