"""What the workspace asks of an overlay mount (``bastion.stores.overlay``): its change list,
apply and discard, and for a store with a layer per thread, which tenant and thread a call is
in. The workspace knows overlays only through these two ports."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = ["LayerChange", "LayerKey", "Layered", "Overlay", "OverlayReport", "overlay_below"]


@dataclass(frozen=True, slots=True)
class LayerChange:
    """One change a layer holds, as :meth:`Overlay.review` sees it against the base now."""

    action: str
    """What apply does there: ``"write"``, ``"delete"`` or ``"mkdir"``."""
    status: str
    """What it is over the base now: ``"added"`` (the base has nothing there), ``"modified"``
    or ``"deleted"``."""
    conflict: bool
    """Apply would refuse it now: the base changed there since the layer took the path."""


@dataclass(frozen=True)
class OverlayReport:
    """What :meth:`Overlay.apply` did (paths inside the store)."""

    applied: list[str] = field(default_factory=list)
    """Paths written into (or deleted from) the base."""
    conflicts: list[str] = field(default_factory=list)
    """Paths whose base changed since the layer took them: kept in the layer, base untouched."""


class Overlay(ABC):
    """A layer over a base that stays unchanged until the layer is applied."""

    base: Store

    @abstractmethod
    async def changes(self) -> dict[str, str]:
        """Each changed path and what apply would do there: ``"write"``, ``"delete"`` or
        ``"mkdir"``."""

    @abstractmethod
    async def review(self) -> dict[str, LayerChange]:
        """Each change, with its status over the base and whether apply would refuse it."""

    @abstractmethod
    async def sides(self, path: VPath, limit: int) -> tuple[bytes | None, bytes | None, bool]:
        """The base's file at ``path`` and the layer's (``None``: no file there), and whether
        either is over ``limit`` bytes (then neither is read)."""

    @abstractmethod
    async def apply(self, paths: Iterable[VPath] | None = None) -> OverlayReport:
        """Write the changes (``paths``, else all) into the base, file by file."""

    @abstractmethod
    async def discard(self, paths: Iterable[VPath] | None = None) -> None:
        """Drop the changes (``paths``, else the whole layer)."""


@dataclass(frozen=True, slots=True)
class LayerKey:
    """Whose layer a call works in: a tenant's thread. Tenancy is a hard boundary, so the
    same thread id in two tenants names two layers, and naming another tenant's thread id
    reaches only one's own tenant's layer of that name (decision 0104)."""

    tenant: str | None
    """The caller's tenant (``None``: no principal, the store used directly, outside any
    workspace operation)."""
    thread: str | None = None
    """The thread (``None``: the tenant's layer outside any thread)."""


class Layered(ABC):
    """A store with an overlay per tenant and thread; :attr:`layer_of` names the layer of the
    call in progress (the workspace sets it)."""

    layer_of: Callable[[], LayerKey]

    @abstractmethod
    def overlay(self, thread: str | None, *, tenant: str | None) -> Overlay:
        """``tenant``'s layer of ``thread`` (``None``: the one outside any thread)."""


def overlay_below(store: Store) -> Overlay | Layered | None:
    """The overlay below a mount's wrappers (time limits, labels, the journal), if any."""
    for _ in range(16):
        if isinstance(store, Overlay | Layered):
            return store
        inner = getattr(store, "inner", None)
        if not isinstance(inner, Store):
            return None
        store = inner
    return None
