"""Sidecar rules: what is found at a file's sidecar, what a sidecar's labels do (tighten,
join, labels written back as a sidecar), and content refused because its labels could not be
read back.

Where sidecars are (their names) is :mod:`bastion.core.sidecars`: the guard decides on it.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from bastion.core.errors import (
    BastionError,
    InvalidPathError,
    LabelError,
    NotFoundError,
    UnsupportedFileError,
)
from bastion.core.models import NOBODY_ROLE, FileInfo, Labels
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.core.principal import Classifications
from bastion.core.sidecars import SIDECAR_SUFFIX, labelled_file_of, sidecar_of
from bastion.labels.frontmatter import HEAD_BYTES, LABEL_BYTES
from bastion.labels.resolve import resolve_labels

__all__ = [
    "NO_SIDECAR",
    "ODD",
    "Sidecar",
    "find_sidecar",
    "joined",
    "listed_sidecar",
    "odd_names_of",
    "refuse_unreadable",
    "refuse_unreadable_append",
    "sidecar_text",
    "tightens",
]

ODD = "is a folder, a link, a special file or a name in another normalization form"


class Sidecar:
    """What was found at a file's sidecar path."""

    __slots__ = ("cacheable", "info", "problem")

    def __init__(
        self, info: FileInfo | None = None, problem: str = "", *, cacheable: bool = True
    ) -> None:
        self.info = info
        self.problem = problem
        self.cacheable = cacheable

    def stamp(self) -> tuple[Any, ...]:
        info = self.info
        return (self.problem,) if info is None else (info.version, info.size, info.mtime)


NO_SIDECAR = Sidecar()


def listed_sidecar(
    path: VPath, siblings: dict[str, FileInfo], odd: frozenset[str]
) -> Sidecar | None:
    """The sidecar of ``path`` as its folder's listing shows it; ``None`` when it shows none
    under its exact name."""
    name = path.name + SIDECAR_SUFFIX  # not sidecar_of: an over-long name is no error here
    found = siblings.get(name)
    if found is not None:
        return Sidecar(found) if found.is_file else Sidecar(problem=ODD)
    if name in odd:
        return Sidecar(problem=ODD)
    return None


async def find_sidecar(store: Store, path: VPath) -> Sidecar:
    """What is at the sidecar path of the file ``path`` on ``store``."""
    try:
        where = sidecar_of(path)
        found = await store.stat(where)
    except InvalidPathError:
        return NO_SIDECAR  # a name no store can hold: no sidecar can be there
    except NotFoundError:
        if _spellings_differ(where.name) and where.name in await odd_names_of(store, path.parent):
            return Sidecar(problem=ODD)
        return NO_SIDECAR
    except UnsupportedFileError:
        return Sidecar(problem=ODD)
    except BastionError as exc:
        return Sidecar(problem=f"could not be read ({type(exc).__name__})", cacheable=False)
    return Sidecar(found) if found.is_file else Sidecar(problem=ODD)


async def odd_names_of(store: Store, folder: VPath) -> frozenset[str]:
    """The store's odd names in ``folder`` (``Store.odd_names``); none when it cannot say."""
    try:
        return await store.odd_names(folder)
    except BastionError:
        return frozenset()


def _spellings_differ(name: str) -> bool:
    """True when ``name`` (NFC) has another normalization form a store could hold."""
    return not name.isascii() and unicodedata.normalize("NFD", name) != name


def refuse_unreadable(base: Labels, order: Classifications, path: VPath, data: bytes) -> None:
    """Refuse content whose labels could not be read back: the file would vanish."""
    if labelled_file_of(path) is not None:
        labels = resolve_labels(base, order, sidecar=data, where=str(path))
    else:
        labels = resolve_labels(base, order, head=data[:LABEL_BYTES], where=str(path))
    if labels.undetermined:
        raise LabelError(
            f"{path}: labels could not be read ({labels.undetermined}); fix the metadata "
            "and write again"
        )


async def refuse_unreadable_append(
    store: Store, base: Labels, order: Classifications, path: VPath, data: bytes
) -> None:
    """An append that would leave the labels unreadable (bytes added inside an open front
    matter block or a sidecar) is refused like such a write: the file would vanish."""
    try:
        head = await store.read_range(path, 0, LABEL_BYTES)
    except NotFoundError:
        head = b""  # no file yet: the append is all of it
    if labelled_file_of(path) is None and len(head) > HEAD_BYTES:
        return  # the labels are in the first bytes, which an append does not touch
    refuse_unreadable(base, order, path, head + data)


def tightens(before: Labels, after: Labels, classifications: Classifications) -> bool:
    """True when ``after`` admits no one that ``before`` does not: classification not lower,
    roles not wider, the same tenant (or one where there was none), no tag removed."""
    if after.undetermined:
        return True
    if before.undetermined:
        return False
    if before.tenant is not None and after.tenant != before.tenant:
        return False
    order = classifications.order
    if before.classification != after.classification:
        if before.classification not in order:
            return False
        if after.classification in order and order.index(after.classification) < order.index(
            before.classification
        ):
            return False
    if before.roles and not (after.roles and after.roles - {NOBODY_ROLE} <= before.roles):
        return False
    return before.tags <= after.tags


def joined(a: Labels, b: Labels, classifications: Classifications) -> Labels:
    """Labels that admit only whom both ``a`` and ``b`` admit: the higher classification (an
    unknown one counts as the highest), the common roles, the one tenant, every tag. Raises
    :class:`LabelError` when the tenants differ (no document can belong to two)."""
    if a.tenant is not None and b.tenant is not None and a.tenant != b.tenant:
        raise LabelError(
            "a document of one tenant cannot take the labels of another; copy it within "
            "its tenant's mounts"
        )
    order = classifications.order

    def rank(level: str) -> int:
        return order.index(level) if level in order else len(order)

    level = (
        a.classification if rank(a.classification) >= rank(b.classification) else (b.classification)
    )
    if a.roles and b.roles:
        roles = (a.roles & b.roles) or frozenset({NOBODY_ROLE})
    else:
        roles = a.roles or b.roles
    return Labels(a.tenant or b.tenant, level, roles, a.tags | b.tags)


def sidecar_text(labels: Labels) -> bytes:
    """A sidecar that, read back by the label resolver, gives ``labels`` (JSON, which is
    YAML too)."""
    body: dict[str, object] = {"classification": labels.classification}
    if labels.tenant is not None:
        body["tenant"] = labels.tenant
    if labels.roles:
        body["roles"] = sorted(labels.roles)
    if labels.tags:
        body["tags"] = sorted(labels.tags)
    return (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode()
