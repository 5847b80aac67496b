"""Bastion's exceptions: one root, two families.

Agent-facing errors describe something the caller asked for that cannot be done; their message
is one line that says what failed and what to do next, and never contains protected content.
Developer errors describe a misconfigured workspace (a bad mount table, an invalid policy file)
and are raised while building things, not while serving requests.

    BastionError
    ├── OperationError              agent-facing: the request cannot be served
    │   ├── InvalidPathError        the path string is malformed or unsafe
    │   ├── NotFoundError           no such entry (also: an entry the caller may not see)
    │   │   └── NoMountError        the path lies under no mount (or only under hidden ones)
    │   ├── AlreadyExistsError      create or move onto an existing entry
    │   ├── NotADirectoryError_     a file where a directory was needed
    │   ├── IsADirectoryError_      a directory where a file was needed
    │   ├── DirectoryNotEmptyError  delete of a non-empty directory without recursive=True
    │   ├── ConflictError           expected version did not match (stale writer)
    │   ├── EditError               edit target string absent or ambiguous
    │   ├── AccessDeniedError       refused by the guard
    │   │   ├── ScopeError          the mount's scope forbids the action (read-only, ...)
    │   │   ├── PolicyDeniedError   a policy rule refused the action
    │   │   └── LimitError          a file limit: size, extension, blocked segment
    │   ├── RateLimitError          too many requests in the window
    │   ├── UnsupportedFileError    a link, FIFO, socket or device: never followed or opened
    │   ├── LabelError              labels that cannot be read (broken front matter or sidecar)
    │   ├── InvalidPatternError     a glob or regular expression that cannot be compiled
    │   └── StoreError              the backend failed (I/O error)
    │       └── StoreUnavailableError   no answer within the mount's timeout, or down
    └── ConfigurationError          developer-facing: invalid mounts, policy or options
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "BastionError",
    "ConfigurationError",
    "ConflictError",
    "DirectoryNotEmptyError",
    "EditError",
    "InvalidPathError",
    "InvalidPatternError",
    "IsADirectoryError_",
    "LabelError",
    "LimitError",
    "NoMountError",
    "NotADirectoryError_",
    "NotFoundError",
    "OperationError",
    "PolicyDeniedError",
    "RateLimitError",
    "ScopeError",
    "StoreError",
    "StoreUnavailableError",
    "UnsupportedFileError",
]


class BastionError(Exception):
    """Root of every exception Bastion raises on purpose."""


class OperationError(BastionError):
    """A request that cannot be served; the message is meant for the agent."""


class InvalidPathError(OperationError):
    """The path string is malformed or unsafe (NUL, traversal above '/', drive letter...)."""


class NotFoundError(OperationError):
    """No such file or directory, or one the caller may not see."""


class AlreadyExistsError(OperationError):
    """The target exists and the operation does not overwrite."""


class NotADirectoryError_(OperationError):
    """A path component or target is a file where a directory is needed."""


class IsADirectoryError_(OperationError):
    """The target is a directory where a file is needed."""


class DirectoryNotEmptyError(OperationError):
    """Delete of a non-empty directory without ``recursive=True``."""


class ConflictError(OperationError):
    """The file changed since the version the caller expected."""


class EditError(OperationError):
    """The text to replace is absent, or present more than once without ``replace_all``."""


class AccessDeniedError(OperationError):
    """The guard refused the request."""


class ScopeError(AccessDeniedError):
    """The mount's scope does not allow the action (e.g. a write to a read-only mount)."""


class PolicyDeniedError(AccessDeniedError):
    """A policy rule (or the default deny) refused the action."""


class LimitError(AccessDeniedError):
    """A file limit refused the request: size, extension or blocked path segment."""


class RateLimitError(OperationError):
    """The principal made too many requests in the rate-limit window."""


class NoMountError(NotFoundError):
    """The path lies under no mount; there is no fallback root.

    A kind of :class:`NotFoundError`: a mount the caller may not see at all (its labels do not
    admit the caller) is reported exactly like no mount, so the two must be caught alike.
    """


class LabelError(OperationError):
    """A write whose document labels could not be read back (front matter or a sidecar that
    is not valid YAML, too large, of the wrong shape): refused, since the file would vanish."""


class UnsupportedFileError(OperationError):
    """A symbolic link, FIFO, socket or device: Bastion never follows or opens these."""


class InvalidPatternError(OperationError):
    """A glob or regular expression that cannot be compiled."""


class StoreError(OperationError):
    """The storage backend failed; the message names the mount."""


class StoreUnavailableError(StoreError):
    """The backend did not answer within the mount's timeout, or is down."""


class ConfigurationError(BastionError):
    """A developer mistake: invalid mount table, policy, or options."""


_AFTER_PATH = frozenset(" :;,")
_GENERIC: dict[type[OperationError], str] = {
    AlreadyExistsError: "{} already exists",
    IsADirectoryError_: "{} is a directory",
    NotADirectoryError_: "{}: a parent in the path is a file, not a directory",
    DirectoryNotEmptyError: "{} is not empty",
    ConflictError: "{} changed since the version you expected; read it again and retry",
    UnsupportedFileError: "{}: a link or a special file is in the way; Bastion does not open it",
    InvalidPathError: "{}: this name cannot be used in this store",
}


def reworded(exc: OperationError, path: object, full: object) -> OperationError:
    """``exc`` re-worded to name ``full`` (a workspace path) instead of ``path`` (the store's
    path): the store's sentence when it starts with its path, else a plain one of the same type.
    Adapters use it at the edge where one kind of path becomes the other."""
    text, shown = str(exc), str(path)
    cls: Callable[[str], OperationError] = type(exc)
    if text.startswith(shown) and text[len(shown) : len(shown) + 1] in _AFTER_PATH | {""}:
        return cls(f"{full}{text[len(shown) :]}")
    if isinstance(exc, StoreUnavailableError):  # names the mount, never a store path
        return cls(f"{full}: {text}")
    return cls(_GENERIC.get(type(exc), "{}: the storage backend failed; retry").format(full))
