"""No lost update where directories and writes race: ``mkdir`` over a file says so, a create has
one winner (red-team variants of issue 16, class: *lost updates*; docs/security.md,
docs/stores.md).

* ``mkdir(exist_ok=True)`` over a file (made first, or by another writer in between) used to
  answer as if the directory were there, on every store; the next write below it then failed
  far from the cause. Now it says the name is a file, as ``os.makedirs`` does, and for a file
  the principal may not see it answers exactly as before (the guard's answer).
* create races through the workspace between processes: one winner per name, each loser told
  so in one line, the winner's content whole (local disk, SQLite).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import (
    AlreadyExistsError,
    Labels,
    LocalStore,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Workspace,
)
from bastion.core.errors import OperationError
from bastion.core.ports import Store
from bastion.stores.sqlite import SqliteStore

ADMIN = Principal.of("admin", roles={"hr"}, clearance="restricted")
VISITOR = Principal.of("visitor")


@pytest.fixture(params=["memory", "local", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store
    if request.param == "local":
        made = LocalStore(tmp_path)
    elif request.param == "sqlite":
        made = SqliteStore(tmp_path / "ws.db")
    else:
        made = MemoryStore()
    yield made
    if isinstance(made, SqliteStore):
        made.close()


def _ws(store: Store, principal: Principal = ADMIN) -> Workspace:
    return Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=principal)


@pytest.mark.parametrize("parents", [True, False])
async def test_mkdir_over_a_file_says_it_is_a_file(store: Store, parents: bool) -> None:
    ws = _ws(store)
    await ws.write("/m/x", "a file\n")
    with pytest.raises(AlreadyExistsError, match="is a file"):
        await ws.mkdir("/m/x", parents=parents)
    with pytest.raises(AlreadyExistsError):
        await ws.mkdir("/m/x", parents=parents, exist_ok=False)
    assert await ws.read_text("/m/x") == "a file\n"
    await ws.mkdir("/m/d", parents=parents)
    await ws.mkdir("/m/d", parents=parents)  # a directory already there: still fine
    assert (await ws.stat("/m/d")).is_dir


async def test_mkdir_over_a_hidden_file_answers_as_before(store: Store) -> None:
    """The check of the kind is made through the guard: a file the principal may not see is
    never described (it answers what the guard answered before the check existed)."""
    admin = _ws(store)
    await admin.write("/m/secret", "---\nclassification: restricted\n---\nx\n")
    await admin.write("/m/secret2.labels.yaml", "classification: restricted\n")
    await admin.write("/m/secret2", "y\n")
    visitor = _ws(store, VISITOR)
    answers = []
    for name in ("/m/secret", "/m/secret2", "/m/free"):
        try:
            await visitor.mkdir(name)
        except OperationError as exc:
            answers.append((type(exc).__name__, str(exc).replace(name, "NAME")))
        else:
            answers.append(("ok", ""))
    # the two hidden names answer alike, and neither says "file" or "exists"
    assert answers[0] == answers[1]
    assert "file" not in answers[0][1] and "exists" not in answers[0][1]
    assert answers[2] == ("ok", "")
    assert await admin.read_text("/m/secret2") == "y\n"


async def test_mkdir_on_a_labelled_mount_over_a_file(tmp_path: Path) -> None:
    ws = Workspace(
        [Mount.of("/m", LocalStore(tmp_path), labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        principal=ADMIN,
    )
    await ws.write("/m/x", "a file\n")
    with pytest.raises(AlreadyExistsError, match="is a file"):
        await ws.mkdir("/m/x")


# -- create races between processes ------------------------------------------------------------

CHILD = r"""
import asyncio, json, sys
from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import AlreadyExistsError, IsADirectoryError_, NotADirectoryError_

spec, tag = sys.argv[1], sys.argv[2]
kind, _, where = spec.partition(":")
if kind == "sqlite":
    from bastion.stores.sqlite import SqliteStore
    store = SqliteStore(where)
else:
    store = LocalStore(where)
ws = Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=Principal.of("a"))


async def main():
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(15):
        name = f"/m/d{i}/f.txt"
        try:  # parents made on demand by several writers at once
            await ws.write(name, f"{tag} {i}\n" * 50, mode="create")
        except AlreadyExistsError as exc:
            print(json.dumps(["lost", i, str(exc)]), flush=True)
        else:
            print(json.dumps(["won", i]), flush=True)
        try:  # a folder and a file made at one name by two writers
            if tag.endswith("0"):
                await ws.mkdir(f"/m/e{i}")
            else:
                await ws.write(f"/m/e{i}", tag, mode="create")
            print(json.dumps(["made", i]), flush=True)
        except (AlreadyExistsError, IsADirectoryError_, NotADirectoryError_) as exc:
            print(json.dumps(["taken", i, type(exc).__name__, str(exc)]), flush=True)

asyncio.run(main())
"""


@pytest.fixture(params=["local", "sqlite"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'ws.db'}"
    (tmp_path / "root").mkdir()
    return f"local:{tmp_path / 'root'}"


def test_create_and_mkdir_races_between_processes(spec: str) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, spec, f"w{n}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.communicate()[1][-2000:]
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    results = []
    for n, child in enumerate(children):
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-2000:]
        results.append((f"w{n}", [json.loads(line) for line in out.splitlines()]))
    kind, _, where = spec.partition(":")
    store: Store = SqliteStore(where) if kind == "sqlite" else LocalStore(where)
    ws = _ws(store)

    import asyncio

    async def check() -> None:
        for i in range(15):
            winners = [tag for tag, lines in results if ["won", i] in lines]
            assert len(winners) == 1, (i, results)
            for _tag, lines in results:
                for line in lines:
                    if line[:2] == ["lost", i]:
                        assert line[2] == f"/m/d{i}/f.txt already exists", line
            assert await ws.read_text(f"/m/d{i}/f.txt") == f"{winners[0]} {i}\n" * 50
            # the name e{i}: one folder or one file, and whoever was told "made" got it
            info = await ws.stat(f"/m/e{i}")
            made = [tag for tag, lines in results if ["made", i] in lines]
            if info.is_dir:
                assert made == ["w0"], (i, results)
            else:
                assert len(made) == 1 and made[0] != "w0", (i, results)
                assert await ws.read_text(f"/m/e{i}") == made[0]

    try:
        asyncio.run(check())
    finally:
        if isinstance(store, SqliteStore):
            store.close()
