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
    │   ├── SandboxError            a command cannot be run in the sandbox (nothing ran)
    │   ├── RemoteError             a remote service (embedder, chat model) gave no usable reply
    │   │   ├── RemoteUnavailableError  429, 5xx, timeout or refused through every retry
    │   │   ├── RemoteRequestError      the service refused the request (not retried)
    │   │   └── RemoteResponseError     the reply was not valid
    │   └── StoreError              the backend failed (I/O error)
    │       ├── StoreUnavailableError   no answer within the mount's timeout, or down
    │       └── UncheckedWriteError     a condition the store cannot check across processes
    │                                   (if_version, create-only, append): nothing written
    └── ConfigurationError          developer-facing: invalid mounts, policy or options
        └── IndexMismatchError      an index folder built from other mounts or embedder

Every class carries a stable ``code`` (``not_found``, ``conflict``, ``policy_denied``...): the
one table that the command line's ``--json`` errors and the HTTP API's error bodies both read.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import ClassVar, Self

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "BastionError",
    "ConfigurationError",
    "ConflictError",
    "DirectoryNotEmptyError",
    "EditError",
    "IndexMismatchError",
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
    "RemoteError",
    "RemoteRequestError",
    "RemoteResponseError",
    "RemoteUnavailableError",
    "SandboxError",
    "ScopeError",
    "StoreError",
    "StoreUnavailableError",
    "UncheckedWriteError",
    "UnsupportedFileError",
]


class BastionError(Exception):
    """Root of every exception Bastion raises on purpose.

    An error carries what it is about as attributes: :attr:`path` (the path it names),
    :attr:`mount` (the prefix of the mount, once the workspace knows it) and :attr:`reason`
    (what is wrong, without the path). Its message is composed from them: either from the
    class's :attr:`template` (``NotFoundError(path=p)`` reads ``"{p} not found"``), or from a
    message given by the raiser that names ``path`` (``NotFoundError(f"parent directory {p}
    does not exist", path=p)``). Setting :attr:`path` re-renders the message: that is how a
    store's path becomes a workspace path at the guard, a field assignment.

    Its message is one line whatever a caller put into it: line breaks that arrive inside a
    quoted value (a path, a configuration entry) are shown escaped, so a log line or a CLI error
    cannot be split or forged by the input it reports.
    """

    code: ClassVar[str] = "error"
    template: ClassVar[str] = "{path}: {reason}"
    """How the message reads when the raiser gives ``path`` (and maybe ``reason``) but no
    message; ``{reason}`` defaults to :attr:`default_reason`."""
    default_reason: ClassVar[str] = "this cannot be done"
    remedy: tuple[str, object] | None = None
    """The parameter, and its value, that the message tells the caller to pass (its text
    holds ``pass NAME=VALUE`` as Python spells it): each front end says it in its own words
    (the command line names its flag) by this attribute, never by parsing the message."""
    mount: str | None
    """The prefix of the mount the error happened in (set by the guard), else ``None``."""
    reason: str | None
    """What is wrong, without the path (``"the SQLite store is closed"``), when the raiser
    said it apart; ``None`` otherwise."""

    def __init__(
        self,
        message: str | None = None,
        *,
        path: object = None,
        mount: str | None = None,
        reason: str | None = None,
    ) -> None:
        self._path = None if path is None else str(path)
        self.mount = mount
        self.reason = reason
        self._shape: tuple[str, str] | None = None
        if message is None:
            said = reason if reason is not None else self.default_reason
            if self._path is None:
                message = reason or ""
            else:
                before, _, after = self.template.partition("{path}")
                self._shape = (before.replace("{reason}", said), after.replace("{reason}", said))
        elif self._path is not None:
            before, found, after = message.partition(self._path)
            if found and not _bounded(before, after):  # inside a longer name: find it whole
                whole = re.search(f"{_BEFORE_PATH}{re.escape(self._path)}{_AFTER_PATH}", message)
                before, found, after = (
                    (message[: whole.start()], whole.group(), message[whole.end() :])
                    if whole is not None
                    else ("", "", "")
                )
            if found:
                self._shape = (before, after)
                if reason is None and not before and after.startswith(": "):
                    self.reason = after[2:]  # the shape of the template: "{path}: {reason}"
        super().__init__(self._render() if self._shape is not None else message)

    @property
    def path(self) -> str | None:
        """The path the message names (a store path inside a store, a workspace path once the
        guard has set it), or ``None`` for an error about no one path."""
        return self._path

    @path.setter
    def path(self, value: object) -> None:
        self._path = None if value is None else str(value)
        if self._shape is not None and self._path is not None:
            self.args = (self._render(),)

    @property
    def renders_path(self) -> bool:
        """Whether the message was composed around :attr:`path` (so setting it re-words the
        message); ``False`` for a plain message, as a third-party store may raise."""
        return self._shape is not None

    def _render(self) -> str:
        assert self._shape is not None
        return f"{self._shape[0]}{self._path}{self._shape[1]}"

    def needing(self, name: str, value: object) -> Self:
        """This error, with :attr:`remedy` set; its message says ``pass {name}={value!r}``."""
        self.remedy = (name, value)
        return self

    def __str__(self) -> str:
        text = super().__str__()
        if "\n" in text or "\r" in text:
            text = text.replace("\r", "\\r").replace("\n", "\\n")
        return text


class OperationError(BastionError):
    """A request that cannot be served; the message is meant for the agent."""

    code: ClassVar[str] = "operation_failed"


class SandboxError(OperationError):
    """The sandbox cannot run the command (bubblewrap missing or refused by the kernel, a view
    that cannot be built, no such background process); nothing was run, and nothing ever runs
    unsandboxed."""

    code: ClassVar[str] = "sandbox_failed"


class InvalidPathError(OperationError):
    """The path string is malformed or unsafe (NUL, traversal above '/', drive letter...)."""

    code: ClassVar[str] = "invalid_path"
    default_reason: ClassVar[str] = "this name cannot be used in this store"


class NotFoundError(OperationError):
    """No such file or directory, or one the caller may not see."""

    code: ClassVar[str] = "not_found"
    template: ClassVar[str] = "{path} {reason}"
    default_reason: ClassVar[str] = "not found"


class AlreadyExistsError(OperationError):
    """The target exists and the operation does not overwrite."""

    code: ClassVar[str] = "already_exists"
    template: ClassVar[str] = "{path} {reason}"
    default_reason: ClassVar[str] = "already exists"


class NotADirectoryError_(OperationError):
    """A path component or target is a file where a directory is needed."""

    code: ClassVar[str] = "not_a_directory"
    template: ClassVar[str] = "{path} {reason}"
    default_reason: ClassVar[str] = "is a file, not a directory"


class IsADirectoryError_(OperationError):
    """The target is a directory where a file is needed."""

    code: ClassVar[str] = "is_a_directory"
    template: ClassVar[str] = "{path} {reason}"
    default_reason: ClassVar[str] = "is a directory"


class DirectoryNotEmptyError(OperationError):
    """Delete of a non-empty directory without ``recursive=True``."""

    code: ClassVar[str] = "directory_not_empty"
    template: ClassVar[str] = "{path} {reason}"
    default_reason: ClassVar[str] = "is not empty"


class ConflictError(OperationError):
    """The file changed since the version the caller expected."""

    code: ClassVar[str] = "conflict"
    template: ClassVar[str] = "{path} {reason}"
    default_reason: ClassVar[str] = (
        "changed since the version you expected; read it again and retry"
    )


class EditError(OperationError):
    """The text to replace is absent, or present more than once without ``replace_all``."""

    code: ClassVar[str] = "edit_failed"


class AccessDeniedError(OperationError):
    """The guard refused the request."""

    code: ClassVar[str] = "access_denied"


class ScopeError(AccessDeniedError):
    """The mount's scope does not allow the action (e.g. a write to a read-only mount)."""

    code: ClassVar[str] = "scope_denied"


class PolicyDeniedError(AccessDeniedError):
    """A policy rule (or the default deny) refused the action."""

    code: ClassVar[str] = "policy_denied"


class LimitError(AccessDeniedError):
    """A file limit refused the request: size, extension or blocked path segment."""

    code: ClassVar[str] = "limit_exceeded"


class RateLimitError(OperationError):
    """The principal made too many requests in the rate-limit window."""

    code: ClassVar[str] = "rate_limited"


class NoMountError(NotFoundError):
    """The path lies under no mount; there is no fallback root.

    A kind of :class:`NotFoundError`: a mount the caller may not see at all (its labels do not
    admit the caller) is reported exactly like no mount, so the two must be caught alike.
    """


class LabelError(OperationError):
    """A write whose document labels could not be read back (front matter or a sidecar that
    is not valid YAML, too large, of the wrong shape): refused, since the file would vanish."""

    code: ClassVar[str] = "bad_labels"


class UnsupportedFileError(OperationError):
    """A symbolic link, FIFO, socket or device: Bastion never follows or opens these."""

    code: ClassVar[str] = "unsupported_file"
    default_reason: ClassVar[str] = (
        "a link or a special file is in the way; Bastion does not open it"
    )


class InvalidPatternError(OperationError):
    """A glob or regular expression that cannot be compiled."""

    code: ClassVar[str] = "invalid_pattern"


class StoreError(OperationError):
    """The storage backend failed; the message names the mount."""

    code: ClassVar[str] = "store_failed"
    default_reason: ClassVar[str] = (
        "the storage of this mount failed; try again later, and ask an operator if it persists"
    )


class StoreUnavailableError(StoreError):
    """The backend did not answer within the mount's timeout, or is down."""

    code: ClassVar[str] = "store_unavailable"
    default_reason: ClassVar[str] = "the storage of this mount did not answer; try again later"


class UncheckedWriteError(StoreError):
    """A conditional write (``if_version``, create-only, append) refused, before anything was
    written, by a store that cannot check the condition against other processes. Only this
    refusal may be answered by writing without the condition (a backup's write does); any
    other :class:`StoreError` (a full disk, a server error) leaves the condition standing."""


class RemoteError(OperationError):
    """A remote service (an embedder, a chat model, a reranker or judge) gave no usable reply.
    One family for every HTTP client of Bastion (``bastion.remote``); the message names the
    service and never holds an API key, a URL's user info or what was sent."""

    status: int | None
    """The HTTP status of the last reply, when there was one."""

    def __init__(
        self,
        message: str | None = None,
        *,
        status: int | None = None,
        path: object = None,
        mount: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, path=path, mount=mount, reason=reason)
        self.status = status


class RemoteUnavailableError(RemoteError):
    """The service stayed unavailable (429, 5xx, timeout, refused, a stream cut short) through
    every retry."""


class RemoteRequestError(RemoteError):
    """The service refused the request (401, 403, 404, 400...); retrying will not help."""


class RemoteResponseError(RemoteError):
    """The reply was not what was asked for (invalid JSON, no choices, a wrong count or
    dimension, a broken stream)."""


class ConfigurationError(BastionError):
    """A developer mistake: invalid mount table, policy, or options."""

    code: ClassVar[str] = "configuration"


class IndexMismatchError(ConfigurationError):
    """An index folder opened for other mounts or another embedder than it was built from
    (``bastion.knowledge.origin``). ``problem`` is the message without its fix: what differs
    (prefixes and embedder names, never a source)."""

    code: ClassVar[str] = "index_mismatch"

    def __init__(self, message: str, *, problem: str | None = None) -> None:
        super().__init__(message)
        self.problem = problem if problem is not None else message


_GENERIC: dict[type[OperationError], str] = {
    AlreadyExistsError: "{} already exists",
    IsADirectoryError_: "{} is a directory",
    NotADirectoryError_: "{}: a parent in the path is a file, not a directory",
    DirectoryNotEmptyError: "{} is not empty",
    ConflictError: "{} changed since the version you expected; read it again and retry",
    UnsupportedFileError: "{}: a link or a special file is in the way; Bastion does not open it",
    InvalidPathError: "{}: this name cannot be used in this store",
    NotFoundError: "{} not found",
    StoreUnavailableError: "{}: the storage of this mount did not answer; try again later",
}
_STORE_FAILED = (
    "{}: the storage of this mount failed; try again later, and ask an operator if it persists"
)
_BEFORE_PATH = r"(?:^|(?<=[\s('\"\[<{=,;:]))"
"""Where a path may start in a message: at its start, after a space, a bracket or a quote, an
equals sign, a comma, a semicolon or a colon (``file:///srv/x``, ``s3://bucket/key``,
``filename=/srv/x``: a host path or URL quoted by a foreign error is a path too)."""
_AFTER_PATH = r"(?=[\s:;,)\]}>'\"]|\.(?:\s|$)|$)"
"""What may follow a path in a message: a space, a colon, a semicolon, a comma, a bracket, a
quote, a full stop that ends a sentence, the end."""
_BOUNDED_BEFORE = re.compile(f"{_BEFORE_PATH}$")
_BOUNDED_AFTER = re.compile(_AFTER_PATH)


def _bounded(before: str, after: str) -> bool:
    """Whether a path found between ``before`` and ``after`` is a whole path, not the start
    of a longer name (``/a.md`` in ``/a.md.bak``) or the end of one."""
    return _BOUNDED_BEFORE.search(before) is not None and _BOUNDED_AFTER.match(after) is not None


_ANY_PATH = re.compile(f"{_BEFORE_PATH}(?<!mount )/|\\\\|(?<![A-Za-z])[A-Za-z]:\\\\")
"""The start of a path that no mapping named (``mount /x`` names a mount: a workspace path),
or of a Windows one (``C:\\``, ``\\\\server``)."""


def translated(
    exc: OperationError,
    path: object,
    full: object,
    *,
    also: Mapping[str, str] | None = None,
    mount: object = None,
) -> OperationError:
    """``exc``, raised by a store about ``path`` (its store path), told on the workspace side
    where the store's path is ``full`` (the guard calls it): a field assignment. An error
    composed around its :attr:`~BastionError.path` gets the workspace path of that path
    (``path`` itself, or one of ``also``: store path -> workspace path of the other paths of
    the call and the folders above that the caller may see) and ``mount``; its message is
    re-rendered, so the store's cause and advice are kept. One naming a path the edge does
    not know becomes the plain form of its type, naming ``full``.

    An error that carries no path (a third-party store's plain message, or one about no
    path) goes through :func:`reworded`, the fallback that finds paths in the text; so does
    one whose words around its path name another path (which may be hidden), as a safety
    net."""
    around = (*exc._shape, exc.reason or "") if exc._shape is not None else ()
    if exc._shape is None or any(_ANY_PATH.search(piece) for piece in around):
        # a plain message, or one naming another path around its own (or in a reason that
        # the message does not show, which the copy would keep): found in the text
        out = reworded(exc, path, full, also=also)
    else:
        names = {str(path): str(full), **(also or {})}
        shown = names.get(exc.path or "")
        if shown is None:
            out = type(exc)(_GENERIC.get(type(exc), _STORE_FAILED).format(full), path=full)
        else:
            out = copy.copy(exc)
            out.path = shown
    out.mount = None if mount is None else str(mount)
    return out


def reworded(
    exc: OperationError,
    path: object,
    full: object,
    *,
    also: Mapping[str, str] | None = None,
) -> OperationError:
    """``exc`` re-worded for the other side of an edge where store paths become workspace
    paths (adapters use it there): ``path`` (the store's path) becomes ``full``, and each path
    of ``also`` (store path -> workspace path: the other path of a move, the folders above)
    becomes its workspace path, wherever the message names it, so the store's cause and advice
    are kept. A message that names any other path (one the caller may not see, or one the
    edge does not know) becomes a plain one of the same type naming ``full``; one that names no
    path is told about ``full``."""
    names = {str(path): str(full), **(also or {})}
    known = "|".join(re.escape(shown) for shown in sorted(names, key=len, reverse=True))
    pattern = re.compile(f"{_BEFORE_PATH}(?:{known}){_AFTER_PATH}")
    text = str(exc)
    cls = type(exc)
    pieces: list[str] = []
    mapped = end = 0
    for match in pattern.finditer(text):
        pieces += [text[end : match.start()], names[match.group()]]
        end, mapped = match.end(), mapped + 1
    pieces.append(text[end:])
    if any(_ANY_PATH.search(piece) for piece in pieces[::2]):
        plain = _GENERIC.get(type(exc), _STORE_FAILED)
        return cls(plain.format(full), path=full)
    shown = "".join(pieces)
    out = cls(shown if mapped else f"{full}: {shown}", path=full)
    out.remedy = exc.remedy  # the advice is kept, so is what it names
    return out
