"""A sandbox that cannot start says so without naming a host path: bubblewrap's own words and
the OS error (the install's location, a temporary folder of the host) go to the operator log,
the caller gets one line with a short cause (``exit 1``, ``FileNotFoundError``).

Before 2026-11-28 the probe's message quoted the OS error (``[Errno 2] No such file or
directory: '/host/...'``) and bubblewrap's last line, and a failure of bubblewrap before it made
the sandbox reached the command's error stream in bubblewrap's words."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import READER, workspace

from bastion.sandbox import SandboxError, bwrap
from bastion.sandbox.result import RunLimits
from bastion.sandbox.spawn import spawn, start_background


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    bwrap.bwrap_binary.cache_clear()
    yield
    bwrap.bwrap_binary.cache_clear()


def _told_nothing_of(exc: BaseException, secret: Path) -> None:
    message = str(exc)
    assert str(secret) not in message and "secret" not in message
    assert "\n" not in message and message.endswith("nothing was run")
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)


def _logged(caplog: pytest.LogCaptureFixture, secret: Path) -> None:
    assert any(
        str(secret) in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
    )


@pytest.mark.usefixtures("fresh_probe")
async def test_a_probe_that_cannot_exec_names_no_host_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "secret-install" / "bwrap"  # not there: the OS error names it
    monkeypatch.setattr(bwrap, "_find", lambda: str(secret))
    ws = await workspace(READER)
    with caplog.at_level(logging.WARNING), pytest.raises(SandboxError) as err:
        await ws.run("echo ran > /scratch/ran.txt")
    _told_nothing_of(err.value, secret)
    cause = str(err.value).split("bubblewrap failed (", 1)[1].split(")", 1)[0]
    assert cause in {"FileNotFoundError", "PermissionError"}  # as root, run as nobody
    _logged(caplog, secret)
    assert not await ws.exists("/scratch/ran.txt")


@pytest.mark.usefixtures("fresh_probe")
async def test_a_probe_whose_bubblewrap_fails_names_no_host_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """bubblewrap's last line named a host path (``Can't find source path /host/...``)."""
    secret = tmp_path / "secret-root"
    folder = Path(tempfile.mkdtemp())  # a stand-in that a root caller's probe (run as nobody)
    try:  # may run too
        folder.chmod(0o755)
        stand_in = folder / "bwrap"
        stand_in.write_text(
            f'#!/bin/sh\necho "bwrap: Can\'t find source path {secret}: No such file" >&2\nexit 1\n'
        )
        stand_in.chmod(0o755)
        monkeypatch.setattr(bwrap, "_find", lambda: str(stand_in))
        ws = await workspace(READER)
        with caplog.at_level(logging.WARNING), pytest.raises(SandboxError) as err:
            await ws.run("true")
    finally:
        shutil.rmtree(folder)
    _told_nothing_of(err.value, secret)
    assert str(folder) not in str(err.value) and "(exit 1)" in str(err.value)
    _logged(caplog, secret)


def _failing_args(secret: Path) -> list[str]:
    """A real bubblewrap that fails before it makes the sandbox, in words naming ``secret``."""
    return [bwrap.bwrap_binary(), "--unshare-user", "--uid", str(secret), "--", "/bin/true"]


async def test_bubblewrap_failing_before_the_sandbox_is_a_refusal_not_the_commands_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "secret-view"
    with caplog.at_level(logging.WARNING), pytest.raises(SandboxError) as err:
        await spawn(_failing_args(secret), None, 30.0, RunLimits())
    _told_nothing_of(err.value, secret)
    _logged(caplog, secret)


def test_a_background_start_failing_before_the_sandbox_names_no_host_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "secret-view"
    with caplog.at_level(logging.WARNING), pytest.raises(SandboxError) as err:
        start_background(_failing_args(secret), RunLimits(), ())
    _told_nothing_of(err.value, secret)
    _logged(caplog, secret)


@pytest.mark.parametrize("background", [False, True])
async def test_a_binary_that_cannot_be_started_names_no_host_path(
    tmp_path: Path, background: bool
) -> None:
    secret = tmp_path / "secret-bin" / "bwrap"
    with pytest.raises(SandboxError) as err:
        if background:
            start_background([str(secret), "--", "/bin/true"], RunLimits(), ())
        else:
            await spawn([str(secret), "--", "/bin/true"], None, 30.0, RunLimits())
    _told_nothing_of(err.value, secret)


async def test_a_command_that_writes_bubblewraps_words_keeps_its_own_output() -> None:
    """The sandbox was made: the command's error stream and status are its own."""
    ws = await workspace(READER)
    done = await ws.run("echo 'bwrap: Invalid uid: /x' >&2; exit 1")
    assert done.exit_code == 1 and done.stderr == "bwrap: Invalid uid: /x\n"


@pytest.mark.usefixtures("fresh_probe")
async def test_the_agents_execute_tool_tells_what_the_library_tells(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bastion.agents.tools import Toolset

    secret = tmp_path / "secret-install" / "bwrap"
    monkeypatch.setattr(bwrap, "_find", lambda: str(secret))
    ws = await workspace(READER)
    with pytest.raises(SandboxError) as direct:
        await ws.run("true")
    out = await Toolset(ws).call("execute", {"command": "true", "cwd": "/scratch"})
    told = json.dumps(out)
    assert str(secret) not in told and "secret" not in told
    assert str(direct.value) in told
