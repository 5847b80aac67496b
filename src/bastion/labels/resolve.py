"""The one label resolver: a document's effective labels, worked out in one function.

    effective = mount (or store) labels  ⊕  front matter  ⊕  sidecar ``<name>.labels.yaml``

Each step may only make the document *harder* to read: a higher classification, a narrower role
list, a tenant where there was none, more tags. Metadata can never declassify a file below its
mount's default or move it to another tenant, since whoever can write a file would otherwise
choose who reads it.

Every path that needs a document's labels calls :func:`resolve_labels` (through the workspace's
document-labels wrapper, which feeds it the file's head and its sidecar): read, stat, list, glob,
grep, search, the index, ask, the agent tools, copy/move/backup and skills. Where the labels
cannot be determined (front matter or a sidecar that is unreadable, too large, undecodable or of
the wrong shape; a sidecar that is a link, a special file or a folder) the result carries the
reason in :attr:`~bastion.core.models.Labels.undetermined` and admits nobody: fail closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bastion.core.models import NOBODY_ROLE, Labels
from bastion.core.principal import Classifications
from bastion.labels.frontmatter import (
    HEAD_BYTES,
    MAX_FRONT_MATTER_BYTES,
    FrontMatterError,
    decode,
    head_front_matter,
    load_mapping,
)

__all__ = ["document_labels", "resolve_labels", "undetermined"]

_LABEL_KEYS = frozenset({"tenant", "classification", "roles", "tags"})


def undetermined(base: Labels, why: str) -> Labels:
    """``base`` marked as labels that could not be worked out (they admit nobody)."""
    return replace(base, undetermined=why)


def resolve_labels(
    base: Labels,
    classifications: Classifications,
    *,
    head: bytes = b"",
    sidecar: bytes | None = None,
    sidecar_problem: str = "",
    where: str = "",
) -> Labels:
    """A document's effective labels (module docstring).

    ``head`` is the file's first :data:`~bastion.labels.frontmatter.LABEL_BYTES`
    bytes (fewer: the whole file; more are ignored), ``sidecar`` the content of its sidecar if
    it has one, ``sidecar_problem`` why a sidecar is there but cannot be read.
    """
    if base.undetermined:
        return base
    complete = len(head) <= HEAD_BYTES
    try:
        found = head_front_matter(head[:HEAD_BYTES], complete=complete, where=where)
    except FrontMatterError as exc:
        return undetermined(base, exc.reason if exc.reason is not None else _reason(exc, where))
    labels = base
    if found is not None:
        labels = document_labels(labels, found.metadata, classifications)
        if labels.undetermined:
            return replace(labels, undetermined=f"front matter: {labels.undetermined}")
    if sidecar_problem:
        return undetermined(labels, f"sidecar {sidecar_problem}")
    if sidecar is not None:
        if len(sidecar) > MAX_FRONT_MATTER_BYTES:
            return undetermined(labels, f"sidecar is over {MAX_FRONT_MATTER_BYTES} bytes")
        try:
            metadata = load_mapping(decode(sidecar, where), where, what="the sidecar")
        except FrontMatterError as exc:
            return undetermined(
                labels, exc.reason if exc.reason is not None else _reason(exc, where)
            )
        labels = document_labels(labels, metadata, classifications)
        if labels.undetermined:
            return replace(labels, undetermined=f"sidecar: {labels.undetermined}")
    return labels


def _reason(exc: FrontMatterError, where: str) -> str:
    return str(exc).removeprefix(f"{where}: ") if where else str(exc)


def _strings(value: Any) -> frozenset[str] | None:
    """A list of names as metadata may write it (a list of names or numbers, or one
    comma-separated string); ``None`` when the value is of another shape."""
    if isinstance(value, str):
        return frozenset(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple) and all(_name(v) for v in value):
        return frozenset(str(v).strip() for v in value if str(v).strip())
    return None


def _name(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def document_labels(
    base: Labels, metadata: Mapping[str, Any], classifications: Classifications
) -> Labels:
    """``base`` tightened by the ``tenant``, ``classification``, ``roles`` and ``tags`` of
    ``metadata`` (other keys are ignored).

    An unknown classification is taken as the highest known level, an unknown base
    classification (which admits nobody) is kept, and roles that do not overlap the base roles
    leave a role nobody holds. A field of the wrong type (a number for ``roles``, a list for
    ``classification``) or a tenant other than the base's gives undetermined labels: fail
    closed, never ignored.
    """
    # label keys in any case (``Classification:``): a spelling must not make labels ignored;
    # two spellings of one key (the parser refuses them, but a YAML merge ``<<:`` can bring
    # one in) cannot both be honoured
    folded: dict[str, Any] = {}
    for key, value in metadata.items():
        name = str(key).strip().casefold()
        if name in folded and name in _LABEL_KEYS:
            return undetermined(base, f"{name} is given in two spellings")
        folded[name] = value
    metadata = folded
    classification = base.classification
    wanted = metadata.get("classification")
    if wanted is not None and not isinstance(wanted, str):
        return undetermined(base, "classification must be a string")
    wanted = (wanted or "").strip()
    if wanted:
        order = classifications.order
        level = wanted if wanted in order else order[-1]
        if classification in order and order.index(level) > order.index(classification):
            classification = level
    tenant = base.tenant
    named = metadata.get("tenant")
    if named is not None:
        if not isinstance(named, str) or not named.strip():
            return undetermined(base, "tenant must be a non-empty string")
        if tenant is None:
            tenant = named.strip()
        elif named.strip() != tenant:
            return undetermined(base, "tenant differs from the mount's tenant")
    roles = base.roles
    if metadata.get("roles") is not None:
        asked = _strings(metadata["roles"])
        if asked is None:
            return undetermined(base, "roles must be a list of names")
        if asked:
            roles = (roles & asked) if roles else asked
            if not roles:
                roles = frozenset({NOBODY_ROLE})
    tags = base.tags
    if metadata.get("tags") is not None:
        more = _strings(metadata["tags"])
        if more is None:
            return undetermined(base, "tags must be a list of names")
        tags = tags | more
    return Labels(tenant=tenant, classification=classification, roles=roles, tags=tags)
