"""Sidecars: ``X.labels.yaml`` holds labels of the file ``X`` beside it.

Pure path and label functions the guard and the workspace share. A sidecar is governed as what
it is: labels of another file. Reading it is allowed to whoever may see ``X``; writing, moving or
deleting it relabels ``X`` (see :class:`~bastion.core.guard.GuardedStore`), which needs write
access to ``X``, and the ``label`` permission unless the change only tightens ``X``'s labels.
"""

from __future__ import annotations

import json

from bastion.core.errors import InvalidPathError, LabelError
from bastion.core.models import NOBODY_ROLE, Labels
from bastion.core.paths import VPath
from bastion.core.principal import Classifications

__all__ = [
    "SIDECAR_SUFFIX",
    "in_other_case",
    "joined",
    "labelled_file_of",
    "sidecar_of",
    "sidecar_text",
    "tightens",
]

SIDECAR_SUFFIX = ".labels.yaml"
_SUFFIX_LEN = len(SIDECAR_SUFFIX)


def labelled_file_of(path: VPath) -> VPath | None:
    """The file a sidecar path describes (``a.pdf.labels.yaml`` -> ``a.pdf``), else ``None``.

    The suffix is matched in any case (``a.pdf.LABELS.YAML``, a long s for the s): on a store
    that folds case (a local folder on a case-insensitive disk) that name *is* the sidecar, so
    it is governed as one everywhere (a stricter rule where case matters). A name that cannot
    be mapped to one file name of the same folder (``...labels.yaml``, ``C:.labels.yaml``,
    ``.labels.yaml``) is no sidecar: an ordinary file.
    """
    name = path.name
    if path.is_root:
        return None
    if name.endswith(SIDECAR_SUFFIX):
        target = name[:-_SUFFIX_LEN]
    elif _folds_to_suffix(name):
        target = _folded_stem(name)
    else:
        return None
    if not target:
        return None
    try:
        parsed = VPath.parse("/" + target)
    except InvalidPathError:
        return None
    if parsed.parts != (target,):
        return None
    return path.parent.child(target)


def in_other_case(name: str) -> bool:
    """Whether ``name`` is a sidecar's name only once case-folded (``a.md.LABELS.YAML``)."""
    return not name.endswith(SIDECAR_SUFFIX) and _folds_to_suffix(name)


def _folds_to_suffix(name: str) -> bool:
    """Whether ``name`` ends, case-folded, with the sidecar suffix. Case folding works
    character by character and folds ASCII to its lower case in place, so a name whose last
    characters are ASCII is told by lowering them alone (no fold of the whole name)."""
    tail = name[-_SUFFIX_LEN:]
    if tail.isascii():
        return tail.lower() == SIDECAR_SUFFIX
    return name.casefold().endswith(SIDECAR_SUFFIX)


def _folded_stem(name: str) -> str:
    """``name`` without the end that case-folds to the sidecar suffix (``""``: none)."""
    for cut in range(len(name) - 1, -1, -1):
        if name[cut:].casefold() == SIDECAR_SUFFIX:
            return name[:cut]
    return ""


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
