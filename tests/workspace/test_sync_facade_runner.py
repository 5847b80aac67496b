"""How blocking calls reach the async API (``bastion.workspace.blocking``): in the calling
thread when no loop runs there, on one shared loop from every thread, inside running loops,
with loop-bound locks, timeouts, background tasks and async generators working as they do
under ``asyncio.run``."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import sys
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from bastion.core.errors import StoreUnavailableError
from bastion.core.models import FileInfo
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.stores.memory import MemoryStore
from bastion.workspace import SyncWorkspace
from bastion.workspace.blocking import run_blocking

WHO = contextvars.ContextVar("WHO", default="nobody")


async def _where() -> tuple[int, asyncio.AbstractEventLoop, asyncio.Task[object] | None]:
    return threading.get_ident(), asyncio.get_running_loop(), asyncio.current_task()


async def _where_after_a_wait() -> tuple[int, asyncio.AbstractEventLoop]:
    await asyncio.sleep(0.001)
    await asyncio.to_thread(time.sleep, 0.001)
    return threading.get_ident(), asyncio.get_running_loop()


def _drives_here_again() -> bool:
    """Whether a call from this thread runs in it again, once the standby thread has
    finished the loop's leftover work and let it go (it may take a moment)."""
    for _ in range(500):
        if run_blocking(_where())[0] == threading.get_ident():
            return True
        time.sleep(0.01)
    return False


def test_a_call_runs_in_the_calling_thread_as_a_task_of_one_shared_loop() -> None:
    thread, loop, task = run_blocking(_where())
    assert thread == threading.get_ident()
    assert task is not None  # a real task: asyncio.timeout and current_task work
    with ThreadPoolExecutor(2) as pool:
        other_thread, other_loop, _ = pool.submit(run_blocking, _where()).result()
    assert other_thread != thread
    assert other_loop is loop
    assert run_blocking(_where_after_a_wait()) == (thread, loop)
    with pytest.raises(RuntimeError):  # and no loop is left running in this thread
        asyncio.get_running_loop()


def test_the_bridge_uses_public_asyncio_api_only() -> None:
    # Issue 26: no subclass of the event loop, no private asyncio name (they change between
    # Python versions); one of each would be caught here.
    import ast
    import inspect

    from bastion.workspace import blocking

    tree = ast.parse(inspect.getsource(blocking))
    private: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("asyncio"):
            private += [a.name for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if isinstance(node.value, ast.Name) and node.value.id in {"asyncio", "events"}:
                private.append(node.attr)
        elif isinstance(node, ast.ClassDef):
            private += [ast.unparse(b) for b in node.bases if "Loop" in ast.unparse(b)]
    assert private == []


def test_a_call_that_never_waits_runs_in_the_calling_thread_on_the_shared_loop() -> None:
    loop = run_blocking(_where())[1]

    async def quick() -> tuple[bool, int]:
        return asyncio.get_running_loop().is_running(), threading.get_ident()

    assert run_blocking(quick()) == (True, threading.get_ident())
    ws = SyncWorkspace.create([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())
    ws.write("/m/a.txt", "x")
    assert ws.read_text("/m/a.txt") == "x"
    assert run_blocking(_where_after_a_wait()) == (threading.get_ident(), loop)


def test_results_and_exceptions_come_back_whether_the_call_waits_or_not() -> None:
    async def fails(wait: bool) -> None:
        if wait:
            await asyncio.sleep(0.001)
        raise KeyError("gone")

    async def answer(wait: bool) -> int:
        if wait:
            await asyncio.sleep(0.001)
        return 42

    for wait in (False, True):
        assert run_blocking(answer(wait)) == 42
        with pytest.raises(KeyError, match="gone"):
            run_blocking(fails(wait))


def test_the_callers_context_variables_are_seen_by_the_call() -> None:
    async def who() -> str:
        await asyncio.sleep(0)
        return WHO.get()

    token = WHO.set("caller")
    try:
        assert run_blocking(who()) == "caller"
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(contextvars.copy_context().run, run_blocking, who()).result() == (
                "caller"
            )
    finally:
        WHO.reset(token)


def test_a_timeout_entered_before_the_first_wait_fires() -> None:
    async def slow() -> None:
        async with asyncio.timeout(0.05):
            await asyncio.sleep(10)

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        run_blocking(slow())
    assert time.monotonic() - started < 5


def test_a_mount_timeout_works_through_the_facade() -> None:
    class Stuck(MemoryStore):
        async def stat(self, path: VPath) -> FileInfo:
            if path.name == "stuck.txt":
                await asyncio.sleep(10)
            return await super().stat(path)

    ws = SyncWorkspace.create([Mount.of("/m", Stuck(), timeout=0.1)], policy=Policy.allow_all())
    ws.write("/m/a.txt", "fine")  # bounded by asyncio.timeout, finished in its first step
    assert ws.read_text("/m/a.txt") == "fine"
    ws.write("/m/stuck.txt", "x")
    with pytest.raises(StoreUnavailableError, match="unresponsive"):
        ws.stat("/m/stuck.txt")
    assert ws.read_text("/m/a.txt") == "fine"


def test_threads_share_the_loop_and_its_locks() -> None:
    lock = asyncio.Lock()  # binds to the first loop that waits on it: there is one
    inside = 0
    most = 0

    async def critical(n: int) -> int:
        nonlocal inside, most
        async with lock:
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.0005 if n % 2 else 0)
            await asyncio.to_thread(time.sleep, 0.0005) if n % 3 == 0 else None
            inside -= 1
        return n

    def worker(base: int) -> list[int]:
        return [run_blocking(critical(base + i)) for i in range(25)]

    with ThreadPoolExecutor(8) as pool:
        results = [f.result() for f in [pool.submit(worker, 100 * t) for t in range(8)]]
    assert sorted(n for r in results for n in r) == sorted(
        100 * t + i for t in range(8) for i in range(25)
    )
    assert most == 1
    assert _drives_here_again()


def test_a_task_left_running_by_a_call_keeps_running_after_it() -> None:
    done = threading.Event()

    async def later() -> None:
        await asyncio.sleep(0.02)
        done.set()

    async def starts_a_task() -> str:
        task = asyncio.get_running_loop().create_task(later())
        tasks.append(task)
        return "returned"

    tasks: list[asyncio.Task[None]] = []
    assert run_blocking(starts_a_task()) == "returned"
    assert done.wait(5), "the background task never ran"
    assert tasks[0].done()
    assert _drives_here_again()


def test_subprocesses_run_on_the_shared_loop_from_several_threads() -> None:
    async def child(n: int) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", f"print({n})", stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        assert await proc.wait() == 0
        return out.strip()

    assert run_blocking(child(0)) == b"0"
    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(lambda n: run_blocking(child(n)), range(1, 7))) == [
            str(n).encode() for n in range(1, 7)
        ]


def test_calls_from_inside_a_running_loop_work_and_run_elsewhere() -> None:
    async def app() -> tuple[int, int, str]:
        thread, _, _ = run_blocking(_where())
        waited, _ = run_blocking(_where_after_a_wait())
        ws = SyncWorkspace.create([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())
        ws.write("/m/a.txt", "inside")
        return thread, waited, ws.read_text("/m/a.txt")

    thread, waited, text = asyncio.run(app())
    assert threading.get_ident() not in (thread, waited)
    assert text == "inside"


def test_a_blocking_call_from_a_call_it_runs_refuses_clearly() -> None:
    async def nested() -> None:
        run_blocking(asyncio.sleep(0))

    with pytest.raises(RuntimeError, match="await the async API"):
        run_blocking(nested())
    assert _drives_here_again()


def test_an_abandoned_async_generator_is_closed_on_the_loop() -> None:
    closed = threading.Event()

    async def numbers() -> AsyncIterator[int]:
        try:
            for n in range(10):
                yield n
        finally:
            await asyncio.sleep(0)  # its clean-up awaits: it must run on a loop
            closed.set()

    async def first() -> int:
        async for n in numbers():
            return n
        return -1

    assert run_blocking(first()) == 0  # the call never waited; the clean-up does
    gc.collect()
    assert closed.wait(5)


def test_many_threads_mixing_quick_and_waiting_calls() -> None:
    ws = SyncWorkspace.create([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())

    async def waits(n: int) -> int:
        await asyncio.sleep(0)
        return n

    def worker(t: int) -> list[str]:
        out = []
        for i in range(20):
            ws.write(f"/m/{t}/{i}.txt", f"{t}-{i}")
            assert run_blocking(waits(i)) == i
            out.append(ws.read_text(f"/m/{t}/{i}.txt"))
        return out

    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(worker, range(6)))
    assert outs == [[f"{t}-{i}" for i in range(20)] for t in range(6)]


@pytest.fixture
def no_fork_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
        yield


@pytest.mark.usefixtures("no_fork_warning")
def test_a_forked_child_gets_a_fresh_loop() -> None:
    run_blocking(_where_after_a_wait())  # the parent's loop exists (and may be held)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if blocking calls work there
        code = 1
        try:
            thread, _ = run_blocking(_where_after_a_wait())
            code = 0 if thread == threading.get_ident() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
