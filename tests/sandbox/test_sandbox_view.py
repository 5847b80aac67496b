"""Behaviour of ``Workspace.run``: the command sees exactly the principal's view, and what it
changes comes back through the guard (policy, scope, conflicts, audit, the index following).

Real bubblewrap, real processes; skipped only where bubblewrap cannot run (the skip says why).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_support import OWNER, READER, require_bwrap, workspace

from bastion import MemoryStore, Mount, Policy, PolicyDeniedError, Principal, Rule, Workspace
from bastion.core.models import FILE_ACTIONS, Action
from bastion.core.paths import VPath
from bastion.sandbox import RunResult, SandboxError
from bastion.sandbox.view import diff, materialize
from bastion.sandbox.writeback import write_back

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


async def _visible_files(ws: Workspace) -> dict[str, str]:
    found = {}
    for entry in await ws.list("/", recursive=True):
        if entry.is_file:
            found[str(entry.path)] = await ws.read_text(entry.path)
    return found


# -- permission ------------------------------------------------------------------------------


def test_star_does_not_grant_execute() -> None:
    assert Action.EXECUTE.operator
    assert Action.EXECUTE not in FILE_ACTIONS
    policy = Policy.from_dict({"rules": [{"effect": "allow", "actions": ["*"], "paths": ["/**"]}]})
    assert not policy.decide(READER, Action.EXECUTE, VPath.parse("/scratch")).allowed
    assert policy.decide(READER, Action.WRITE, VPath.parse("/scratch")).allowed


async def test_run_needs_execute_on_the_working_folder() -> None:
    ws = await workspace()
    only_files = Workspace(
        ws.mounts, policy=Policy(rules=(Rule.allow("*", "/**"),)), principal=READER
    )
    with pytest.raises(PolicyDeniedError) as err:
        await only_files.run("true", cwd="/scratch")
    assert "execute on /scratch is not allowed" in str(err.value)
    assert "\n" not in str(err.value)
    denied = [r for r in only_files.audit.records if r.operation == "run"]
    assert denied and not denied[-1].allowed


# -- the view ----------------------------------------------------------------------------------


HR = Principal.of("hr-viewer", roles={"hr"}, clearance="internal")
"""Sees plan.txt (role hr), not pay.md (confidential)."""


@pytest.mark.parametrize(
    ("who", "hidden"),
    [
        (READER, {"/docs/pay.md", "/docs/plan.txt", "/docs/plan.txt.labels.yaml"}),
        (HR, {"/docs/pay.md"}),
        (OWNER, set()),
    ],
    ids=["reader", "hr", "owner"],
)
async def test_cat_and_find_see_exactly_the_guarded_view(who: Principal, hidden: set[str]) -> None:
    ws = await workspace(who)
    expected = await _visible_files(ws)
    assert not hidden & set(expected)
    assert {"/docs/open.md", "/docs/team/notes.md", "/scratch/a.txt"} <= set(expected)
    listing = await ws.run(["find", "/docs", "/scratch", "/out", "-type", "f"])
    assert listing.exit_code == 0, listing.stderr
    assert sorted(listing.stdout.split()) == sorted(expected)
    for path, text in expected.items():
        shown = await ws.run(["cat", path])
        assert shown.stdout == text


async def test_hidden_files_are_absent_by_name_and_to_grep() -> None:
    ws = await workspace(READER)
    probe = await ws.run(
        "test -e /docs/pay.md || echo no-pay; test -e /docs/plan.txt || echo no-plan; "
        "grep -r zebra / --exclude-dir=proc --exclude-dir=usr --exclude-dir=sys 2>/dev/null"
    )
    assert probe.stdout.splitlines() == ["no-pay", "no-plan", "/scratch/sub/b.txt:beta zebra"]
    owner = await workspace(OWNER)
    seen = await owner.run(["cat", "/docs/pay.md"])
    assert "zebra salary" in seen.stdout


async def test_the_blocking_facade_runs_too() -> None:
    ws = (await workspace(READER)).sync()
    result = ws.run(["ls", "/scratch"], cwd="/scratch")
    assert isinstance(result, RunResult)
    assert result.stdout.split() == ["a.txt", "sub"]


# -- write-back --------------------------------------------------------------------------------


async def test_created_changed_and_deleted_files_come_back_as_the_principal() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "echo 'the quokka migration' > new.md && echo changed > a.txt && rm sub/b.txt "
        "&& mkdir empty",
        cwd="/scratch",
    )
    assert result.ok, result
    assert set(result.changed) == {"/scratch/new.md", "/scratch/a.txt"}
    assert result.deleted == ("/scratch/sub/b.txt",)
    assert await ws.read_text("/scratch/a.txt") == "changed\n"
    assert not await ws.exists("/scratch/sub/b.txt")
    assert (await ws.stat("/scratch/empty")).is_dir
    hits = await ws.search("quokka", mode="bm25")
    assert [h.path for h in hits.hits] == ["/scratch/new.md"]
    writes = [r for r in ws.audit.records if r.operation == "write" and r.allowed]
    assert {r.path for r in writes} >= {"/scratch/new.md", "/scratch/a.txt"}
    assert all(r.principal == "reader" for r in writes)


async def test_private_tmp_is_not_written_back() -> None:
    ws = await workspace(READER)
    result = await ws.run("echo x > /tmp/t && cat /tmp/t && echo $HOME")
    assert result.stdout == "x\n/tmp\n"
    assert result.changed == () and result.refused == {}


async def test_a_change_the_policy_refuses_is_reported_per_path_and_not_applied() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "echo leak > /out/new.txt; echo edited > /out/report.txt; echo fine > /scratch/ok.txt"
    )
    assert set(result.refused) == {"/out/new.txt", "/out/report.txt"}
    assert all("not allowed by policy" in why for why in result.refused.values())
    assert result.changed == ("/scratch/ok.txt",)
    assert not await ws.exists("/out/new.txt")
    assert await ws.read_text("/out/report.txt") == "quarterly\n"
    removal = await ws.run("rm /out/report.txt")
    assert set(removal.refused) == {"/out/report.txt"}
    assert await ws.read_text("/out/report.txt") == "quarterly\n"


async def test_a_concurrent_change_is_a_conflict_not_an_overwrite(tmp_path: Path) -> None:
    ws = await workspace(READER)
    view = tmp_path / "view"
    view.mkdir()
    snap = await materialize(ws, view, None)
    await ws.write("/scratch/a.txt", "someone else\n")  # while the command runs
    await ws.write("/scratch/sub/b.txt", "also changed\n")
    (view / "scratch" / "a.txt").write_text("the command's\n")
    (view / "scratch" / "sub" / "b.txt").unlink()
    (view / "scratch" / "fresh.txt").write_text("new\n")
    await ws.write("/scratch/fresh.txt", "created meanwhile\n")
    applied = await write_back(ws, diff(snap))
    assert set(applied.refused) == {"/scratch/a.txt", "/scratch/sub/b.txt", "/scratch/fresh.txt"}
    assert all(why.startswith("conflict") for why in applied.refused.values())
    assert await ws.read_text("/scratch/a.txt") == "someone else\n"
    assert await ws.read_text("/scratch/sub/b.txt") == "also changed\n"
    assert await ws.read_text("/scratch/fresh.txt") == "created meanwhile\n"


async def test_a_name_that_is_no_workspace_path_is_refused_not_dropped() -> None:
    ws = await workspace(READER)
    result = await ws.run(["sh", "-c", "printf x > \"$(printf 'bad\\001name')\""], cwd="/scratch")
    assert result.refused == {
        "/scratch/bad\\x01name": "not a valid workspace path (a control character, or too long); "
        "rename it"
    }
    assert result.changed == ()


async def test_a_working_folder_outside_the_view_is_refused() -> None:
    ws = await workspace(READER)
    with pytest.raises(SandboxError) as err:
        await ws.run("true", cwd="/docs/pay.md")
    assert str(err.value) == (
        "/docs/pay.md is not a folder in your view; run from a folder you can list"
    )


async def test_a_write_only_mount_is_an_empty_folder_that_only_creates() -> None:
    drop = MemoryStore()
    ws = Workspace(
        [Mount.of("/drop", drop, scope="write_only")],
        policy=Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**"))),
        principal=READER,
    )
    await ws.write("/drop/old.txt", "kept\n")
    result = await ws.run("ls -A /drop; echo hi > /drop/new.txt; echo again > /drop/old.txt")
    assert result.stdout == ""
    # a blind write replaces what is there, told nothing of it (docs/policy.md, "Blind
    # writes"): refusing the existing name told the command it exists
    assert result.changed == ("/drop/new.txt", "/drop/old.txt")
    assert result.refused == {}
    _, replaced = await drop.read_file(VPath.parse("/old.txt"))
    assert replaced == b"again\n"
