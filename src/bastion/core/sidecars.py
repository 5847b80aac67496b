"""Sidecar names: ``X.labels.yaml`` holds labels of the file ``X`` beside it.

The naming rule alone, which the guard decides on: a sidecar is governed as what it is, labels of
another file. Reading it is allowed to whoever may see ``X``; writing, moving or deleting it
relabels ``X`` (:mod:`bastion.core.relabel`), which needs write access to ``X``, and the
``label`` permission unless the change only tightens ``X``'s labels. What a sidecar's content
does to the labels is the labels part's (:mod:`bastion.labels.sidecars`).
"""

from __future__ import annotations

from bastion.core.errors import InvalidPathError
from bastion.core.paths import VPath

__all__ = ["SIDECAR_SUFFIX", "in_other_case", "labelled_file_of", "sidecar_of"]

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
