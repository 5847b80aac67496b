"""What a sidecar's labels do: tighten, join, and labels written back as a sidecar.

Where sidecars are (their names) is :mod:`bastion.core.sidecars`: the guard decides on it.
"""

from __future__ import annotations

import json

from bastion.core.errors import LabelError
from bastion.core.models import NOBODY_ROLE, Labels
from bastion.core.principal import Classifications

__all__ = ["joined", "sidecar_text", "tightens"]


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
