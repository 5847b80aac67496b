"""No lost update across processes, through the workspace and the tools (variants of issue 16).

Each helper process runs ``python -c`` with the project (as ``tests/knowledge/
test_index_processes.py`` does): it opens its own workspace over the shared local folder (or
SQLite file), runs one loop and prints one JSON line per acknowledged change. The parent
checks what is on disk against what was acknowledged:

* ``edit`` without a caller's version, and the agent tools' read-then-``write_file``, used as
  compare-and-set increments: the final value is the number of acknowledged increments;
* ``write(backup=True)`` from several processes: the backup always holds what the last write
  replaced (local versions start with the file's modification time, which every write of one
  file moves forward under its lock, so sorting the acknowledged versions gives the file's
  history);
* ``write(mode="create")`` through the workspace: one winner per name, the losers told so in
  one line;
* a writer killed (SIGKILL) in the middle of a large write leaves its temporary file: never
  listed, globbed, grepped or searched, and no obstacle to deleting the folder it is in;
* on a filesystem that keeps file times in whole seconds (ext4 with 128-byte inodes, loop
  mounted; skipped, saying why, where it cannot be), versions never repeat: the inode numbers
  of a file rewritten twice in one second used to alternate, and a stale ``if_version`` went
  through;
* a move refused because its target exists leaves the target as it was (it used to write
  the moved file's sidecar there first, relabelling the file it did not replace);
* a relabelling by sidecar in one process hides the file from the next search of an
  unauthorised principal in another process that has its index open.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import (
    AlreadyExistsError,
    ConflictError,
    LocalStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    Workspace,
)
from bastion.core.errors import DirectoryNotEmptyError, StoreError
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.stores._fd import TEMP_PREFIX

ADMIN = Principal.of("admin", roles={"hr"}, clearance="restricted")
VISITOR = Principal.of("visitor")
WORKERS = 3
ROUNDS = 20
BIG = 8 << 20

CHILD = r"""
import asyncio, json, sys
from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools.session import ToolSession
from bastion.core.errors import (
    AlreadyExistsError, ConflictError, EditError, NotFoundError, StoreError,
)
from bastion.core.paths import VPath

spec, action, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])


def open_store():
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        from bastion.stores.sqlite import SqliteStore
        return SqliteStore(where)
    if kind == "postgres":
        from bastion.stores.postgres import PostgresStore
        return PostgresStore(where)
    return LocalStore(where)


def say(value):
    print(json.dumps(value), flush=True)


async def main():
    ws = Workspace(
        [Mount.of("/m", open_store())],
        policy=Policy.allow_all(),
        principal=Principal.of("admin", roles={"hr"}, clearance="restricted"),
    )
    n = args.get("n", 0)
    if args.get("barrier"):  # start together with the others
        say("ready")
        sys.stdin.readline()
    if action == "edit":  # increments by edit, with no version of the caller's
        done = 0
        while done < n:
            k = int((await ws.read_text("/m/counter")).strip().removeprefix("n="))
            try:
                await ws.edit("/m/counter", f"n={k}\n", f"n={k + 1}\n")
            except (ConflictError, EditError):
                continue
            done += 1
            say(k + 1)
    elif action == "tools":  # increments by the agent tools' read, then write
        session = ToolSession(ws)
        path = VPath.parse("/m/counter")
        done = 0
        while done < n:
            text, _ = await session.read_lines(path, 0, 10)
            k = int(text.strip().removeprefix("n="))
            try:
                await session.write(path, f"n={k + 1}\n")
            except ConflictError:
                continue
            done += 1
            say(k + 1)
    elif action == "append":
        for i in range(n):
            await ws.append("/m/log.txt", f"{args['tag']}-{i:03d}\n")
            say(i)
    elif action == "backup":  # one write with a backup per line read
        for i, _ in enumerate(sys.stdin):
            body = f"{args['tag']}-{i}\n"
            info = await ws.write("/m/f.txt", body, backup=True)
            say([body, info.version])
    elif action == "create":
        for name in args["names"]:
            try:
                await ws.write(name, args["tag"], mode="create")
            except AlreadyExistsError as exc:
                say(["lost", name, str(exc)])
            except StoreError as exc:
                say(["error", name, type(exc).__name__, str(exc)])
            else:
                say(["won", name])
    elif action == "big":  # large writes until killed
        chunk = b"y" * args["size"]
        for i in range(10_000):
            await ws.write(f"/m/d/big-{i}", chunk)
            say(i)
    elif action == "churn":  # create a file, delete whatever is there (with its sidecar)
        for i in range(n):
            for step in ("create", "delete"):
                try:
                    if step == "create":
                        await ws.write("/m/f.txt", f"plain {i}\n", mode="create")
                    else:
                        await ws.delete("/m/f.txt")
                except (AlreadyExistsError, NotFoundError) as exc:
                    say(["expected", type(exc).__name__])
                except Exception as exc:
                    say(["error", type(exc).__name__, str(exc)])
    elif action == "label-then-create":  # a sidecar, then the file it labels
        for i in range(n):
            try:
                await ws.write("/m/f.txt.labels.yaml", "roles: [hr]\n")
                await ws.write("/m/f.txt", f"secret {i}\n", mode="create")
            except AlreadyExistsError as exc:
                say(["expected", type(exc).__name__])
            except Exception as exc:
                say(["error", type(exc).__name__, str(exc)])
    elif action == "write":
        for path, text in args["files"].items():
            await ws.write(path, text)
        say("done")

asyncio.run(main())
"""


def _spawn(spec: str, action: str, **args: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, spec, action, json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _acks(children: list[subprocess.Popen[str]]) -> list[list[Any]]:
    """Each child's acknowledged changes, once all have finished."""
    results = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err[-2000:]
        results.append([json.loads(line) for line in out.splitlines() if line.strip()])
    return results


@pytest.fixture(params=["local", "sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'ws.db'}"
    if request.param == "postgres":
        return f"postgres:{request.getfixturevalue('pg_dsn')}"
    (tmp_path / "root").mkdir()
    return f"local:{tmp_path / 'root'}"


def _workspace(spec: str, principal: Principal = ADMIN, **kwargs: Any) -> Workspace:
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        from bastion.stores.sqlite import SqliteStore

        store: Any = SqliteStore(where)
    elif kind == "postgres":
        from bastion.stores.postgres import PostgresStore

        store = PostgresStore(where)
    else:
        store = LocalStore(where)
    return Workspace(
        [Mount.of("/m", store)], policy=Policy.allow_all(), principal=principal, **kwargs
    )


# -- compare-and-set through edit and through the tools --------------------------------------


@pytest.mark.parametrize("action", ["edit", "tools"])
async def test_increments_through_edit_and_the_tools_lose_nothing(spec: str, action: str) -> None:
    ws = _workspace(spec)
    await ws.write("/m/counter", "n=0\n")
    acks = _acks([_spawn(spec, action, n=ROUNDS) for _ in range(WORKERS)])
    values = sorted(v for worker in acks for v in worker)
    assert values == list(range(1, WORKERS * ROUNDS + 1))  # each value acknowledged once
    assert await ws.read_text("/m/counter") == f"n={WORKERS * ROUNDS}\n"


async def test_appends_through_the_workspace_keep_every_line(spec: str) -> None:
    ws = _workspace(spec)
    await ws.write("/m/log.txt", "")
    acks = _acks([_spawn(spec, "append", n=ROUNDS, tag=f"w{n}") for n in range(WORKERS)])
    assert all(len(worker) == ROUNDS for worker in acks)
    lines = (await ws.read_text("/m/log.txt")).splitlines()
    expected = sorted(f"w{n}-{i:03d}" for n in range(WORKERS) for i in range(ROUNDS))
    assert sorted(lines) == expected  # each once, whole
    for n in range(WORKERS):  # and each writer's in its own order
        mine = [line for line in lines if line.startswith(f"w{n}-")]
        assert mine == sorted(mine)


# -- backups ----------------------------------------------------------------------------------


async def test_concurrent_backups_hold_what_the_last_write_replaced(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    ws = _workspace(f"local:{root}")
    await ws.write("/m/f.txt", "start\n")
    children = [_spawn(f"local:{root}", "backup", tag=f"w{n}") for n in range(WORKERS)]
    history: list[tuple[int, str]] = []
    try:
        for _ in range(ROUNDS * 2):  # each round: every worker writes once, all at once
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            for child in children:
                assert child.stdout is not None
                line = child.stdout.readline()
                assert line, child.communicate(timeout=60)[1][-2000:]
                body, version = json.loads(line)
                # a local version is "<mtime_ns>-<size>-<inode>" in hex, and every write of
                # one file moves its mtime forward under its lock: the mtimes order the writes
                history.append((int(version.split("-")[0], 16), body))
            history.sort()
            assert await ws.read_text("/m/f.txt") == history[-1][1]
            assert await ws.read_text("/m/f.txt.bak") == history[-2][1]
    finally:
        for child in children:
            child.kill()
            child.communicate(timeout=60)
    assert len({stamp for stamp, _ in history}) == len(history)


async def test_a_backup_on_a_store_without_cross_process_checks_still_works(
    tmp_path: Path,
) -> None:
    """A store that refuses ``if_version`` (a plain fsspec folder shared by processes) keeps
    its weaker promise for backups: the write goes on unconditionally, as before."""
    import fsspec

    from bastion.stores.fsspec import FsspecStore

    store = FsspecStore(fsspec.filesystem("file"), root=str(tmp_path))
    ws = Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=ADMIN)
    await ws.write("/m/f.txt", "one\n")
    with pytest.raises(StoreError, match="cannot check versions"):
        await ws.write("/m/f.txt", "x\n", if_version="anything")
    await ws.write("/m/f.txt", "two\n", backup=True)
    assert await ws.read_text("/m/f.txt") == "two\n"
    assert await ws.read_text("/m/f.txt.bak") == "one\n"


# -- a mode spelled as a string ------------------------------------------------------------------


def _raw_store(kind: str, tmp_path: Path) -> Any:
    if kind == "local":
        return LocalStore(tmp_path)
    if kind == "sqlite":
        from bastion.stores.sqlite import SqliteStore

        return SqliteStore(tmp_path / "ws.db")
    if kind == "memory":
        from bastion import MemoryStore

        return MemoryStore()
    if kind == "fsspec-memory":
        import fsspec

        from bastion.stores.fsspec import FsspecStore

        return FsspecStore(fsspec.filesystem("memory", skip_instance_cache=True), root="/t")
    from langgraph.store.memory import InMemoryStore

    from bastion.stores.langgraph import LangGraphStore

    return LangGraphStore(InMemoryStore(), ("t",))


@pytest.mark.parametrize("kind", ["local", "sqlite", "memory", "fsspec-memory", "langgraph"])
async def test_a_mode_given_as_a_string_is_that_mode_on_every_store(
    kind: str, tmp_path: Path
) -> None:
    """``mode="create"`` (as the docs spell it) is create-only on a bare store too; it used to
    be compared by identity with ``WriteMode.CREATE`` and so overwrote the file."""
    store = _raw_store(kind, tmp_path)
    path = VPath.parse("/f")
    await store.write(path, b"keep")
    with pytest.raises(AlreadyExistsError):
        await store.write(path, b"lost?", mode="create")
    await store.write(path, b"+", mode="append")
    assert await store.read_all(path) == b"keep+"


# -- create-only through the workspace ----------------------------------------------------------


async def test_create_races_through_the_workspace_have_one_winner(spec: str) -> None:
    names = [f"/m/claims/{n}" for n in range(12)]
    acks = _acks([_spawn(spec, "create", names=names, tag=f"w{n}") for n in range(WORKERS)])
    ws = _workspace(spec)
    for name in names:
        outcomes = [next(a for a in worker if a[1] == name) for worker in acks]
        winners = [n for n, a in enumerate(outcomes) if a[0] == "won"]
        assert len(winners) == 1, outcomes
        assert await ws.read_text(name) == f"w{winners[0]}"
        for outcome in outcomes:
            if outcome[0] != "won":
                assert outcome[0] == "lost", outcome  # never a store error, never a lost write
                assert "\n" not in outcome[2] and "already exists" in outcome[2]


# -- a writer killed in the middle of a large write ------------------------------------------


def _temp_files(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith(TEMP_PREFIX)]


async def test_a_killed_writer_s_temporary_file_is_invisible_and_in_nobody_s_way(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    for _ in range(20):  # until a kill lands while a temporary file is there
        child = _spawn(f"local:{root}", "big", size=BIG)
        while not _temp_files(root / "d") and child.poll() is None:
            time.sleep(0.001)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)
        if _temp_files(root / "d"):
            break
    leftovers = _temp_files(root / "d")
    assert leftovers, "no kill landed during a write"
    ws = _workspace(f"local:{root}")
    for entry in await ws.list("/m/d"):  # every file whole, never torn
        assert entry.size == BIG
        assert await ws.read_bytes(entry.path, start=BIG - 4) == b"yyyy"
    names = {e.path for e in await ws.list("/m", recursive=True)}
    assert not any(TEMP_PREFIX in str(name) for name in names)
    assert not any(TEMP_PREFIX in str(p) for p in await ws.glob("/m/**"))
    grepped = await ws.grep("y", "/m/d", max_total=5)
    assert not any(TEMP_PREFIX in m.path for m in grepped.matches)
    for leftover in leftovers:
        with pytest.raises(Exception, match=r"reserved|not found"):
            await ws.read_text(f"/m/d/{leftover}")
    # the folder looks empty once its files are deleted: it can be deleted without recursive
    for entry in await ws.list("/m/d"):
        await ws.delete(entry.path)
    assert await ws.list("/m/d") == []
    await ws.delete("/m/d")
    assert not (root / "d").exists()


HOLD = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_temporary_file_in_use_keeps_its_folder_and_nobody_waits(tmp_path: Path) -> None:
    """While a writer holds the folder's lock its temporary file may be in use: the delete
    refuses at once instead of waiting (waiting could deadlock with a move that holds the
    folder's lock and waits for the parent's, which the delete holds)."""
    (tmp_path / "d").mkdir()
    leftover = tmp_path / "d" / f"{TEMP_PREFIX}0123456789abcdef"
    leftover.write_bytes(b"half a file")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "d")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        outcome: list[BaseException | None] = []

        def delete() -> None:
            try:
                asyncio.run(_workspace(f"local:{tmp_path}").delete("/m/d"))
                outcome.append(None)
            except BaseException as exc:  # handed to the test thread
                outcome.append(exc)

        worker = threading.Thread(target=delete, daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), "the delete waits for the writer's lock"
        assert isinstance(outcome[0], DirectoryNotEmptyError)
        assert leftover.exists()
    finally:
        holder.communicate("go\n", timeout=60)
    asyncio.run(_workspace(f"local:{tmp_path}").delete("/m/d"))  # the writer is gone
    assert not (tmp_path / "d").exists()


# -- a refused move changes nothing --------------------------------------------------------------


@pytest.mark.parametrize("verb", ["move", "copy"])
async def test_a_move_refused_by_an_existing_target_leaves_its_labels(
    tmp_path: Path, verb: str
) -> None:
    ws = _workspace(f"local:{tmp_path}")
    await ws.write("/m/plan.txt", "secret plan\n")
    await ws.write("/m/plan.txt.labels.yaml", "roles: [hr]\n")
    await ws.write("/m/open.md", "canteen menu\n")
    with pytest.raises(AlreadyExistsError, match="already exists"):
        await getattr(ws, verb)("/m/plan.txt", "/m/open.md")
    assert await ws.with_principal(VISITOR).read_text("/m/open.md") == "canteen menu\n"
    assert not (tmp_path / "open.md.labels.yaml").exists()
    assert await ws.read_text("/m/plan.txt") == "secret plan\n"


# -- labels computed while another process deletes ----------------------------------------------


def test_writes_racing_a_delete_of_the_file_and_its_sidecar_report_what_happened(
    tmp_path: Path,
) -> None:
    """One process creates and deletes a file (its sidecar goes with it); another writes a
    sidecar, then creates the file. Every write that lands is reported as done: the labels
    of the written file, computed after the write, used to read a sidecar (or the file) the
    other process had just deleted, and a write that had landed was reported as "parent
    directory /m does not exist" (70 times in 600 rounds each), or a sidecar write failed
    with the bare store error "/f.txt not found"."""
    spec = f"local:{tmp_path}"
    children = [
        _spawn(spec, action, n=ROUNDS * 30, barrier=True)
        for action in ("churn", "label-then-create")
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == '"ready"', child.communicate()[1][-2000:]
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    acks = _acks(children)
    errors = [a for worker in acks for a in worker if a[0] == "error"]
    assert errors == []
    assert any(a[0] == "expected" for a in acks[1])  # the two did meet


# -- the index follows a relabelling made in another process -----------------------------------


@pytest.mark.parametrize(
    "relabel",
    [
        {"/m/plan.md.labels.yaml": "roles: [hr]\n"},
        {"/m/plan.md": "---\nroles: [hr]\n---\n# Plan\n\npelican budget figures\n"},
    ],
    ids=["sidecar", "front-matter"],
)
async def test_a_relabelling_in_another_process_hides_the_next_search_hit(
    tmp_path: Path, relabel: dict[str, str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    knowledge = Knowledge.open(tmp_path / "index", embedder=None)
    try:
        ws = _workspace(f"local:{root}", knowledge=knowledge)
        visitor = ws.with_principal(VISITOR)
        await ws.write("/m/plan.md", "# Plan\n\npelican budget figures\n")
        hits = await visitor.search("pelican", mode="bm25")
        assert [h.path for h in hits.hits] == ["/m/plan.md"]
        # another process (its own workspace, no index) relabels the file
        _acks([_spawn(f"local:{root}", "write", files=relabel)])
        assert not (await visitor.search("pelican", mode="bm25")).hits
        with pytest.raises(NotFoundError):
            await visitor.read_text("/m/plan.md")
        assert [h.path for h in (await ws.search("pelican", mode="bm25")).hits] == ["/m/plan.md"]
    finally:
        knowledge.close()


# -- a filesystem that keeps file times in whole seconds -------------------------------------


@pytest.fixture
def coarse_disk(tmp_path: Path) -> Iterator[Path]:
    """A loop-mounted ext4 with 128-byte inodes: its file times are whole seconds."""
    if shutil.which("mount") is None or shutil.which("mkfs.ext4") is None:
        pytest.skip("needs mount and mkfs.ext4 (util-linux, e2fsprogs) to make a coarse disk")
    if os.geteuid() != 0:
        pytest.skip("needs root to loop-mount a disk with second timestamps (runs as a user)")
    image, where = tmp_path / "disk.img", tmp_path / "disk"
    where.mkdir()
    with image.open("wb") as f:
        f.truncate(32 << 20)
    made = subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-I", "128", str(image)],
        check=False,
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"mkfs.ext4 -I 128 failed here: {made.stderr.strip()}")
    mounted = subprocess.run(
        ["mount", "-o", "loop", str(image), str(where)], check=False, capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot loop-mount a disk here (needs CAP_SYS_ADMIN): {mounted.stderr}")
    try:
        probe = where / "probe"
        probe.write_bytes(b"")
        os.utime(probe, ns=(1_700_000_000_123_456_789,) * 2)
        assert probe.stat().st_mtime_ns % 1_000_000_000 == 0  # whole seconds indeed
        probe.unlink()
        (where / "root").mkdir()
        yield where / "root"
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


async def test_versions_never_repeat_on_a_disk_with_second_timestamps(coarse_disk: Path) -> None:
    store = LocalStore(coarse_disk)
    path = VPath.parse("/f")
    versions = [(await store.write(path, b"v%02d" % i)).version for i in range(12)]
    assert len(set(versions)) == len(versions)
    stale = (await store.write(path, b"AAA")).version
    await store.write(path, b"BBB")
    await store.write(path, b"CCC")  # same size, same second, the first inode number again
    with pytest.raises(ConflictError):
        await store.write(path, b"DDD", if_version=stale)
    assert await store.read_all(path) == b"CCC"


async def test_processes_lose_no_update_on_a_disk_with_second_timestamps(
    coarse_disk: Path,
) -> None:
    spec = f"local:{coarse_disk}"
    ws = _workspace(spec)
    await ws.write("/m/counter", "n=0\n")
    acks = _acks([_spawn(spec, "edit", n=ROUNDS * 2) for _ in range(WORKERS + 1)])  # 4 x 40
    values = sorted(v for worker in acks for v in worker)
    assert values == list(range(1, (WORKERS + 1) * ROUNDS * 2 + 1))
    assert await ws.read_text("/m/counter") == f"n={(WORKERS + 1) * ROUNDS * 2}\n"
