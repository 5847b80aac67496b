"""Small records shared by every layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from bastion.core.paths import VPath

__all__ = [
    "DEFAULT_CLASSIFICATIONS",
    "FILE_ACTIONS",
    "Action",
    "EntryKind",
    "FileInfo",
    "Labels",
    "Scope",
    "WriteMode",
]

DEFAULT_CLASSIFICATIONS: tuple[str, ...] = ("public", "internal", "confidential", "restricted")


class Action(StrEnum):
    """What a request does, as policy rules name it."""

    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    LIST = "list"
    SEARCH = "search"
    # Operator actions: never granted by ``*``, a rule must name them (default deny).
    EXECUTE = "execute"
    """Run commands in the sandbox with this folder as the working directory
    (``Workspace.run``); what they change still needs ``write``/``delete``."""
    LABEL = "label"
    """Relabel a file: write, move or delete its ``<name>.labels.yaml`` sidecar in any
    direction (without it a sidecar may only tighten the file's labels)."""
    REINDEX = "reindex"
    """Rebuild or repair the shared knowledge index (``rebuild_index``, ``reindex``)."""
    AUDIT = "audit"
    """Read every principal's audit records (without it a view reads its own only)."""

    @property
    def operator(self) -> bool:
        """True for actions that ``*`` in a rule does not grant."""
        return self in _OPERATOR_ACTIONS


_OPERATOR_ACTIONS = frozenset({Action.EXECUTE, Action.LABEL, Action.REINDEX, Action.AUDIT})
FILE_ACTIONS = frozenset(a for a in Action if a not in _OPERATOR_ACTIONS)
"""The actions ``*`` stands for in a rule: everything but the operator actions."""


class Scope(StrEnum):
    """What a mount allows, whoever asks."""

    READ_ONLY = "read_only"
    READ_WRITE = "read_write"
    WRITE_ONLY = "write_only"

    def allows(self, action: Action) -> bool:
        if self is Scope.READ_WRITE:
            return True
        if self is Scope.READ_ONLY:
            return action in (Action.READ, Action.LIST, Action.SEARCH, Action.EXECUTE)
        return action is Action.WRITE

    def describe(self) -> str:
        return {
            Scope.READ_ONLY: "read-only: read, list, search",
            Scope.READ_WRITE: "read-write: read, list, search, write, edit, delete",
            Scope.WRITE_ONLY: "write-only: create and overwrite files; no reading or listing",
        }[self]


class EntryKind(StrEnum):
    FILE = "file"
    DIRECTORY = "directory"


class WriteMode(StrEnum):
    """How a write treats an existing file."""

    CREATE = "create"  # fail if the file exists
    OVERWRITE = "overwrite"  # replace (or create)
    APPEND = "append"  # add to the end (or create)


NOBODY_ROLE = "\x00nobody"
"""The role list of a document whose role lists left no role in common: no principal holds it."""


@dataclass(frozen=True, slots=True)
class Labels:
    """Access labels of a document. Empty ``roles`` means every role may read it."""

    tenant: str | None = None
    """Owning tenant; ``None`` means the document is not tenant-bound."""
    classification: str = "public"
    """One of the policy's ordered classifications."""
    roles: frozenset[str] = frozenset()
    """Roles allowed to read; empty means all roles."""
    tags: frozenset[str] = frozenset()
    """Free-form tags carried into the index."""
    undetermined: str = ""
    """Why the labels could not be worked out (metadata unreadable, too large, undecodable, a
    sidecar that is not a plain file...); labels with a reason here admit nobody."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What a store knows of one entry. ``path`` is relative to the store (or the workspace,
    once the workspace has translated it)."""

    path: VPath
    kind: EntryKind
    size: int = 0
    mtime: float = 0.0
    version: str | None = None
    """Opaque version tag (etag); changes whenever the content changes."""
    labels: Labels | None = field(default=None, compare=False)
    """Per-document labels when the store keeps them; ``None`` uses the mount's defaults."""
    changed_ns: int | None = field(default=None, compare=False, repr=False)
    """When the store's clock stamped the change that made this version (a local file's
    status change time, ns since the epoch), where the version is read off a clock; ``None``
    where versions are counters. Two changes within one tick of that clock share a version,
    so bytes read near this time may not be all the version names (``bastion.labels``)."""

    @property
    def is_dir(self) -> bool:
        return self.kind is EntryKind.DIRECTORY

    @property
    def is_file(self) -> bool:
        return self.kind is EntryKind.FILE

    def at(self, path: VPath) -> FileInfo:
        """The same entry seen at another path (store path to workspace path)."""
        return FileInfo(
            path, self.kind, self.size, self.mtime, self.version, self.labels, self.changed_ns
        )
