"""A file limit holds on every route round it: an open-ended range or line read never returns
more than the limit, and a write refused for its size touches nothing, its backup included.

Bugs found by the security suite (once ``test_found_bugs.py``); each test's docstring says what
went wrong.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from security_stores import caught, seed, snapshot

from bastion.core.errors import LimitError
from bastion.core.mounts import Mount
from bastion.core.policy import FileLimits, Policy
from bastion.core.ports import Store
from bastion.workspace import Workspace

# -- limits ----------------------------------------------------------------------------------


@pytest.fixture
async def big(make_store: Callable[[str], Store]) -> Workspace:
    store = make_store("big")
    await seed(store, {"/big.txt": b"".join(b"line %04d\n" % i for i in range(500))})
    return Workspace(
        [Mount.of("/b", store)],
        policy=Policy.allow_all(limits=FileLimits(max_file_bytes=1000)),
    )


async def test_open_ended_ranges_do_not_bypass_the_read_limit(big: Workspace) -> None:
    """A whole read of the 5000-byte file is refused (limit 1000), but ``start=0`` with no
    end, a huge ``end``, or ``offset=1`` with no line limit each return (almost) the whole
    file. A range bigger than the limit should be refused or cut to the limit."""
    reads: list[Callable[[], Awaitable[str | bytes]]] = [
        lambda: big.read_bytes("/b/big.txt", start=0),
        lambda: big.read_bytes("/b/big.txt", start=0, end=10**9),
        lambda: big.read_bytes("/b/big.txt", end=10**9),
        lambda: big.read_text("/b/big.txt", offset=1),
        lambda: big.read_text("/b/big.txt", offset=0, limit=10**6),
    ]
    for attempt in reads:
        try:
            data = await attempt()
        except LimitError:
            continue
        assert len(data) <= 1000, f"read {len(data)} bytes past a 1000-byte limit"


async def test_a_refused_write_with_backup_touches_nothing(
    make_store: Callable[[str], Store],
) -> None:
    """``write(..., backup=True)`` writes ``NAME.bak`` before the guard checks the new
    content, so a write refused for its size still replaces the previous backup."""
    store = make_store("d")
    await seed(store, {"/a.txt": "current", "/a.txt.bak": "previous backup"})
    ws = Workspace(
        [Mount.of("/d", store)],
        policy=Policy.allow_all(limits=FileLimits(max_file_bytes=100)),
    )
    before = await snapshot(store)
    assert isinstance(await caught(ws.write("/d/a.txt", "x" * 200, backup=True)), LimitError)
    assert await snapshot(store) == before
