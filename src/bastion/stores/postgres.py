"""A store in PostgreSQL: one database, many independent filesystems, many processes.

``PostgresStore(dsn, namespace="team-a")`` keeps directories and files in ``bastion_fs_*``
tables that it creates and migrates itself (``_pg_schema``; the schema version is recorded and
several processes may start at once). Files are stored in chunks, so a range read fetches only
the chunks that cover it and an append rewrites only the tail chunk. Each entry may carry
:class:`~bastion.core.models.Labels` and JSON metadata; the guard reads the labels from
``FileInfo.labels`` (``keeps_labels``).

Namespaces. One database holds any number of filesystems, each named by ``namespace``. Every
row carries its namespace's integer id and every query filters on it, so a namespace never
sees, lists, moves or deletes another's entries, whatever the names look like.

Many processes. Any number of processes (and threads, and event loops) may use one namespace
at once. Versions are a database-wide counter, so a version is never reused; a write with
``if_version`` locks the file's row, so of two writers that read the same version one wins
and the other gets :class:`ConflictError`: no update is lost. A write in one process is
visible to every other as soon as it returns.

Failure. Every call answers within ``timeout`` seconds: a server that hangs or is down gives
:class:`StoreUnavailableError` ("filesystem unresponsive"), and the store recovers by itself
when the server is back. Messages never contain the DSN. The machinery is in
``_pg_runtime``; the SQL in ``_pg_rows``, ``_pg_read`` and ``_pg_write``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Self

from psycopg.conninfo import conninfo_to_dict

from bastion.core.errors import ConfigurationError
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores import _pg_read as reads
from bastion.stores import _pg_write as writes
from bastion.stores._common import check_range
from bastion.stores._pg_rows import Conn, Entry
from bastion.stores._pg_runtime import PgRuntime

__all__ = ["DEFAULT_CHUNK_SIZE", "PostgresStore"]

DEFAULT_CHUNK_SIZE: Final = 256 * 1024
_MAX_CHUNK_SIZE: Final = 64 * 1024 * 1024


async def _fetch(
    conn: Conn, _ns: int, _created: float, *, row: Entry, offset: int, length: int | None
) -> bytes | None:
    return await reads.fetch(conn, row, offset, length)


class PostgresStore(Store):
    """Files and directories of one namespace in a PostgreSQL database (see the module doc).

    The pool is opened on first use; ``await store.close()`` (or ``async with``) closes it.
    """

    kind = "postgres"
    keeps_labels = True
    """Entries carry their own labels (``set_labels``); the guard checks them."""

    def __init__(
        self,
        dsn: str,
        *,
        namespace: str = "default",
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        pool_min: int = 1,
        pool_max: int = 8,
        timeout: float = 5.0,
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise ConfigurationError("PostgresStore needs a DSN such as postgresql://host/db")
        try:
            conninfo_to_dict(dsn)
        except Exception:  # noqa: BLE001 - its message may quote the DSN, password included
            raise ConfigurationError(
                "PostgresStore: the DSN cannot be parsed; use postgresql://user@host:5432/db "
                "or 'host=... dbname=...'"
            ) from None
        if not isinstance(namespace, str) or not namespace or "\x00" in namespace:
            raise ConfigurationError("PostgresStore: namespace must be a non-empty name")
        if not 1 <= chunk_size <= _MAX_CHUNK_SIZE:
            raise ConfigurationError(
                f"PostgresStore: chunk_size must be between 1 and {_MAX_CHUNK_SIZE} bytes"
            )
        if pool_min < 0 or pool_max < max(1, pool_min):
            raise ConfigurationError(
                "PostgresStore: need 0 <= pool_min <= pool_max and pool_max >= 1"
            )
        if not timeout > 0:
            raise ConfigurationError("PostgresStore: timeout must be a positive number of seconds")
        self.namespace = namespace
        self.chunk_size = chunk_size
        self.timeout = float(timeout)
        self._rt = PgRuntime(
            dsn, namespace=namespace, pool_min=pool_min, pool_max=pool_max, timeout=self.timeout
        )

    def describe(self) -> str:
        return f"postgres (namespace {self.namespace!r})"

    async def close(self) -> None:
        """Close the connection pool; the store cannot be used afterwards."""
        await self._rt.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        return await self._rt.run(
            path, lambda conn, ns, created: reads.stat(conn, ns, path, created)
        )

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        check_range(offset, length)
        _, data = await self._rt.run(
            path, lambda conn, ns, _: reads.read(conn, ns, path, offset, length)
        )
        return data

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        """One lookup, then ``check`` on the caller's side, then only the chunks of the range.

        ``check`` runs in the caller's thread and context, before any byte is fetched; the
        bytes are those of the very content it saw (a read that raced an overwrite looks the
        file up again, and checks again)."""
        check_range(offset, length)
        if check is None:
            return await self._rt.run(
                path, lambda conn, ns, _: reads.read(conn, ns, path, offset, length)
            )
        deadline = self._rt.deadline()
        for _ in range(reads.READ_ATTEMPTS):
            row = await self._rt.run(
                path, lambda conn, ns, _: reads.lookup_file(conn, ns, path), deadline=deadline
            )
            info = row.info()
            check(info)
            start, end = reads.span(row, offset, length)
            if start >= end:
                return info, b""
            data = await self._rt.run(
                path,
                functools.partial(_fetch, row=row, offset=offset, length=length),
                deadline=deadline,
            )
            if data is not None:
                return info, data
        raise reads.changed_during_read(path)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
        labels: Labels | None = None,
    ) -> FileInfo:
        """Write in one transaction. ``labels``, when given, are set in the same transaction,
        so the file is never visible with the mount's defaults in between; otherwise an
        existing file keeps its own labels."""
        payload = bytes(data)
        mode = WriteMode(mode)
        return await self._rt.run(
            path,
            lambda conn, ns, _: writes.write(
                conn, ns, path, payload, mode, if_version, self.chunk_size, labels
            ),
        )

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        await self._rt.run(path, lambda conn, ns, _: writes.delete(conn, ns, path, recursive))

    async def list(self, path: VPath) -> list[FileInfo]:
        return await self._rt.run(path, lambda conn, ns, _: reads.list_dir(conn, ns, path))

    async def mkdir(self, path: VPath) -> None:
        await self._rt.run(path, lambda conn, ns, _: writes.mkdir(conn, ns, path))

    async def rename(self, src: VPath, dst: VPath) -> None:
        await self._rt.run(src, lambda conn, ns, _: writes.rename(conn, ns, src, dst))

    # -- labels and metadata -----------------------------------------------------------------

    async def set_labels(self, path: VPath, labels: Labels | None) -> FileInfo:
        """Give an entry its own labels (``None``: the mount's defaults apply again). The
        version does not change: labels are not content."""
        return await self._rt.run(
            path, lambda conn, ns, _: writes.set_labels(conn, ns, path, labels)
        )

    async def metadata(self, path: VPath) -> dict[str, Any]:
        """An entry's metadata (JSON values by name; empty when it has none)."""
        return await self._rt.run(path, lambda conn, ns, _: reads.get_metadata(conn, ns, path))

    async def set_metadata(self, path: VPath, metadata: Mapping[str, Any]) -> FileInfo:
        """Replace an entry's metadata with ``metadata`` (JSON values); the version stays."""
        return await self._rt.run(
            path, lambda conn, ns, _: writes.set_metadata(conn, ns, path, metadata)
        )
