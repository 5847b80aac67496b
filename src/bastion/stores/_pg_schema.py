"""The PostgreSQL store's schema: created and migrated by the store itself, versioned.

All tables are named ``bastion_fs_*`` so the store can share a database with other things
(the PostgreSQL index, the application's own tables). ``bastion_fs_schema`` records the schema
version; :func:`migrate` brings a database up to :data:`SCHEMA_VERSION` by applying the missing
steps of :data:`MIGRATIONS` in one transaction, under a transaction-scoped advisory lock, so
several processes that start at once against a fresh database apply each step exactly once
(the others wait for the lock, then find nothing left to do). A database whose schema is newer
than this code refuses to be used rather than being written in a format it does not know.

The model, per namespace (one independent filesystem; a database holds many):

* ``bastion_fs_namespaces``: one row per namespace name, with an integer id. Every entry row
  carries that id, and every query filters on it: names are never matched by prefix or
  pattern, so no namespace can see another's entries.
* ``bastion_fs_entries``: one row per file or directory, keyed by ``(ns, path)``. ``path`` is
  the absolute store path (``/a/b.txt``) in the ``C`` collation, so a subtree is one range of
  the primary key (``'/a/' <= path < '/a0'``); ``parent`` indexes listings. Files carry their
  size, version (a counter from ``bastion_fs_versions``), the id of their content and the
  chunk size it was written with; every entry may carry labels and metadata (JSON).
* ``bastion_fs_chunks``: the content, in chunks of ``chunk_size`` bytes keyed by
  ``(content, idx)``, stored uncompressed out of line so that a range read fetches only the
  chunks (and, inside them, only the slices) it covers. An overwrite writes a new content id;
  an append rewrites only the tail chunk of the same content in place.
"""

from __future__ import annotations

from typing import Final, LiteralString

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from bastion.core.errors import ConfigurationError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

_MIGRATION_LOCK: Final = 0x62617374696F6E  # "bastion": one advisory key for schema changes

MIGRATIONS: Final[tuple[tuple[LiteralString, ...], ...]] = (
    # 1: namespaces, entries, chunks, one sequence for versions and content ids.
    (
        "CREATE SEQUENCE bastion_fs_versions",
        """CREATE TABLE bastion_fs_namespaces (
            id serial PRIMARY KEY,
            name text NOT NULL UNIQUE,
            created double precision NOT NULL
        )""",
        """CREATE TABLE bastion_fs_entries (
            ns integer NOT NULL REFERENCES bastion_fs_namespaces (id) ON DELETE CASCADE,
            path text COLLATE "C" NOT NULL,
            parent text COLLATE "C" NOT NULL,
            is_dir boolean NOT NULL,
            size bigint NOT NULL DEFAULT 0,
            mtime double precision NOT NULL,
            version bigint,
            content bigint,
            chunk_size integer,
            labels jsonb,
            metadata jsonb,
            PRIMARY KEY (ns, path),
            CHECK (is_dir = (content IS NULL)),
            CHECK (is_dir OR (version IS NOT NULL AND chunk_size > 0))
        )""",
        "CREATE INDEX bastion_fs_entries_parent ON bastion_fs_entries (ns, parent)",
        """CREATE TABLE bastion_fs_chunks (
            content bigint NOT NULL,
            idx integer NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (content, idx)
        )""",
        "ALTER TABLE bastion_fs_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
    ),
)
"""Step ``n`` (1-based) takes a database from schema version ``n - 1`` to ``n``. Append new
steps; never edit a released one."""

SCHEMA_VERSION: Final = len(MIGRATIONS)


async def migrate(conn: AsyncConnection[TupleRow]) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; return the version found before.

    ``conn`` must be in autocommit mode (no transaction open); the work is one transaction.
    An up-to-date database is only read, so a role without the right to create tables can
    use one that an administrator (or a first start with more rights) created.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (_MIGRATION_LOCK,))
        cur = await conn.execute("SELECT to_regclass('bastion_fs_schema') IS NOT NULL")
        if not (await cur.fetchone() or (False,))[0]:
            # Created only when missing: a role that may not create tables can still use a
            # database that is up to date.
            await conn.execute(
                """CREATE TABLE bastion_fs_schema (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    version integer NOT NULL
                )"""
            )
        row = await (await conn.execute("SELECT version FROM bastion_fs_schema")).fetchone()
        found = 0 if row is None else int(row[0])
        if found > SCHEMA_VERSION:
            raise ConfigurationError(
                f"the database holds Bastion filesystem schema version {found}, newer than "
                f"this Bastion knows ({SCHEMA_VERSION}); upgrade Bastion"
            )
        for step in MIGRATIONS[found:]:
            for statement in step:
                await conn.execute(statement)
        if found != SCHEMA_VERSION:
            await conn.execute(
                "INSERT INTO bastion_fs_schema (version) VALUES (%s) "
                "ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version",
                (SCHEMA_VERSION,),
            )
        return found
