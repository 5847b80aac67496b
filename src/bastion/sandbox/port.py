"""What the sandbox needs from the workspace and from a store, as protocols: the sandbox sits
beside the stores, below the workspace, and imports neither (``docs/architecture.md``).

:class:`SandboxWorkspace` is the handful of guarded calls a run makes as the principal (the
view is copied through ``list`` and ``read_bytes``, changes come back through ``write``,
``mkdir`` and ``delete``); ``bastion.workspace.Workspace`` satisfies it, and mypy checks that
where the workspace hands itself to :func:`~bastion.sandbox.runner.run_in_sandbox`.
:class:`HostFolder` is a store whose files are one host folder it holds a descriptor of
(``bastion.stores.local.LocalStore``), which a read-only mount may be bound from.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from bastion.core.models import FileInfo, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy

__all__ = ["HostFolder", "SandboxWorkspace"]


class SandboxWorkspace(Protocol):
    """The guarded workspace calls a sandbox run makes, as the workspace's principal."""

    @property
    def mounts(self) -> Sequence[Mount]: ...

    @property
    def policy(self) -> Policy: ...

    async def list(
        self, path: VPath | str = ..., *, recursive: bool = ...
    ) -> builtins.list[FileInfo]: ...

    async def read_bytes(
        self, path: VPath | str, *, start: int | None = ..., end: int | None = ...
    ) -> bytes: ...

    async def stat(self, path: VPath | str) -> FileInfo: ...

    async def write(
        self,
        path: VPath | str,
        content: bytes,
        *,
        mode: WriteMode = ...,
        if_version: str | None = ...,
    ) -> FileInfo: ...

    async def mkdir(self, path: VPath | str) -> None: ...

    async def delete(self, path: VPath | str) -> None: ...


@runtime_checkable
class HostFolder(Protocol):
    """A store that is one host folder, reached through a descriptor it keeps open."""

    @property
    def root_fd(self) -> int:
        """The store's descriptor of its root folder; the store owns it (never close it)."""
        ...
