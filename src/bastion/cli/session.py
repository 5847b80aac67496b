"""One command's workspace: opened from the workspace file, acting for one principal, closed
when the command ends.

What a command prints is worked out from the principal's own answers alone. It never asks
the stores, the index or another principal whether something it may not see exists: such a
comparison is an oracle (a note that appears for "22 million" and not for "21 million" reads
a figure out of a restricted file, a word at a time). A command may say who is acting and
with what clearance (:meth:`Session.limited_note`), which is the same whatever is hidden
(``docs/decisions/``, "CLI: no hidden-match note").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

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
    ) -> None:
        self.ws = ws
        self.principal = principal
        """Who asks; ``None`` for the workspace's owner (no ``--as``, no ``[principal]``)."""
        self.config = config
        self.knowledge = knowledge

    @property
    def who(self) -> str:
        return shown(self.principal) if self.principal is not None else "the owner"

    def limited_note(self) -> str:
        """Whose view an empty result is: the acting principal and its clearance. It depends
        on nothing but who acts, so it says nothing of what is hidden."""
        clearance = self.principal.clearance if self.principal is not None else "public"
        return f"note: no results among what {self.who} (clearance {clearance}) may see"

    def say_limited(self, empty: bool) -> None:
        """:meth:`limited_note` on stderr when a result is ``empty`` (and a principal acts)."""
        if empty and self.principal is not None:
            note(self.limited_note())


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
    from bastion.config.kept_apart import journal_file, refuse_kept_in_mounts
    from bastion.core.audit import AuditSink, MemoryAuditSink
    from bastion.core.audit_sinks import JsonLinesAuditSink
    from bastion.stores.mount_checks import close_now
    from bastion.workspace.journal.settings import open_journal
    from bastion.workspace.workspace import Workspace

    sink: AuditSink = (
        JsonLinesAuditSink(config.audit) if config.audit is not None else MemoryAuditSink()
    )
    mounts: list[Mount] = []
    knowledge: Knowledge | None = None
    try:
        mounts = config.open_mounts(tolerant=True)  # a broken mount: its own error, logged
        if index and config.knowledge is not None:
            knowledge = config.open_knowledge()
        who = acting(config, principal)
        if principal is None and config.users and owner_note:
            names = list(config.users)[:6]
            actor = (
                "the owner (tenant default, clearance public), who may not see labelled documents"
                if who is None
                else f"{who.id}, the [principal] of the workspace file (its agent)"
            )
            note(
                f"note: no --as, --token or default_user: acting as {actor}; pass --as USER "
                f"({', '.join(names)}, ...) or name one in the workspace file: "
                f'default_user = "{names[0]}"'
            )
        refuse_kept_in_mounts(mounts, config.policy, journal_file(config.journal, config.base))
        journal = open_journal(config.journal, config.base)
        ws = Workspace(
            mounts,
            policy=config.policy,
            principal=who,
            audit=sink,
            knowledge=knowledge,
            journal=journal,
        )
        yield Session(ws.sync(), who, config, knowledge)
    finally:
        try:
            if knowledge is not None:
                knowledge.close()
        finally:
            close_now(mounts)
            sink.close()
