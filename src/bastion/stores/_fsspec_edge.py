"""The edges of ``FsspecStore``: opening a filesystem from a URL, and foreign errors.

Both are where secrets could leak: a URL or options may carry keys, and a server's message
may name buckets and keys. Nothing here quotes either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bastion.core.errors import (
    ConfigurationError,
    OperationError,
    StoreError,
    StoreUnavailableError,
)
from bastion.core.paths import VPath
from bastion.stores._common import disk_fault
from bastion.stores._fsspec_s3 import error_code

__all__ = ["open_filesystem", "translate"]

_CREDENTIALS = frozenset(
    {
        "AccessDenied",
        "AllAccessDisabled",
        "ExpiredToken",
        "InvalidAccessKeyId",
        "InvalidToken",
        "SignatureDoesNotMatch",
        "403",
    }
)
_UNREACHABLE = frozenset(
    {
        "ClientConnectionError",
        "ClientConnectorError",
        "ConnectTimeoutError",
        "ConnectionClosedError",
        "EndpointConnectionError",
        "FSTimeoutError",
        "HTTPClientError",
        "ReadTimeoutError",
        "ServerDisconnectedError",
    }
)

_SERVER_FAULTS = frozenset({"InternalError", "ServiceUnavailable", "SlowDown"})
"""S3 error codes of a server fault (HTTP 5xx), which only the server's side can end."""


def translate(exc: BaseException, path: VPath) -> OperationError:
    """A foreign error as Bastion's, naming ``path`` and never quoting the server."""
    code = error_code(exc)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if code == "NoSuchBucket":
        return StoreError(
            f"{path}: the bucket of this mount does not exist; "
            "ask an administrator to create it or to fix the mount's URL",
            path=path,
        )
    if isinstance(exc, OSError):  # a filesystem on a disk (file://, sftp...): full, read-only
        fault = disk_fault(exc.errno, path, permissions=False)
        if fault is not None:
            return fault
    if code in _CREDENTIALS or isinstance(exc, PermissionError) or "NoCredentialsError" in names:
        return StoreError(
            f"{path}: the object store refused this mount's credentials or permissions; "
            "ask an administrator to check them",
            path=path,
        )
    if names & _UNREACHABLE or isinstance(exc, ConnectionError | TimeoutError):
        return StoreUnavailableError(
            f"{path}: the object store of this mount is unreachable; try again later",
            path=path,
        )
    detail = f" ({code})" if code and code.isalnum() else ""
    if code in _SERVER_FAULTS or (code is not None and code.isdigit() and code.startswith("5")):
        return StoreError(
            f"{path}: the object store of this mount answered with a server error{detail} "
            "even after retries; try again later, and ask an operator if it persists",
            path=path,
        )
    return StoreError(path=path, reason=f"the object store failed{detail}; try again later")


def open_filesystem(
    url_or_fs: Any, root: str | None, options: Mapping[str, Any]
) -> tuple[Any, str]:
    if not isinstance(url_or_fs, str):
        if options:
            raise ConfigurationError(
                "FsspecStore: storage_options apply to a URL, not to a filesystem"
            )
        return url_or_fs, root or ""
    import fsspec.core  # type: ignore[import-untyped]

    try:
        fs, path = fsspec.core.url_to_fs(url_or_fs, skip_instance_cache=True, **options)
    except (ImportError, ValueError, TypeError) as exc:
        scheme = url_or_fs.partition("://")[0] if "://" in url_or_fs else "(none)"
        why = "its package is not installed" if isinstance(exc, ImportError) else "bad options"
        raise ConfigurationError(
            f"FsspecStore: cannot open a {scheme!r} URL ({why}); check the URL and its options"
        ) from None
    return fs, path if root is None else root
