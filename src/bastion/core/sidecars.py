"""Sidecars: ``X.labels.yaml`` holds labels of the file ``X`` beside it.

Pure path and label functions the guard and the workspace share. A sidecar is governed as what
it is: labels of another file. Reading it is allowed to whoever may see ``X``; writing, moving or
deleting it relabels ``X`` (see :class:`~bastion.core.guard.GuardedStore`), which needs write
access to ``X``, and the ``label`` permission unless the change only tightens ``X``'s labels.
"""

from __future__ import annotations

from bastion.core.errors import InvalidPathError
from bastion.core.models import NOBODY_ROLE, Labels
from bastion.core.paths import VPath
from bastion.core.principal import Classifications

__all__ = ["SIDECAR_SUFFIX", "labelled_file_of", "sidecar_of", "tightens"]

SIDECAR_SUFFIX = ".labels.yaml"


def labelled_file_of(path: VPath) -> VPath | None:
    """The file a sidecar path describes (``a.pdf.labels.yaml`` -> ``a.pdf``), else ``None``.

    A name that cannot be mapped to one file name of the same folder (``...labels.yaml``,
    ``C:.labels.yaml``, ``.labels.yaml``) is no sidecar: an ordinary file.
    """
    name = path.name
    if not name.endswith(SIDECAR_SUFFIX) or path.is_root:
        return None
    target = name[: -len(SIDECAR_SUFFIX)]
    if not target:
        return None
    try:
        parsed = VPath.parse("/" + target)
    except InvalidPathError:
        return None
    if parsed.parts != (target,):
        return None
    return path.parent.child(target)


def sidecar_of(path: VPath) -> VPath:
    """Where the sidecar of ``path`` lives."""
    return path.parent.child(path.name + SIDECAR_SUFFIX)


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
