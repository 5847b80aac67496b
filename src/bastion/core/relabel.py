"""The guard's decisions on sidecar changes: a change of ``X.labels.yaml`` relabels ``X``.

Writing, moving or deleting a sidecar (``core.sidecars``) changes the labels of the file it
describes, when that file exists. It needs that file to be visible and writable, and the
``label`` permission unless the change only tightens its labels; a change that would leave them
unreadable is refused (the file would vanish). What the change does to the labels is the labels
part's to say, through the label port (:class:`~bastion.core.label_port.LabelPort`); whether it
is allowed is decided here. A mount without document labels has no port: its sidecars are
ordinary files.
"""

from __future__ import annotations

from contextlib import suppress

from bastion.core.decisions import Decisions
from bastion.core.errors import LabelError, OperationError, PolicyDeniedError
from bastion.core.label_port import LabelPort, Relabel
from bastion.core.models import Action, EntryKind, Labels
from bastion.core.operation import Operation
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.core.sidecars import labelled_file_of
from bastion.core.visibility import LABELS_HIDE

__all__ = ["SidecarChecks"]


class SidecarChecks:
    """Sidecar changes on ``store`` (the store the guard wraps), decided by ``decide``."""

    def __init__(self, store: Store, labels: LabelPort | None, decide: Decisions) -> None:
        self.store = store
        self.labels = labels
        self.decide = decide

    async def _relabel(self, path: VPath, data: bytes | None) -> Relabel | None:
        if self.labels is None or labelled_file_of(path) is None:
            return None
        return await self.labels.relabelling(path, data)

    def _hidden(self, change: Relabel) -> str | None:
        """Why the file a sidecar describes is not there for the principal, else ``None``."""
        return self.decide.why_hidden(change.target, EntryKind.FILE, None) or (
            None if self.decide.ctx.admits(change.before) else LABELS_HIDE
        )

    async def admit(
        self, path: VPath, data: bytes | None, op: Operation, *, append: bool = False
    ) -> None:
        """A change of the sidecar ``path`` relabels the file it describes (when that file
        exists): it needs the file to be visible and writable, and the ``label`` permission
        unless the change only tightens the file's labels. ``data`` is the sidecar's new
        content (``None``: it goes away)."""
        if self.labels is None or labelled_file_of(path) is None:
            return
        if append and data is not None:
            with suppress(OperationError):  # no sidecar yet: the appended bytes are all of it
                data = await self.store.read_range(path) + data
        change = await self._relabel(path, data)
        if change is None:
            return  # the file is not there: the sidecar is an ordinary file
        decide = self.decide
        why = self._hidden(change)
        if why is not None:
            if data is None:  # a removal: as of a sidecar that is not there
                raise decide.hide(path, why, op)
            # a change of a hidden file's labels is a change onto a hidden name: refused in the
            # words of the policy, as a write of the file itself is ("not found" would differ
            # from the refusal of the file's own name, and tell that the file is there)
            raise decide.taken(path, Action.WRITE, why, op)
        full = decide.full(change.target)
        decide.policy(Action.WRITE, change.target)
        if change.after.undetermined:
            op.refuse(f"unreadable labels: {change.after.undetermined}")
            raise LabelError(
                f"{decide.full(path)}: labels could not be read ({change.after.undetermined}); "
                "fix the sidecar and write again"
            )
        if change.tightens:
            return
        if not decide.ctx.allows(Action.LABEL, full):
            op.refuse(f"relabel of {full} loosens its labels without the label permission")
            raise PolicyDeniedError(
                f"{decide.full(path)} relabels {full} and would loosen its labels; that needs "
                "the label permission (a sidecar change without it may only tighten them)"
            )

    async def admit_folder(self, path: VPath, op: Operation) -> None:
        """A folder at the sidecar name of an existing file would leave that file's labels
        undetermined, hiding it from everybody: refused like a write whose labels could not be
        read back (and, when the file is hidden, as a write of its sidecar is: not found)."""
        change = await self._relabel(path, None)
        if change is None:
            return  # no such file: an ordinary folder name
        why = self._hidden(change)
        if why is not None:
            raise self.decide.hide(path, why, op)
        full = self.decide.full
        op.refuse(f"a folder at the sidecar name of {full(change.target)}")
        raise LabelError(
            f"{full(path)}: a folder there would make the labels of {full(change.target)} "
            "unreadable; use another name"
        )

    async def carried(self, path: VPath, labels: Labels, head: bytes) -> bytes | None:
        """The sidecar a file with ``labels`` needs at ``path`` (``LabelPort.carried``);
        ``None`` without document labels."""
        return None if self.labels is None else await self.labels.carried(path, labels, head)
