"""Mounts' stores at start-up and shutdown: reach each one once (:func:`check_mounts`), close
those that hold connections or files (:func:`close_mounts`, or :func:`close_now` outside an
event loop). Used by ``bastion.config`` and the command line."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Iterable

from bastion.core.errors import ConfigurationError, StoreError
from bastion.core.mounts import Mount
from bastion.core.paths import VPath

__all__ = ["check_mounts", "close_mounts", "close_now"]


async def check_mounts(mounts: Iterable[Mount]) -> None:
    """Reach every mount's store once (a stat of its root, or the store's own ``check``),
    within the mount's timeout; a store that fails raises :class:`ConfigurationError` that
    names the mount: a missing bucket, refused credentials, an unreachable server."""
    for mount in mounts:
        store = mount.store
        probe = getattr(store, "check", None)
        limit = mount.timeout if mount.timeout is not None else store.timeout
        try:
            async with asyncio.timeout(limit if limit is not None and limit < math.inf else None):
                if callable(probe):
                    await probe()
                else:
                    await store.stat(VPath.ROOT)
        except StoreError as exc:
            reason = exc.reason if exc.reason is not None else str(exc)  # a plain message
            raise ConfigurationError(
                f"mount {mount.prefix} ({mount.store.kind}): {reason}"
            ) from None
        except TimeoutError:
            raise ConfigurationError(
                f"mount {mount.prefix} ({mount.store.kind}): no answer within {limit:g} s"
            ) from None


async def close_mounts(mounts: Iterable[Mount]) -> None:
    """Close the stores of ``mounts`` that hold connections or files (``close``)."""
    for mount in mounts:
        closer = getattr(mount.store, "close", None)
        if callable(closer):
            outcome = closer()
            if inspect.isawaitable(outcome):
                await outcome


def close_now(mounts: list[Mount]) -> None:
    """Close what a failed build opened (blocking: this runs outside any event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(close_mounts(mounts))
        return
    for mount in mounts:  # inside a loop: close what closes without awaiting
        closer = getattr(mount.store, "close", None)
        if callable(closer) and not inspect.iscoroutinefunction(closer):
            closer()
