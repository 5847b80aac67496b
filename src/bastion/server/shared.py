"""What every server process of one workspace shares besides the workspace: revoked tokens,
local accounts (:mod:`bastion.server.accounts`) and the key their session cookies are signed
with.

One SQLite file (several processes on one machine) or one PostgreSQL database (several
machines) holds the table; ``bastion token revoke`` writes it, every server process reads it
(:class:`~bastion.server.revocations.Revocations`, at most every half second).

A token is revoked by its id (its ``jti`` claim), or every token of a subject issued up to
the moment of the revocation (its ``iat``; a token without ``iat`` of a revoked subject is
refused whenever it was issued, failing closed).

```toml
[server]
shared_state = ".bastion/server.db"   # the default; or "postgresql://user@host/db"
```
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bastion.core.errors import OperationError

__all__ = ["Revoked", "SharedState"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bastion_revoked_tokens ("
    " jti TEXT PRIMARY KEY, revoked_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bastion_revoked_subjects ("
    " subject TEXT PRIMARY KEY, revoked_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bastion_accounts ("
    " name TEXT PRIMARY KEY, hash TEXT NOT NULL, disabled INTEGER NOT NULL,"
    " changed_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bastion_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


@dataclass(frozen=True)
class Revoked:
    """What is revoked, read at one moment."""

    tokens: frozenset[str] = frozenset()
    """Revoked token ids (``jti``)."""
    subjects: dict[str, float] = field(default_factory=dict)
    """Subject -> the time of its revocation: its tokens issued up to then are refused."""

    def refuses(self, claims: dict[str, Any] | Any) -> str:
        """Why the token with these (verified) claims is revoked; ``""`` when it is not."""
        jti = claims.get("jti")
        if isinstance(jti, str) and jti in self.tokens:
            return "token"
        sub = claims.get("sub")
        if isinstance(sub, str) and sub in self.subjects:
            issued = claims.get("iat")
            if not isinstance(issued, int | float) or isinstance(issued, bool):
                return "subject"
            if issued <= self.subjects[sub]:
                return "subject"
        return ""


class SharedState:
    """The shared tables over one database (SQLite file or PostgreSQL URL)."""

    def __init__(self, where: str, *, base: Path | None = None) -> None:
        self.where = where
        self._postgres = where.startswith(("postgresql://", "postgres://"))
        if self._postgres:
            self._path: Path | None = None
        else:
            path = Path(where).expanduser()
            self._path = path if path.is_absolute() or base is None else base / path
        self._ready = False

    def describe(self) -> str:
        return "PostgreSQL" if self._postgres else str(self._path)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Any]:
        if self._postgres:
            import psycopg

            try:
                with psycopg.connect(self.where, connect_timeout=5) as pg:
                    yield pg
            except psycopg.Error as exc:
                raise OperationError(
                    f"shared state (PostgreSQL) failed: {type(exc).__name__}"
                ) from None
            return
        assert self._path is not None
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self._path, timeout=10)
        except (OSError, sqlite3.Error) as exc:
            raise OperationError(f"shared state {self._path} cannot be opened: {exc}") from None
        try:
            with conn:
                yield conn
        except sqlite3.Error as exc:
            raise OperationError(f"shared state {self._path} failed: {exc}") from None
        finally:
            conn.close()

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self._postgres else text

    def execute(self, text: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (tables made on first use); its rows."""
        with self._connect() as conn:
            if not self._ready:
                for statement in self.schema():
                    conn.execute(statement)
                self._ready = True
            cursor = conn.execute(self._sql(text), tuple(args))
            rows = cursor.fetchall() if cursor.description is not None else []
            return [tuple(r) for r in rows]

    def schema(self) -> tuple[str, ...]:
        return _SCHEMA

    # -- revocations -------------------------------------------------------------------------

    def revoke_token(self, jti: str) -> None:
        self.execute(
            "INSERT INTO bastion_revoked_tokens (jti, revoked_at) VALUES (?, ?) "
            "ON CONFLICT (jti) DO NOTHING",
            (jti, time.time()),
        )

    def revoke_subject(self, subject: str) -> None:
        self.execute(
            "INSERT INTO bastion_revoked_subjects (subject, revoked_at) VALUES (?, ?) "
            "ON CONFLICT (subject) DO UPDATE SET revoked_at = excluded.revoked_at",
            (subject, time.time()),
        )

    def revoked(self) -> Revoked:
        tokens = self.execute("SELECT jti FROM bastion_revoked_tokens")
        subjects = self.execute("SELECT subject, revoked_at FROM bastion_revoked_subjects")
        return Revoked(frozenset(r[0] for r in tokens), {r[0]: float(r[1]) for r in subjects})
