"""Red team of the write-back, with real bubblewrap: what a command leaves in its view comes back
through the guard, and nothing else does.

Attacks pinned (docs/sandbox.md, "What comes back"): a name in NFD beside a link in NFC (the
old walk normalized names, rebuilt the host path and followed the link: the host's
``/etc/passwd``, Bastion's own ``/proc/self/environ``, and through the host path of a bound
mount read from ``/proc/self/mountinfo``, a label-hidden document and a denied folder came
back); links at every level; hard links out; a background process swapping files, folders and
FIFOs with links (``renameat2(RENAME_EXCHANGE)``) while its changes are brought back; 1,100
nested folders; a local mount over a private (0700) folder.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import unicodedata
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_support import OWNER, READER, require_bwrap, workspace

from bastion import Labels, LocalStore, MemoryStore, Mount, Policy, Rule, Workspace
from bastion.core.paths import VPath
from bastion.sandbox import RunLimits, readback
from bastion.sandbox.readback import MAX_DEPTH
from bastion.sandbox.runner import prepare
from bastion.sandbox.spawn import kill_tree, start_background
from bastion.sandbox.tree import holders

pytestmark = pytest.mark.usefixtures("bwrap")

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
HIDDEN = "heron-hidden-canary"
DENIED = "ibis-denied-canary"
ENV_SECRET = "hunter2-writeback-secret"


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


def _py(script: str) -> list[str]:
    return ["python3", "-c", script]


async def _everything(ws: Workspace) -> str:
    """Every name and text in ``/scratch`` (where changes come back), as the owner sees it."""
    owner = ws.with_principal(OWNER)
    parts = []
    for entry in await owner.list("/scratch", recursive=True):
        parts.append(str(entry.path))
        if entry.is_file:
            parts.append((await owner.read_bytes(entry.path)).decode("utf-8", "replace"))
    return "\n".join(parts)


# -- NFD decoys beside NFC links ----------------------------------------------------------------

_DECOY = """
import os, sys, unicodedata
os.chdir('/scratch')
for n, target in enumerate(sys.argv[1:]):
    name = f'caf\\u00e9{n}'
    with open(unicodedata.normalize('NFD', name), 'w') as f:
        f.write('decoy')
    os.symlink(target, unicodedata.normalize('NFC', name))
"""


async def test_an_nfd_decoy_beside_an_nfc_link_brings_back_no_host_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BASTION_WRITEBACK_SECRET", ENV_SECRET)
    ws = await workspace(READER)
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    targets = ["/etc/passwd", "/proc/self/environ", f"/proc/{os.getpid()}/environ"]
    result = await ws.run(["python3", "-c", _DECOY, *targets])
    assert result.exit_code == 0, result.stderr
    assert result.changed == ()
    for n in range(3):
        assert "NFC" in result.refused[f"/scratch/cafe\\u0301{n}"]
        assert "symbolic link" in result.refused[f"/scratch/{NFC}{n}"]
        assert not await ws.exists(f"/scratch/{NFC}{n}")
    seen = await _everything(ws) + repr(result)
    assert passwd not in seen and ENV_SECRET not in seen and "BASTION_WRITEBACK" not in seen


async def test_an_nfd_name_alone_is_refused_and_the_other_changes_come_back() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        _py(
            "import unicodedata\n"
            "open(unicodedata.normalize('NFD', 'caf\\u00e9'), 'w').write('x')\n"
            "open('ok.txt', 'w').write('ok')"
        ),
        cwd="/scratch",
    )
    assert result.changed == ("/scratch/ok.txt",)
    assert list(result.refused) == ["/scratch/cafe\\u0301"]
    assert await ws.read_text("/scratch/ok.txt") == "ok"
    assert not await ws.exists(f"/scratch/{NFC}")


@pytest.fixture
def host_tree() -> Iterator[Path]:
    """A folder others may enter holding ``corpus`` (plain, fully visible: bound into the
    sandbox) and ``private`` (a label-hidden document and a folder the policy denies)."""
    base = Path(tempfile.mkdtemp(prefix="bastion-redteam-"))
    try:
        base.chmod(0o755)
        (base / "corpus").mkdir(mode=0o755)
        (base / "corpus" / "open.md").write_text("open words\n")
        (base / "corpus" / "open.md").chmod(0o644)
        private = base / "private"
        (private / "denied").mkdir(parents=True)
        (private / "hidden.md").write_text(f"---\nclassification: restricted\n---\n{HIDDEN}\n")
        (private / "denied" / "d.md").write_text(f"{DENIED}\n")
        (private / "seen.md").write_text("seen\n")
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


_MOUNTINFO = """
import os, unicodedata
host = None
for line in open('/proc/self/mountinfo'):
    fields = line.split()
    if fields[4] == '/corpus':
        host = fields[3]
assert host, 'no /corpus bind found'
base = os.path.dirname(host)
os.chdir('/scratch')
targets = {
    'hid': base + '/private/hidden.md',
    'den': base + '/private/denied/d.md',
    'dir': base + '/private/denied',
    'up': base + '/private',
}
for name, target in targets.items():
    with open(unicodedata.normalize('NFD', name + '\\u00e9'), 'w') as f:
        f.write('decoy')
    os.symlink(target, unicodedata.normalize('NFC', name + '\\u00e9'))
os.makedirs('deep/er')
os.symlink(base + '/private', 'deep/er/link')
for target in (base + '/private/hidden.md', '/usr/bin/env', '/proc/self/environ'):
    try:
        os.link(target, 'hard-' + os.path.basename(target))
    except OSError as exc:
        print('link', exc.strerror)
print('host folder found')
"""


async def test_the_host_path_of_a_bound_mount_leads_to_nothing_hidden(host_tree: Path) -> None:
    policy = Policy(
        rules=(
            Rule.deny("*", "/private/denied/**", "/private/denied"),
            Rule.allow("execute", "/**"),
            Rule.allow("*", "/**"),
        )
    )
    owner = Workspace(
        [
            Mount.of("/corpus", LocalStore(host_tree / "corpus"), scope="read_only"),
            Mount.of(
                "/private",
                LocalStore(host_tree / "private"),
                scope="read_only",
                labels=Labels(classification="internal"),
            ),
            Mount.of("/scratch", MemoryStore()),
        ],
        policy=policy,
        principal=OWNER,
    )
    ws = owner.with_principal(READER)
    result = await ws.run(_py(_MOUNTINFO))
    assert "host folder found" in result.stdout, result.stderr
    assert (
        result.stdout.count("Invalid cross-device link") + result.stdout.count("No such file") == 3
    )
    assert result.changed == ()
    assert {k for k, why in result.refused.items() if "symbolic link" in why} == {
        f"/scratch/{name}é" for name in ("hid", "den", "dir", "up")
    } | {"/scratch/deep/er/link"}
    seen = repr(result) + await _everything(ws)
    assert HIDDEN not in seen and DENIED not in seen


async def test_links_at_every_level_are_refused_never_entered() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "cd /scratch && mkdir -p a/b/c && for d in /scratch /scratch/a /scratch/a/b /scratch/a/b/c;"
        " do ln -s / $d/root; ln -s /etc $d/etc; ln -s /etc/passwd $d/pw; done;"
        " ln -s /etc /scratch/sub/etc2; echo mine > a/b/c/mine.txt"
    )
    assert result.changed == ("/scratch/a/b/c/mine.txt",)
    links = {k for k, why in result.refused.items() if "symbolic link" in why}
    assert len(links) == 13 and set(result.refused) == links
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    assert passwd not in await _everything(ws)


# -- a background process racing the write-back -------------------------------------------------

_RACE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
AT, EXCHANGE = -100, 2
os.chdir('/scratch/race')
pairs = []
for n in range(64):
    with open(f'f{n}', 'w') as f:
        f.write('inside\\n')
    os.symlink('/etc/passwd', f'l{n}')
    pairs.append((f'f{n}'.encode(), f'l{n}'.encode()))
for n in range(16):
    os.makedirs(f'd{n}')
    with open(f'd{n}/in.txt', 'w') as f:
        f.write('inside\\n')
    os.symlink('/etc', f'dl{n}')
    pairs.append((f'd{n}'.encode(), f'dl{n}'.encode()))
    with open(f'g{n}', 'w') as f:
        f.write('inside\\n')
    os.mkfifo(f'p{n}')
    pairs.append((f'g{n}'.encode(), f'p{n}'.encode()))
print('ready', flush=True)
n = 0
while True:
    for a, b in pairs:
        libc.renameat2(AT, a, AT, b, EXCHANGE)
    n += 1
    churn = f'churn-{n % 7}'
    try:
        with open(churn, 'w') as f:
            f.write('inside\\n')
        os.unlink(churn)
    except OSError:
        pass
"""


async def _until(check: Callable[[], Awaitable[bool]], seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not reached in time")


async def test_swaps_while_changes_are_brought_back_bring_nothing_from_the_host() -> None:
    ws = await workspace(READER)
    await ws.mkdir("/scratch/race")
    info = await ws.start_process(_py(_RACE), timeout=120)

    async def ready() -> bool:
        return "ready" in (await ws.read_output(info.id)).text

    await _until(ready)
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    for _ in range(15):
        done = await ws.write_back(info.id)  # never raises, never blocks on the FIFO
        assert done.state == "running"
        for path, why in done.refused.items():
            assert "/etc" not in why and "bastion-sandbox" not in why, (path, why)
        race = [e for e in await ws.list("/scratch", recursive=True) if e.is_file]
        for entry in race:
            text = await ws.read_text(entry.path)
            assert text in ("", "inside\n", "alpha\n", "beta zebra\n"), (entry.path, text)
    assert passwd not in await _everything(ws)
    killed = await ws.kill_process(info.id)
    assert killed.state == "killed"


async def test_the_read_back_refuses_while_a_process_still_holds_the_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(readback, "_SETTLE_SECONDS", 0.2)
    ws = await workspace(READER)
    limits = RunLimits()
    argv = ["sh", "-c", "echo late > /scratch/late.txt; sleep 60"]
    prepared = await prepare(ws, argv, cwd=VPath.parse("/scratch"), env=None, limits=limits)
    proc, tree = start_background(prepared.args, limits, prepared.fds)
    prepared.close_fds()
    try:
        view = prepared.snap.root

        async def written() -> bool:
            return (view / "scratch" / "late.txt").exists() and bool(holders(prepared.snap.root_id))

        await _until(written)
        changes = await asyncio.to_thread(readback.diff, prepared.snap)
        assert [(c.key, c.kind) for c in changes] == [("/scratch/late.txt", "refuse")]
        assert "still running" in changes[0].reason
    finally:
        kill_tree(tree)
        proc.wait()
        tree.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        await prepared.remove()
    assert not prepared.folder.exists()


# -- deep trees ----------------------------------------------------------------------------------


async def test_1100_nested_folders_are_a_refusal_not_a_crash_and_the_view_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Path] = []
    real = tempfile.mkdtemp

    def recording(*args: Any, **kwargs: Any) -> str:
        folder = real(*args, **kwargs)
        if "bastion-sandbox-" in folder:
            made.append(Path(folder))
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", recording)
    ws = await workspace(READER)
    chain = "/".join(["d"] * 1100)
    result = await ws.run(
        f"mkdir -p /scratch/{chain}; echo bottom > /scratch/{chain}/f;"
        " echo near > /scratch/d/d/near.txt"
    )
    assert len(made) == 1
    deepest = "/scratch/" + "/".join(["d"] * (MAX_DEPTH - 1))
    assert result.changed == ("/scratch/d/d/near.txt",)
    assert list(result.refused) == [deepest + "/d"]
    assert "folders deep" in result.refused[deepest + "/d"]
    assert await ws.exists(deepest)
    assert not made[0].exists()


# -- mounts over private folders -----------------------------------------------------------------


@pytest.fixture(params=["plain inside", "private inside"])
def private_folder(request: pytest.FixtureRequest) -> Iterator[Path]:
    """What ``tempfile.mkdtemp`` makes (a folder only its owner may enter), holding files and
    a folder others may read, or only their owner."""
    base = Path(tempfile.mkdtemp(prefix="bastion-private-"))
    mode = 0o700 if request.param == "private inside" else 0o755
    try:
        (base / "sub").mkdir()
        (base / "a.md").write_text("private words\n")
        (base / "sub" / "b.md").write_text("more private words\n")
        (base / "sub").chmod(mode)
        for path in (base / "a.md", base / "sub" / "b.md"):
            path.chmod(mode & 0o644)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("scope", ["read_only", "read_write"])
async def test_a_mount_over_a_0700_folder_is_readable_inside(
    private_folder: Path, scope: str
) -> None:
    assert private_folder.stat().st_mode & 0o777 == 0o700
    ws = Workspace(
        [Mount.of("/p", LocalStore(private_folder), scope=scope)],
        policy=Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**"))),
        principal=READER,
    )
    result = await ws.run("cat /p/a.md /p/sub/b.md && ls /p")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "private words\nmore private words\na.md\nsub\n"
    assert result.refused == {} and result.changed == ()


@pytest.mark.parametrize("name", ["bad\x01name", NFD, ".bastion-tmp-leftover"])
async def test_a_name_the_store_never_lists_is_not_shown_by_binding_its_folder(
    host_tree: Path, name: str
) -> None:
    """A folder otherwise fit to be bound holds a name the local store does not list (a
    control character, not NFC, its own temporary files): it is copied, so the name stays out."""
    (host_tree / "corpus" / name).write_text(HIDDEN)
    (host_tree / "corpus" / name).chmod(0o644)
    ws = Workspace(
        [Mount.of("/corpus", LocalStore(host_tree / "corpus"), scope="read_only")],
        policy=Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**"))),
        principal=READER,
    )
    result = await ws.run("ls -a /corpus; cat /corpus/* 2>&1")
    assert result.stdout == ".\n..\nopen.md\nopen words\n"
