"""The ``[journal]`` table of a workspace file: where the change journal lives and what it
keeps (docs/changes.md)::

    [journal]
    path = ".bastion/journal.db"   # relative to the workspace file; shared by every process
    # or the database every process (on any machine) reaches, e.g. the server's shared_state:
    # path = "postgresql://user@host/db"
    max_age_days = 30              # changes older than this are dropped
    max_mb = 1024                  # the oldest changes go when the contents pass this
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.workspace.journal.db import Journal, Retention
from bastion.workspace.journal.postgres import PgJournal, is_postgres_url

__all__ = ["JournalSettings", "open_journal"]

_KEYS = frozenset({"path", "max_age_days", "max_mb"})


@dataclass(frozen=True, slots=True)
class JournalSettings:
    path: Path | str
    """A file, or a ``postgresql://`` URL (:class:`PgJournal`)."""
    retention: Retention

    @classmethod
    def parse(cls, raw: object, folder: Path) -> JournalSettings | None:
        """The checked table (``None`` when the file has none)."""
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise ConfigurationError('journal: must be a table, e.g. [journal] path = "..."')
        unknown = set(raw) - _KEYS
        if unknown:
            raise ConfigurationError(
                f"journal: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(_KEYS))}"
            )
        path = raw.get("path", ".bastion/journal.db")
        if not isinstance(path, str) or not path.strip():
            raise ConfigurationError("journal.path: must be a file name or a postgresql:// URL")
        age, size = _positive(raw, "max_age_days"), _positive(raw, "max_mb")
        return cls(
            path if is_postgres_url(path) else folder / Path(path).expanduser(),
            Retention(
                max_age=None if age is None else age * 86400.0,
                max_bytes=None if size is None else int(size * (1 << 20)),
            ),
        )

    def open(self) -> Journal:
        if isinstance(self.path, str):
            return PgJournal(self.path, self.retention)
        return Journal(self.path, self.retention)


def _positive(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(f"journal.{key}: must be a positive number")
    return float(value)


def open_journal(raw: object, folder: Path) -> Journal | None:
    """The journal a workspace file's ``[journal]`` table describes (``None`` without one)."""
    settings = JournalSettings.parse(raw, folder)
    return None if settings is None else settings.open()
