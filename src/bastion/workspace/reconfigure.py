"""A workspace rebuilt with a new policy and mount labels, over the same stores, index, audit,
journal and processes: what a server swaps in when its workspace file changes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bastion.core.mounts import Mount, MountTable
from bastion.core.policy import Policy
from bastion.core.ports import Store
from bastion.workspace.doclabels import DocumentLabels
from bastion.workspace.journal import JournalledStore
from bastion.workspace.workspace import Workspace

__all__ = ["reconfigured"]


def _bare(store: Store) -> Store:
    """The store below the workspace's own wrappers (the journal's, the labels')."""
    if isinstance(store, JournalledStore):
        store = store.inner
    if isinstance(store, DocumentLabels):
        store = store.inner
    return store


def reconfigured(running: Workspace, *, policy: Policy, mounts: Iterable[Mount]) -> Workspace:
    """A new owner workspace over ``running``'s stores, index, audit, journal and processes
    with ``policy`` and ``mounts`` (the same stores, with new scopes or labels). Nothing it
    remembers about access is carried over (decisions, labels, search checks are all keyed to
    the new one)."""
    old = running._shared
    table = MountTable(replace(m, store=_bare(m.store)) for m in mounts)
    knowledge = old.knowledge.knowledge if old.knowledge is not None else None
    fresh = Workspace(
        table, policy=policy, audit=old.audit, knowledge=knowledge, journal=old.journal
    )
    fresh._shared.processes = old.processes
    fresh._shared.threads = old.threads
    if old.limiter is not None and policy.rate_limit == old.policy.rate_limit:
        fresh._shared.limiter = old.limiter
        fresh._bind(fresh.principal, owner=True)
    return fresh
