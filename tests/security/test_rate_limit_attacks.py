"""Rate-limit bypass attempts: every surface and view of a workspace shares one budget per
principal, refused and failing operations count, and concurrency cannot slip extra calls in.

Time is a fake clock handed to the workspace's limiter, so the window tests never sleep.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from security_stores import seed as _seed

import bastion.workspace.shared as workspace_module
from bastion.core.errors import (
    AlreadyExistsError,
    LimitError,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    RateLimitError,
    ScopeError,
)
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy, RateLimit, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.core.ratelimit import RateLimiter
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

AGENT = Principal.of("agent", roles={"engineer"})


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Workspaces built after this fixture count time on a fake clock."""
    fake = FakeClock()
    monkeypatch.setattr(
        workspace_module, "RateLimiter", lambda limit: RateLimiter(limit, clock=fake)
    )
    return fake


@pytest.fixture
async def ws(make_store: Callable[[str], Store], clock: FakeClock) -> Workspace:
    a, b, ro = make_store("a"), make_store("b"), make_store("ro")
    await _seed(a, {"/f.txt": "alpha needle\n", "/dir/g.txt": "gamma needle\n"})
    await _seed(b, {"/h.txt": "beta needle\n"})
    await _seed(ro, {"/r.txt": "read only\n"})
    return Workspace(
        [Mount.of("/a", a), Mount.of("/b", b), Mount.of("/ro", ro, "read_only")],
        policy=Policy(
            rules=(Rule.deny("*", "/a/secret/**"), Rule.allow("*", "/**")),
            rate_limit=RateLimit(5, 60),
            limits=FileLimits(max_file_bytes=1000),
        ),
        principal=AGENT,
    )


async def _use_up(ws: Workspace, n: int = 5) -> None:
    for _ in range(n):
        await ws.stat("/a/f.txt")


def _refusals(ws: Workspace) -> list[str]:
    return [r.reason for r in ws.audit.records if r.reason.startswith("rate limited")]


async def test_sixth_operation_is_refused_with_the_real_clock() -> None:
    store = MemoryStore()
    ws = Workspace(
        [Mount.of("/m", store)],
        policy=Policy.allow_all(rate_limit=RateLimit(5, 60)),
        principal=AGENT,
    )
    await ws.write("/m/a.txt", "a")
    assert await ws.read_text("/m/a.txt") == "a"
    await ws.stat("/m/a.txt")
    await ws.list("/m")
    assert await ws.exists("/m/a.txt")
    with pytest.raises(RateLimitError, match=r"5 requests per 60s"):
        await ws.write("/m/b.txt", "b")
    assert not await store.exists(VPath.parse("/b.txt"))  # the refused write did nothing
    record = ws.audit.records[-1]
    assert record.operation == "write" and not record.allowed
    assert record.reason.startswith("rate limited")


_OPS: dict[str, Callable[[Workspace, int], Awaitable[Any]]] = {
    "stat": lambda ws, i: ws.stat("/a/f.txt"),
    "exists": lambda ws, i: ws.exists("/a/f.txt"),
    "read_text": lambda ws, i: ws.read_text("/a/f.txt"),
    "read_bytes": lambda ws, i: ws.read_bytes("/a/f.txt", start=0, end=3),
    "read_lines": lambda ws, i: ws.read_text("/a/f.txt", offset=0, limit=1),
    "write": lambda ws, i: ws.write(f"/a/w{i}.txt", "w"),
    "append": lambda ws, i: ws.append("/a/log.txt", "x"),
    "edit": lambda ws, i: ws.edit("/a/f.txt", "alpha", "alpha", replace_all=True),
    "mkdir": lambda ws, i: ws.mkdir(f"/a/d{i}"),
    "delete": lambda ws, i: ws.delete("/a/nothing.txt"),
    "copy": lambda ws, i: ws.copy("/a/f.txt", f"/b/c{i}.txt"),
    "move": lambda ws, i: ws.move(*(("/a/f.txt", "/a/f2.txt")[:: 1 if i % 2 == 0 else -1])),
    "list": lambda ws, i: ws.list("/", recursive=True),
    "glob": lambda ws, i: ws.glob("**/*.txt"),
    "grep": lambda ws, i: ws.grep("needle", "/"),
}


@pytest.mark.parametrize("op", list(_OPS))
async def test_every_kind_of_operation_counts_once(ws: Workspace, op: str) -> None:
    for i in range(5):
        try:
            await _OPS[op](ws, i)
        except NotFoundError:
            assert op == "delete"
    with pytest.raises(RateLimitError):
        await _OPS[op](ws, 5)
    for other in ("stat", "grep", "write"):
        with pytest.raises(RateLimitError):
            await _OPS[other](ws, 99)


async def test_blocking_facade_and_async_api_share_one_budget(ws: Workspace) -> None:
    await ws.stat("/a/f.txt")
    ws.sync().stat("/a/f.txt")
    await ws.read_text("/a/f.txt")
    ws.sync().read_text("/a/f.txt")
    ws.sync().list("/a")  # each ws.sync() is a fresh facade object: no fresh budget
    with pytest.raises(RateLimitError):
        ws.sync().stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        await ws.stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        ws.sync().with_principal(AGENT).stat("/a/f.txt")


@pytest.mark.parametrize(
    "same",
    [
        AGENT,
        Principal.of("agent", roles={"engineer"}),
        Principal.of("agent", roles={"admin", "root"}, clearance="restricted"),
        Principal.of("agent", tags={"fresh"}),
    ],
)
async def test_views_of_the_same_principal_share_one_budget(ws: Workspace, same: Principal) -> None:
    await _use_up(ws, 3)
    view = ws.with_principal(same)
    await view.stat("/a/f.txt")
    await view.with_principal(same).stat("/a/f.txt")
    for surface in (view, ws, ws.with_principal(same), view.with_principal(AGENT)):
        with pytest.raises(RateLimitError):
            await surface.stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        view.sync().stat("/a/f.txt")


async def test_alternating_mounts_share_one_budget(ws: Workspace) -> None:
    await ws.stat("/a/f.txt")
    await ws.stat("/b/h.txt")
    await ws.read_text("/ro/r.txt")
    await ws.write("/b/new.txt", "x")
    await ws.list("/")
    for path in ("/a/f.txt", "/b/h.txt", "/ro/r.txt", "/"):
        with pytest.raises(RateLimitError):
            await ws.stat(path)


async def test_bulk_operations_count_once_and_reset_nothing(ws: Workspace) -> None:
    result = await ws.grep("needle", "/")  # 1 operation, however many files it reads
    assert result.files_matched == 3
    assert len(await ws.list("/", recursive=True)) > 3  # 2
    assert len(await ws.glob("**")) > 3  # 3
    await ws.copy("/a/dir", "/b/dir-copy")  # 4: a tree copy is one operation
    await ws.stat("/a/f.txt")  # 5
    bulks: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.grep("needle", "/"),
        lambda: ws.list("/"),
        lambda: ws.glob("**"),
        lambda: ws.stat("/a/f.txt"),
    ]
    for bulk in bulks:
        with pytest.raises(RateLimitError):
            await bulk()
    assert len(_refusals(ws)) == 4


_FAILING: list[tuple[Callable[[Workspace], Awaitable[Any]], type[OperationError]]] = [
    (lambda ws: ws.read_text("/a/missing.txt"), NotFoundError),
    (lambda ws: ws.read_text("/a/secret/x.txt"), NotFoundError),
    (lambda ws: ws.write("/a/secret/x.txt", "x"), PolicyDeniedError),
    (lambda ws: ws.write("/ro/r.txt", "x"), ScopeError),
    (lambda ws: ws.write("/a/big.txt", "x" * 2000), LimitError),
    (lambda ws: ws.write("/a/f.txt", "x", mode="create"), AlreadyExistsError),
    (lambda ws: ws.delete("/a"), PolicyDeniedError),
]


@pytest.mark.parametrize("failing", range(len(_FAILING)))
async def test_failing_and_refused_operations_still_count(ws: Workspace, failing: int) -> None:
    attack, expected = _FAILING[failing]
    for _ in range(5):
        with pytest.raises(expected):
            await attack(ws)
    with pytest.raises(RateLimitError):
        await ws.stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        await attack(ws)


async def test_mixed_failures_count_too(ws: Workspace) -> None:
    for attack, expected in _FAILING[:5]:
        with pytest.raises(expected):
            await attack(ws)
    with pytest.raises(RateLimitError):
        await ws.read_text("/a/f.txt")


async def test_concurrent_tasks_get_exactly_the_budget(ws: Workspace) -> None:
    results = await asyncio.gather(
        *(ws.stat("/a/f.txt") for _ in range(30)),
        *(ws.read_text("/b/h.txt") for _ in range(10)),
        return_exceptions=True,
    )
    succeeded = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, RateLimitError)]
    assert len(succeeded) == 5 and len(refused) == 35


async def test_threads_on_the_blocking_facade_get_exactly_the_budget(ws: Workspace) -> None:
    outcomes: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        facade = ws.sync()
        for _ in range(4):
            try:
                facade.stat("/a/f.txt")
                outcome = "ok"
            except RateLimitError:
                outcome = "refused"
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(outcomes) == 32
    assert outcomes.count("ok") == 5 and outcomes.count("refused") == 27


async def test_threads_with_their_own_event_loops_get_exactly_the_budget(ws: Workspace) -> None:
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        async def run() -> None:
            for _ in range(4):
                try:
                    await ws.stat("/a/f.txt")
                    outcome = "ok"
                except RateLimitError:
                    outcome = "refused"
                with lock:
                    outcomes.append(outcome)

        start.wait()
        asyncio.run(run())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert outcomes.count("ok") == 5 and outcomes.count("refused") == 27


@pytest.mark.parametrize(
    "other",
    [
        Principal.of("someone-else"),
        Principal.of("agent", tenant="other-tenant"),
        Principal.of("Agent"),
    ],
)
async def test_other_principals_have_their_own_budget(ws: Workspace, other: Principal) -> None:
    await _use_up(ws)
    with pytest.raises(RateLimitError):
        await ws.stat("/a/f.txt")
    view = ws.with_principal(other)
    for _ in range(5):
        await view.stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        await view.stat("/a/f.txt")
    record = view.audit.records[-1]  # a principal reads its own records
    assert (record.principal, record.tenant) == (other.id, other.tenant)
    assert record.reason.startswith("rate limited") and not record.allowed


async def test_the_window_slides(ws: Workspace, clock: FakeClock) -> None:
    for t in (0, 10, 20, 30, 40):
        clock.now = 1000.0 + t
        await ws.stat("/a/f.txt")
    clock.now = 1059.9
    with pytest.raises(RateLimitError, match=r"retry in 0\.1s"):
        await ws.stat("/a/f.txt")
    clock.now = 1060.0  # the request at t=0 leaves the window
    await ws.stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        await ws.stat("/a/f.txt")
    clock.now = 1069.99
    with pytest.raises(RateLimitError):
        await ws.stat("/a/f.txt")
    clock.now = 1070.0  # t=10 leaves
    await ws.stat("/a/f.txt")
    clock.now = 1200.0  # everything left
    for _ in range(5):
        await ws.stat("/a/f.txt")
    with pytest.raises(RateLimitError):
        await ws.stat("/a/f.txt")


async def test_hammering_while_limited_does_not_extend_the_lockout(
    ws: Workspace, clock: FakeClock
) -> None:
    await _use_up(ws)
    for step in range(100):
        clock.now = 1000.0 + step * 0.5
        with pytest.raises(RateLimitError):
            await ws.stat("/a/f.txt")
    clock.now = 1060.0
    for _ in range(5):
        await ws.stat("/a/f.txt")


async def test_exists_does_not_swallow_the_rate_limit(ws: Workspace) -> None:
    await _use_up(ws)
    with pytest.raises(RateLimitError):
        await ws.exists("/a/f.txt")
    with pytest.raises(RateLimitError):
        await ws.exists("/nowhere/x")


async def test_rate_limit_refusal_is_the_same_for_hidden_and_visible_paths(ws: Workspace) -> None:
    await _use_up(ws)
    messages = set()
    for path in ("/a/f.txt", "/a/secret/x.txt", "/a/missing.txt", "/ro/r.txt"):
        with pytest.raises(RateLimitError) as info:
            await ws.read_text(path)
        messages.add(str(info.value))
        assert "secret" not in str(info.value)
    assert len(messages) == 1


async def test_refused_operations_have_no_side_effects(ws: Workspace) -> None:
    await _use_up(ws)
    attempts: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.write("/a/new.txt", "x"),
        lambda: ws.delete("/a/f.txt"),
        lambda: ws.move("/a/f.txt", "/b/f.txt"),
        lambda: ws.copy("/a/dir", "/b/dir"),
        lambda: ws.mkdir("/b/newdir"),
        lambda: ws.edit("/a/f.txt", "alpha", "omega"),
    ]
    for attempt in attempts:
        with pytest.raises(RateLimitError):
            await attempt()
    other = ws.with_principal(Principal.of("auditor"))
    assert {str(e.path) for e in await other.list("/", recursive=True)} == {
        "/a",
        "/a/dir",
        "/a/dir/g.txt",
        "/a/f.txt",
        "/b",
        "/b/h.txt",
        "/ro",
        "/ro/r.txt",
    }
    assert await other.read_text("/a/f.txt") == "alpha needle\n"
