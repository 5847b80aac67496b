"""The label port: what the guard asks about a mount's document labels.

A document's labels are worked out by the labels part (:mod:`bastion.labels`: front matter, the
resolver, sidecars), which sets ``FileInfo.labels`` on every entry a store answers. The guard
decides on those labels; for the few questions an entry's labels do not answer (what a sidecar
change does to its file, what labels a file would have, which sidecar a copy needs) it asks
this port. A store implements none of it: a store knows nothing of labels.

The guard never imports the labels part; the workspace hands each mount's labeller to its
guard (``GuardedStore(..., labels=...)``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from bastion.core.models import FileInfo, Labels
from bastion.core.paths import VPath

__all__ = ["LabelPort", "Relabel"]


@dataclass(frozen=True, slots=True)
class Relabel:
    """What a change of a sidecar does to the file it describes."""

    target: VPath
    """The file the sidecar describes (it exists)."""
    before: Labels
    """Its labels now."""
    after: Labels
    """Its labels after the change."""
    tightens: bool
    """Whether ``after`` admits no one that ``before`` does not (only tightening)."""


class LabelPort(ABC):
    """A mount's document labels, as the guard asks for them. Paths are store paths."""

    @abstractmethod
    async def entries(self, path: VPath) -> list[FileInfo]:
        """The folder's entries without their labels worked out: a cheaper look into a
        folder, for a caller that stats only the entries it needs."""

    @abstractmethod
    async def relabelling(self, path: VPath, data: bytes | None) -> Relabel | None:
        """When ``path`` is the sidecar of an existing file: what a write of ``data`` there
        (``None``: the sidecar's removal) does to that file's labels; else ``None`` (the
        sidecar is then an ordinary file)."""

    @abstractmethod
    async def prospective(self, path: VPath, data: bytes) -> Labels:
        """The labels a file at ``path`` would have if it held ``data`` (its first
        :data:`~bastion.labels.frontmatter.LABEL_BYTES` bytes are enough), with the sidecar
        now beside it."""

    @abstractmethod
    async def carried(self, path: VPath, labels: Labels, head: bytes) -> bytes | None:
        """Before a file with ``labels`` (its first bytes ``head``) lands at ``path``: the
        sidecar to write there first so that it is no easier to read than it is now (the
        tightest of both), or ``None`` when none is needed. Raises
        :class:`~bastion.core.errors.LabelError` when no labels can hold both (two
        tenants)."""
