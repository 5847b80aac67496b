"""A document's labels: the mount's (or the store's) labels, tightened by its front matter.

Front matter may only make a document *harder* to read: a higher classification, a narrower
role list, more tags. It can never declassify a file below its mount's default or move it to
another tenant, since whoever can write a file would otherwise choose who reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bastion.core.models import Labels
from bastion.core.principal import Classifications

__all__ = ["document_labels"]


def _strings(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(str(v).strip() for v in value if str(v).strip())
    return frozenset()


def document_labels(
    base: Labels, metadata: Mapping[str, Any], classifications: Classifications
) -> Labels:
    """``base`` tightened by the ``classification``, ``roles`` and ``tags`` of ``metadata``.

    An unknown classification in the front matter (or one that is not a string) is taken as
    the highest known level, an unknown base classification (which admits nobody) is kept, and
    roles that do not overlap the base roles leave a role nobody holds: fail closed.
    """
    classification = base.classification
    wanted = metadata.get("classification")
    if isinstance(wanted, str):
        wanted = wanted.strip()
    if wanted is not None and wanted != "":
        order = classifications.order
        level = wanted if isinstance(wanted, str) and wanted in order else order[-1]
        if classification in order and order.index(level) > order.index(classification):
            classification = level
    roles = base.roles
    asked = _strings(metadata.get("roles"))
    if asked:
        roles = (roles & asked) if roles else asked
        if not roles:
            roles = frozenset({"\x00nobody"})
    tags = base.tags | _strings(metadata.get("tags"))
    return Labels(tenant=base.tenant, classification=classification, roles=roles, tags=tags)
