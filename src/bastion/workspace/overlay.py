"""Review, apply and discard an overlay mount's layer, for one principal (docs/changes.md,
"Overlay mounts").

An overlay mount (``overlay = ...`` in ``bastion.toml``) keeps every write in a layer — the
thread's own when the view acts in a thread — over a base that stays unchanged until someone
applies the layer. What a principal is shown and may do goes through its guard:

* the change list names only the paths it may read (the mount readable, the policy allowing
  ``read``, the path not blocked, the file's labels admitting it: for a written file, as the
  guard sees it now; for a deleted one, the base's entry); a hidden change is never told, not
  even as a count;
* apply needs ``write`` on each written path and ``delete`` on each deleted one (``label``
  for a labels sidecar), and the mount's scope; one refusal refuses the whole call before
  anything is applied;
* discard (dropping changes) needs the same rights as apply: it changes what the mount shows;
* the diff shows the changes the change list shows, nothing else;
* each call is one audited operation (``overlay_changes``, ``overlay_diff``, ``overlay_apply``,
  ``overlay_discard``) whose record says how many paths it applied, kept or dropped;
* the index follows: what apply wrote and what discard brought back from the base (or took
  away) is indexed again in the same call, as the view's thread now sees it.
"""

from __future__ import annotations

import asyncio
import builtins
import difflib
from dataclasses import dataclass

from bastion.core.errors import ConfigurationError, NotFoundError, OperationError
from bastion.core.guard import GuardedStore
from bastion.core.models import Action
from bastion.core.overlay_port import LayerChange, Layered, Overlay, overlay_below
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.core.sidecars import labelled_file_of
from bastion.core.visibility import refused
from bastion.labels.store import DocumentLabels
from bastion.workspace.blocking import run_blocking
from bastion.workspace.indexing import IndexFollower
from bastion.workspace.routing import Router

__all__ = ["OverlayChange", "OverlayOutcome", "OverlayReview", "SyncOverlayReview"]


@dataclass(frozen=True, slots=True)
class OverlayChange:
    """One change an overlay's layer holds."""

    path: str
    """The workspace path (``/code/src/app.py``)."""
    action: str
    """What apply does there: ``"write"``, ``"delete"`` or ``"mkdir"`` (a folder made)."""
    status: str = ""
    """What it is over the base now: ``"added"``, ``"modified"`` or ``"deleted"``."""
    conflict: bool = False
    """Apply would keep it in the layer: the base changed there since the layer took it."""


@dataclass(frozen=True, slots=True)
class OverlayOutcome:
    """What an apply or a discard did (workspace paths)."""

    applied: tuple[str, ...] = ()
    """Written into (or deleted from) the base."""
    conflicts: tuple[str, ...] = ()
    """Kept in the layer: the base changed there since the layer took the file."""
    discarded: tuple[str, ...] = ()
    """Dropped from the layer (the base shows through again)."""


def _overlay_of(store: Store, thread: str | None, tenant: str) -> Overlay | None:
    """``tenant``'s overlay of ``thread`` below a mount's wrappers."""
    found = overlay_below(store)
    return found.overlay(thread, tenant=tenant) if isinstance(found, Layered) else found


class OverlayReview:
    """The overlay mounted at ``prefix``, as the principal of ``router`` sees it."""

    def __init__(
        self,
        router: Router,
        prefix: str | VPath,
        thread: str | None,
        index: IndexFollower | None = None,
    ) -> None:
        self._router = router
        self._ctx = router.ctx
        self._raw = prefix
        self._thread = thread
        self._index = (
            index if index is not None else IndexFollower(None, router.ctx.policy.classifications)
        )

    def _open(self) -> tuple[VPath, GuardedStore, Overlay]:
        prefix = self._raw if isinstance(self._raw, VPath) else VPath.parse(self._raw)
        guarded, rel = self._router.route(prefix)  # a mount it sees nothing of: not found
        if not rel.is_root:
            raise ConfigurationError(f"{prefix} is not a mount; name an overlay mount's prefix")
        overlay = _overlay_of(guarded.mount.store, self._thread, self._ctx.principal.tenant)
        if overlay is None:
            raise ConfigurationError(
                f"{prefix} is not an overlay mount; set overlay = true on it in bastion.toml"
            )
        return prefix, guarded, overlay

    # -- seeing ------------------------------------------------------------------------------

    async def _visible(
        self, guarded: GuardedStore, overlay: Overlay, rel: VPath, action: str
    ) -> bool:
        ctx, full = self._ctx, guarded.mount.prefix.join(rel)
        if not guarded.mount.scope.allows(Action.READ) or ctx.blocked(full) is not None:
            return False
        if not ctx.allows(Action.READ, full):
            return False
        try:
            if action != "delete":  # what the layer holds, as the guard sees it now
                await guarded.stat(rel)
        except (NotFoundError, OperationError):
            return False
        try:  # what the base holds there (its own labels: front matter, a sidecar)
            below = await DocumentLabels(
                overlay.base, guarded.mount.labels, ctx.policy.classifications
            ).stat(rel)
        except (NotFoundError, OperationError):
            return action != "delete"  # a new file or folder; a deletion of nothing: nothing
        return guarded.visible(below)

    async def _shown(
        self, guarded: GuardedStore, overlay: Overlay, *, review: bool = False
    ) -> dict[VPath, LayerChange]:
        """The changes the principal may read (``review``: with their status and conflicts)."""
        if review:
            found = await overlay.review()
        else:
            found = {k: LayerChange(a, "", False) for k, a in (await overlay.changes()).items()}
        shown: dict[VPath, LayerChange] = {}
        for raw, change in found.items():
            rel = VPath.parse(raw)
            if await self._visible(guarded, overlay, rel, change.action):
                shown[rel] = change
        return shown

    async def changes(self) -> builtins.list[OverlayChange]:
        """The changes the layer holds that the principal may read, by path, each with what
        it is over the base now (added, modified, deleted) and whether apply would keep it
        in the layer as a conflict."""
        prefix, guarded, overlay = self._open()
        with self._ctx.operation("overlay_changes", prefix):
            shown = await self._shown(guarded, overlay, review=True)
            return [
                OverlayChange(str(prefix.join(p)), c.action, c.status, c.conflict)
                for p, c in shown.items()
            ]

    async def diff(self, paths: builtins.list[str] | None = None) -> str:
        """A unified diff of the layer against the base, file by file, for the changes
        (``paths``, else every one) the principal may read."""
        prefix, guarded, overlay = self._open()
        with self._ctx.operation("overlay_diff", prefix):
            chosen = self._chosen(prefix, await self._shown(guarded, overlay), paths)
            parts = []
            for rel, change in chosen.items():
                full = str(prefix.join(rel))
                if change.action == "mkdir":
                    parts.append(f"New folder {full}\n")
                    continue
                old, new, large = await overlay.sides(rel, _DIFF_LIMIT)
                if large:
                    parts.append(f"Files a{full} and b{full} differ (too large to show)\n")
                elif old is None and new is None:
                    parts.append(f"Deleted folder {full}\n")
                else:
                    # up to a MiB a side: the diff is worked out off the event loop
                    parts.append(await asyncio.to_thread(_unified, full, old, new))
            return "".join(parts)

    # -- changing ----------------------------------------------------------------------------

    def _chosen(
        self, prefix: VPath, shown: dict[VPath, LayerChange], paths: builtins.list[str] | None
    ) -> dict[VPath, LayerChange]:
        if paths is None:
            return shown
        chosen: dict[VPath, LayerChange] = {}
        for raw in paths:
            full = VPath.parse(raw)
            rel = full.relative_to(prefix) if full.is_relative_to(prefix) else None
            if rel is None or rel not in shown:
                raise NotFoundError(f"no change at {full} in the overlay at {prefix}")
            chosen[rel] = shown[rel]
        return chosen

    async def _may_change(
        self, guarded: GuardedStore, overlay: Overlay, chosen: dict[VPath, LayerChange]
    ) -> None:
        """Refuse (before anything is done) a change the principal may not make itself: one
        its rights do not allow, or the deletion of a folder of the base that holds entries
        it may not see (worded as the guard words a delete onto hidden entries)."""
        for rel, change in chosen.items():
            action, full = change.action, guarded.mount.prefix.join(rel)
            needed = Action.DELETE if action == "delete" else Action.WRITE
            if labelled_file_of(rel) is not None:
                needed = Action.LABEL
            if not guarded.mount.scope.allows(needed) or not self._ctx.allows(needed, full):
                raise refused(needed, full)
            if action == "delete" and not await self._all_visible(guarded, overlay, rel):
                raise refused(needed, full)

    async def _all_visible(self, guarded: GuardedStore, overlay: Overlay, rel: VPath) -> bool:
        labelled = DocumentLabels(
            overlay.base, guarded.mount.labels, self._ctx.policy.classifications
        )
        try:
            if not (await labelled.stat(rel)).is_dir:
                return True
            async for entry in labelled.walk(rel):
                if not guarded.visible(entry):
                    return False
        except (NotFoundError, OperationError):
            return True  # gone from the base already: nothing of it is deleted
        return True

    async def apply(self, paths: builtins.list[str] | None = None) -> OverlayOutcome:
        """Write the changes (``paths``, else every one the principal may read) into the
        base, each file atomically and only where the base is still what the layer took."""
        prefix, guarded, overlay = self._open()
        with self._ctx.operation("overlay_apply", prefix) as op:
            chosen = self._chosen(prefix, await self._shown(guarded, overlay), paths)
            await self._may_change(guarded, overlay, chosen)
            if not chosen:
                return OverlayOutcome()
            report = await overlay.apply(list(chosen))
            if not await overlay.changes():
                await overlay.discard()  # nothing left: the layer's folders go too
            await self._reindex(prefix, report.applied)
            op.reason = f"applied {len(report.applied)}, conflicts {len(report.conflicts)}"
            return OverlayOutcome(
                applied=tuple(str(prefix.join(VPath.parse(p))) for p in report.applied),
                conflicts=tuple(str(prefix.join(VPath.parse(p))) for p in report.conflicts),
            )

    async def discard(self, paths: builtins.list[str] | None = None) -> OverlayOutcome:
        """Drop the changes (``paths``, else every one the principal may read) from the
        layer: the base shows through again."""
        prefix, guarded, overlay = self._open()
        with self._ctx.operation("overlay_discard", prefix) as op:
            chosen = self._chosen(prefix, await self._shown(guarded, overlay), paths)
            await self._may_change(guarded, overlay, chosen)
            if chosen:
                await overlay.discard(list(chosen))
                if not await overlay.changes():
                    await overlay.discard()
                await self._reindex(prefix, [str(p) for p in chosen])
            op.reason = f"discarded {len(chosen)}"
            return OverlayOutcome(discarded=tuple(str(prefix.join(p)) for p in chosen))

    async def _reindex(self, prefix: VPath, paths: builtins.list[str]) -> None:
        """The index follows what these paths show now (a file back from the base, one
        gone, one applied): indexed again or forgotten."""
        await self._index.changed(*(prefix.join(VPath.parse(p)) for p in paths))


_DIFF_LIMIT = 1 << 20
"""The largest side of a file the diff shows (a larger file is only said to differ)."""
_BINARY_PROBE = 8192


def _unified(path: str, old: bytes | None, new: bytes | None) -> str:
    a = "/dev/null" if old is None else f"a{path}"
    b = "/dev/null" if new is None else f"b{path}"
    before, after = old or b"", new or b""
    if b"\0" in before[:_BINARY_PROBE] or b"\0" in after[:_BINARY_PROBE]:
        return f"Binary files {a} and {b} differ\n"
    lines = difflib.unified_diff(
        before.decode("utf-8", "replace").splitlines(keepends=True),
        after.decode("utf-8", "replace").splitlines(keepends=True),
        a,
        b,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


class SyncOverlayReview:
    """Blocking twin of :class:`OverlayReview`."""

    def __init__(self, aio: OverlayReview) -> None:
        self.aio = aio

    def changes(self) -> builtins.list[OverlayChange]:
        return run_blocking(self.aio.changes())

    def diff(self, paths: builtins.list[str] | None = None) -> str:
        return run_blocking(self.aio.diff(paths))

    def apply(self, paths: builtins.list[str] | None = None) -> OverlayOutcome:
        return run_blocking(self.aio.apply(paths))

    def discard(self, paths: builtins.list[str] | None = None) -> OverlayOutcome:
        return run_blocking(self.aio.discard(paths))
