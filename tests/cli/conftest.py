"""A demo workspace (``bastion init --demo``) and a starter one (``bastion init``), each in
its own folder that the test runs in, and a runner that returns stdout and stderr apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_support import Run
from click.testing import CliRunner, Result

from bastion.cli import main


def _runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def run() -> Run:
    def invoke(*args: str, input: str | bytes | None = None, env: Any = None) -> Result:
        return _runner().invoke(main, list(args), input=input, env=env)

    return invoke


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run) -> Path:
    folder = tmp_path / "demo"
    done = run("init", "--demo", str(folder))
    assert done.exit_code == 0, done.output
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def starter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run) -> Path:
    folder = tmp_path / "starter"
    done = run("init", str(folder))
    assert done.exit_code == 0, done.output
    monkeypatch.chdir(folder)
    (folder / "docs" / "guide.md").write_text("# Guide\n\nline two\nline three\n")
    return folder
