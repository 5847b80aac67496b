"""What every principal view of one workspace shares: its mounts (wrapped for the journal),
policy, audit, rate limiter, knowledge link, journal and background processes."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from bastion.core.audit import AuditSink
from bastion.core.label_port import LabelPort
from bastion.core.mounts import MountTable
from bastion.core.operation import operation_in_progress
from bastion.core.overlay_port import Layered, LayerKey, overlay_below
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.ports import Store
from bastion.core.ratelimit import RateLimiter
from bastion.labels.store import DocumentLabels
from bastion.workspace.indexing import KnowledgeLink
from bastion.workspace.journal import Journal, JournalledStore, Threads
from bastion.workspace.running import ProcessGate

if TYPE_CHECKING:
    from bastion.knowledge.engine import Knowledge

__all__ = ["Shared", "bare"]


class Shared:
    """State shared by every principal view of one workspace."""

    def __init__(
        self,
        mounts: MountTable,
        policy: Policy,
        audit: AuditSink,
        knowledge: Knowledge | None,
        journal: Journal | None = None,
    ) -> None:
        self.journal = journal
        self.threads = Threads()
        self.labels: dict[VPath, LabelPort] = {
            m.prefix: m.store for m in mounts.mounts if isinstance(m.store, LabelPort)
        }
        """Each mount's document labels, which its guard asks (below the journal's wrapper)."""
        if journal is not None:  # the one hook on the write path (docs/changes.md)
            mounts = MountTable(
                replace(
                    m, store=JournalledStore(m.store, journal, self.threads, m.prefix, m.labels)
                )
                for m in mounts.mounts
            )
        self.mounts = mounts
        self.policy = policy
        self.audit = audit
        self.limiter = RateLimiter(policy.rate_limit) if policy.rate_limit else None
        self.knowledge = KnowledgeLink(knowledge, mounts) if knowledge is not None else None
        self.processes = ProcessGate()
        for mount in mounts.mounts:  # an overlay's layer per tenant and thread: the caller's
            if isinstance(below := overlay_below(mount.store), Layered):
                below.layer_of = self._layer_now

    def _layer_now(self) -> LayerKey:
        """The layer of the view making the call in progress: its principal's tenant and the
        thread it acts in."""
        op = operation_in_progress()
        if op is None:  # no principal's call: the store's own layer (decision 0104)
            return LayerKey(None, None)
        ctx = op.context
        return LayerKey(ctx.principal.tenant, self.threads.thread_of(ctx))


def bare(store: Store) -> Store:
    """The store below the workspace's own wrappers (the journal's, the labels')."""
    if isinstance(store, JournalledStore):
        store = store.inner
    if isinstance(store, DocumentLabels):
        store = store.inner
    return store
