"""The index follows the files across real processes sharing one folder and one index folder.

Each helper process runs ``python -c`` with the project: it opens its own workspace over the
same local folder and the same persistent index, does one thing and prints JSON. The index is
the embedded one (``Knowledge.open``, LanceDB, keyword-only) or, for the tests that do not
depend on LanceDB's internals, a ``PostgresIndex`` on the test PostgreSQL. A write through one process is found by the next search in another;
a process killed (``SIGKILL``) between its file write and its index update leaves no hit that
points at content the file no longer has, nor one that carries the file's old labels.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.knowledge.engine import Knowledge

ADMIN = Principal.of("admin", clearance="restricted")
PUBLIC = Principal.of("visitor")

CHILD = r"""
import asyncio, json, os, sys, time
from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.knowledge.engine import Knowledge
from bastion.workspace.indexing import KnowledgeLink

root, index, action, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])


def open_knowledge(spec):
    kind, _, where = spec.partition(":")
    if kind == "postgres":
        from bastion.knowledge.index.postgres import PostgresIndex
        return Knowledge(PostgresIndex(where, dim=None))
    return Knowledge.open(where, embedder=None)

if action == "die-before-index":  # the file is written; the process dies before the index hears
    async def stop(self, vp, classifications):
        print("written", flush=True)
        time.sleep(600)
    KnowledgeLink.file_changed = stop

if action == "die-holding-index-lock":  # killed in the middle of an index write
    from bastion.knowledge.index.lance import LanceIndex
    def stuck(self, *args):
        print("locked", flush=True)
        time.sleep(600)
    LanceIndex._merge_rows = stuck

async def main():
    ws = Workspace(
        [Mount.of("/", LocalStore(root))],
        policy=Policy.allow_all(),
        knowledge=open_knowledge(index),
        principal=Principal.of("admin", clearance="restricted"),
    )
    if action == "search":
        result = await ws.search(args["query"], mode="bm25", k=50)
        print(json.dumps([[h.path, h.snippet] for h in result.hits]))
        return
    for path, text in args["files"].items():
        if text is None:
            await ws.delete(path)
        else:
            await ws.write(path, text, parents=True)
    print(json.dumps("done"))

asyncio.run(main())
"""


Place = tuple[Path, str]
"""The shared folder of files, and the index as ``lance:<folder>`` or ``postgres:<dsn>``."""


@pytest.fixture(params=["lance", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    root = tmp_path / "files"
    root.mkdir()
    if request.param == "postgres":
        return root, "postgres:" + request.getfixturevalue("pg_dsn")
    return root, f"lance:{tmp_path / 'index'}"


def _open_knowledge(spec: str) -> Knowledge:
    kind, _, where = spec.partition(":")
    if kind == "postgres":
        from bastion.knowledge.index.postgres import PostgresIndex

        return Knowledge(PostgresIndex(where, dim=None))
    return Knowledge.open(where, embedder=None)


def _spawn(place: Place, action: str, **args: Any) -> subprocess.Popen[str]:
    root, index = place
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), index, action, json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(place: Place, action: str, **args: Any) -> Any:
    child = _spawn(place, action, **args)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _killed_after(child: subprocess.Popen[str], line: str) -> None:
    """Wait for the child to print ``line``, then kill it with SIGKILL."""
    assert child.stdout is not None
    got = child.stdout.readline().strip()
    if got != line:
        child.kill()
        _, err = child.communicate(timeout=60)
        pytest.fail(f"helper process said {got!r}, not {line!r}: {err}")
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL


@pytest.fixture
def open_ws(place: Place) -> Iterator[Any]:
    opened: list[Knowledge] = []

    def make(principal: Principal = ADMIN) -> Workspace:
        knowledge = _open_knowledge(place[1])
        opened.append(knowledge)
        return Workspace(
            [Mount.of("/", LocalStore(place[0]))],
            policy=Policy.allow_all(),
            knowledge=knowledge,
            principal=principal,
        )

    yield make
    for knowledge in opened:
        knowledge.close()


def _paths(result: Any) -> list[str]:
    return sorted(h.path for h in result.hits)


async def test_a_write_in_one_process_is_found_by_the_next_search_in_another(
    place: Place, open_ws: Any
) -> None:
    here = open_ws()
    await here.write("/docs/local.md", "# Local\n\nkestrel field notes\n", parents=True)
    # Written by another process, into an index table this process has not opened (/wiki).
    _run(place, "write", files={"/wiki/far.md": "# Far\n\nkestrel migration routes\n"})
    assert _paths(await here.search("kestrel", mode="bm25")) == ["/docs/local.md", "/wiki/far.md"]

    _run(place, "write", files={"/wiki/far.md": "# Far\n\nosprey routes\n", "/docs/local.md": None})
    assert _paths(await here.search("kestrel", mode="bm25")) == []
    assert _paths(await here.search("osprey", mode="bm25")) == ["/wiki/far.md"]

    # ...and the other way round: the helper's search finds what this process wrote.
    await here.write("/wiki/near.md", "# Near\n\nosprey nest\n")
    found = _run(place, "search", query="osprey")
    assert sorted(path for path, _ in found) == ["/wiki/far.md", "/wiki/near.md"]


async def test_processes_writing_at_once_lose_no_index_update(place: Place, open_ws: Any) -> None:
    here = open_ws()
    writers = [
        _spawn(
            place,
            "write",
            files={f"/docs/w{n}-{i}.md": f"# W{n}\n\nheron count {n} {i}\n" for i in range(8)},
        )
        for n in range(3)
    ]
    for child in writers:
        _, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
    expected = sorted(f"/docs/w{n}-{i}.md" for n in range(3) for i in range(8))
    assert _paths(await here.search("heron", mode="bm25", k=100)) == expected
    fresh = open_ws()  # what is on disk, read by a process that starts now
    assert _paths(await fresh.search("heron", mode="bm25", k=100)) == expected
    assert fresh._link().knowledge.index.count() == len(expected)


async def test_a_kill_between_file_write_and_index_update_leaves_no_stale_hit(
    place: Place, open_ws: Any
) -> None:
    here = open_ws()
    await here.write("/docs/plan.md", "# Plan\n\norbit launch on Monday\n", parents=True)
    public = here.with_principal(PUBLIC)
    assert _paths(await public.search("orbit", mode="bm25")) == ["/docs/plan.md"]

    # Another process relabels the plan (front matter) and dies before updating the index.
    secret = "---\nclassification: restricted\n---\n# Plan\n\norbit launch moved to Friday\n"
    _killed_after(_spawn(place, "die-before-index", files={"/docs/plan.md": secret}), "written")
    # This process's index still holds the old, public version: the hit is checked against
    # the file, so the visitor is not shown the (now restricted) document.
    assert _paths(await public.search("orbit", mode="bm25")) == []
    [hit] = (await here.search("orbit", mode="bm25")).hits
    assert "Friday" in hit.snippet and hit.labels.classification == "restricted"

    # A file written just before a kill is not in the index until a reindex (or a reopen
    # followed by one) finds it; then it is found with its current content.
    _killed_after(
        _spawn(place, "die-before-index", files={"/docs/new.md": "# New\n\norbit debris\n"}),
        "written",
    )
    reopened = open_ws(PUBLIC)
    assert _paths(await reopened.search("debris", mode="bm25")) == []
    summary = await open_ws().reindex()
    assert summary.indexed == 1
    assert _paths(await reopened.search("orbit", mode="bm25")) == ["/docs/new.md"]


@pytest.mark.parametrize("place", ["lance"], indirect=True)  # the embedded index's own lock
async def test_a_process_killed_inside_an_index_write_does_not_block_the_others(
    place: Place, open_ws: Any
) -> None:
    here = open_ws()
    await here.write("/docs/a.md", "# A\n\nplover\n", parents=True)
    _killed_after(
        _spawn(place, "die-holding-index-lock", files={"/docs/b.md": "# B\n\nplover eggs\n"}),
        "locked",
    )
    # The kernel released the dead process's lock: this write goes through at once.
    await here.write("/docs/c.md", "# C\n\nplover chicks\n")
    assert _paths(await here.search("plover", mode="bm25")) == ["/docs/a.md", "/docs/c.md"]
    await here.reindex()  # b.md reached the disk, not the index: reindex finds it
    assert _paths(await here.search("plover", mode="bm25")) == [
        "/docs/a.md",
        "/docs/b.md",
        "/docs/c.md",
    ]
