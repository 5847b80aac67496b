"""Inside the sandbox no host environment variable is readable and hidden files are absent;
names written inside come back through the guard (red-team variants, area E).

Classes pinned (docs/security.md, "sandbox"): no host environment variable is readable inside
(not in the command's environment, nor in any other process's ``/proc/<pid>/environ``: PID 1
inside is the sandbox's small shell, with the command's environment), in the foreground or the
background; a
hidden file, its sidecar and a folder of hidden entries only are absent inside (``ls``,
``find``, ``stat``); names written inside come back through the guard (a sidecar that would
loosen labels, a sidecar of a hidden file, a file over a hidden folder, links, FIFOs).
"""

from __future__ import annotations

import asyncio

import pytest
from sandbox_support import OWNER, READER, require_bwrap, workspace

pytestmark = pytest.mark.usefixtures("bwrap")

SECRET = "hunter2-host-secret"


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


_EVERY_ENVIRON = "for p in /proc/[0-9]*; do cat $p/environ; echo; done 2>/dev/null | tr '\\0' '\\n'"


async def test_no_process_inside_holds_the_host_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BASTION_REDTEAM_TOKEN", SECRET)
    ws = await workspace(READER)
    result = await ws.run(_EVERY_ENVIRON + "; tr '\\0' '\\n' < /proc/1/environ | sort")
    assert SECRET not in result.stdout and "BASTION_REDTEAM_TOKEN" not in result.stdout
    assert "PATH=" in result.stdout  # the command's own environment was read
    # PID 1 (the shell that starts the command): the allow-listed environment
    assert result.stdout.splitlines()[-4:] == [
        "HOME=/tmp",
        "LANG=C.UTF-8",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "PWD=/",  # set by bubblewrap
    ]


async def test_a_background_process_cannot_read_the_host_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BASTION_REDTEAM_TOKEN", SECRET)
    ws = await workspace(READER)
    info = await ws.start_process(_EVERY_ENVIRON)
    for _ in range(600):
        out = await ws.read_output(info.id)
        if not out.running:
            break
        await asyncio.sleep(0.05)
    assert out.running is False and "PATH=" in out.text
    assert SECRET not in out.text and "BASTION_REDTEAM_TOKEN" not in out.text


async def test_hidden_entries_are_absent_inside_and_written_names_go_through_the_guard() -> None:
    owner = await workspace(OWNER)
    await owner.write("/scratch/hid/only.md", "---\nroles: [hr]\n---\nosprey\n")
    await owner.write("/scratch/hr-only.md", "---\nroles: [hr]\n---\nosprey\n")
    await owner.write("/scratch/a.txt.labels.yaml", "classification: internal\n")
    ws = owner.with_principal(READER)
    looked = await ws.run(
        "find /scratch /docs /out; ls -la /scratch/hid /scratch/hr-only.md "
        "/docs/plan.txt.labels.yaml; stat /scratch/hid; cat /scratch/hid/only.md"
    )
    blob = looked.stdout + looked.stderr
    assert "osprey" not in blob and "only.md" not in looked.stdout
    assert "hr-only" not in looked.stdout and "plan.txt" not in looked.stdout
    assert "/scratch/hid" not in looked.stdout
    assert blob.count("No such file or directory") == 5
    wrote = await ws.run(
        "echo 'classification: public' > /scratch/a.txt.labels.yaml;"
        " echo x > /scratch/hr-only.md.labels.yaml; echo y > /scratch/hid;"
        " ln -s /etc/passwd /scratch/lnk; mkfifo /scratch/fifo"
    )
    assert wrote.changed == ()
    assert set(wrote.refused) == {
        "/scratch/a.txt.labels.yaml",
        "/scratch/hr-only.md.labels.yaml",
        "/scratch/hid",
        "/scratch/lnk",
        "/scratch/fifo",
    }
    assert "loosen" in wrote.refused["/scratch/a.txt.labels.yaml"]
    assert wrote.refused["/scratch/hr-only.md.labels.yaml"] == (  # as a write of the file
        "write on /scratch/hr-only.md.labels.yaml is not allowed by policy"
    )
    assert "osprey" not in repr(wrote.refused)
    assert await owner.read_text("/scratch/a.txt.labels.yaml") == "classification: internal\n"
    assert await owner.read_text("/scratch/hid/only.md") == "---\nroles: [hr]\n---\nosprey\n"
