"""One command's workspace: opened from the workspace file, acting for one principal, closed
when the command ends; and the one-bit note that labels hid something from that principal.

A principal is told *that* some documents are not visible to it, never which, how many or
where below the path it asked about (``docs/decisions.md``, 2026-11-25). The bit is worked
out by comparing what the principal sees with what the same stores show with every label,
tenant and policy rule set aside (the policy's file limits still apply, and labels sidecars
are not documents): an entry the second view shows and the first does not is one the
principal may not see. The comparison reads the stores directly, is not audited (it is not
a request of the principal) and runs only when a principal is named.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bastion.cli.common import acting
from bastion.cli.output import note, shown
from bastion.core.principal import Principal

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig
    from bastion.core.mounts import Mount
    from bastion.knowledge.engine import Knowledge
    from bastion.workspace.sync import SyncWorkspace

__all__ = ["Session", "open_session"]


class Session:
    """The workspace of one command (blocking facade) and who it acts for."""

    def __init__(
        self,
        ws: SyncWorkspace,
        principal: Principal | None,
        config: WorkspaceConfig,
        knowledge: Knowledge | None,
        mounts: Sequence[Mount] = (),
    ) -> None:
        self.ws = ws
        self.principal = principal
        """Who asks; ``None`` for the workspace's owner (no ``--as``, no ``[principal]``)."""
        self.config = config
        self.knowledge = knowledge
        self._mounts = tuple(mounts)
        """The stores as opened, before the workspace wrapped them to read document labels."""
        self._everything: SyncWorkspace | None = None

    @property
    def who(self) -> str:
        return shown(self.principal) if self.principal is not None else "the owner"

    def hidden_note(self, scope: str) -> str:
        return f"some documents {scope}are not visible to {self.who}"

    def everything(self) -> SyncWorkspace:
        """The same stores (the session's, opened once) with every label, tenant and rule set
        aside (limits kept)."""
        if self._everything is None:
            from bastion.core.audit import NullAuditSink
            from bastion.core.models import Labels
            from bastion.core.policy import Policy
            from bastion.workspace.workspace import Workspace

            policy = dataclasses.replace(self.config.policy, rules=Policy.allow_all().rules)
            unlabelled = [dataclasses.replace(m, labels=Labels()) for m in self._mounts]
            self._everything = Workspace(
                unlabelled, policy=policy, audit=NullAuditSink(), document_labels=False
            ).sync()
        return self._everything

    def some_hidden(self, seen: Iterable[str], listed: Any) -> bool:
        """True when ``listed(everything)`` (paths) holds a document not in ``seen``: a path
        the principal's own call did not show. Always false for the owner."""
        if self.principal is None:
            return False
        from bastion.core.errors import BastionError
        from bastion.core.paths import VPath
        from bastion.core.sidecars import labelled_file_of

        try:
            every = set(listed(self.everything()))
        except BastionError:
            return False
        every = {p for p in every if labelled_file_of(VPath.parse(p)) is None}
        return bool(every - set(seen))

    def index_hidden(self, query: str, mode: str, k: int, shown: set[str]) -> bool:
        """True when the index's own best ``k`` for ``query`` hold a document this principal
        may not read (one bit: never which, nor how many); ``shown`` are paths it was shown.
        Always false for the owner or without an index."""
        if self.principal is None or self.knowledge is None:
            return False
        from bastion.workspace.sync import run_blocking

        if mode not in self.ws.search_modes:
            mode = "bm25"
        raw = run_blocking(self.knowledge.search(query, mode=mode, k=k))
        others = {hit.chunk.doc.path for hit in raw} - shown
        return any(not self.ws.exists(path) for path in sorted(others))


@contextlib.contextmanager
def open_session(
    config: WorkspaceConfig,
    principal: Principal | None,
    *,
    index: bool = False,
    owner_note: bool = True,
) -> Iterator[Session]:
    """The workspace ``config`` describes, acting for ``principal`` (else the file's own,
    else the owner), with its audit log; the index is opened only when ``index``. Acting as
    the owner of a file that names users, a note says how to name one (``owner_note``)."""
    from bastion.core.audit import AuditSink, MemoryAuditSink
    from bastion.core.audit_sinks import JsonLinesAuditSink
    from bastion.stores.mount_checks import close_now
    from bastion.workspace.workspace import Workspace

    sink: AuditSink = (
        JsonLinesAuditSink(config.audit) if config.audit is not None else MemoryAuditSink()
    )
    mounts: list[Mount] = []
    knowledge: Knowledge | None = None
    try:
        mounts = config.open_mounts()
        if index and config.knowledge is not None:
            knowledge = config.open_knowledge()
        who = acting(config, principal)
        if who is None and config.users and owner_note:
            names = ", ".join(list(config.users)[:6])
            note(
                "note: no --as or --token: acting as the owner (tenant default, clearance "
                f"public), who may not see labelled documents; try --as USER ({names}, ...)"
            )
        ws = Workspace(mounts, policy=config.policy, principal=who, audit=sink, knowledge=knowledge)
        yield Session(ws.sync(), who, config, knowledge, mounts)
    finally:
        try:
            if knowledge is not None:
                knowledge.close()
        finally:
            close_now(mounts)
            sink.close()
