"""The change journal holds every content any change held, whatever its labels; an overlay's
layers hold every thread's unapplied work. A ``file:`` mount whose folder holds either would
show it, as plain bytes with the mount's labels, to whoever may read the mount. Such a
workspace file is refused when it is opened (library, CLI), unless the policy blocks the
folder on the way."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bastion import ConfigurationError, Principal
from bastion.cli import main
from bastion.config import load_workspace

READER = """
[users.rita]
clearance = "public"
"""
MOUNT_ALL = """
[[mounts]]
prefix = "/ws"
url = "file:."
scope = "read_only"
"""
MOUNT_DATA = """
[[mounts]]
prefix = "/data"
url = "file:data"
"""
ALLOW = """
[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]
"""


def _config(root: Path, body: str) -> Path:
    (root / "data").mkdir(exist_ok=True)
    config = root / "bastion.toml"
    config.write_text(body + READER, encoding="utf-8")
    return config


@pytest.mark.parametrize(
    "journal",
    [
        '[journal]\npath = ".bastion/journal.db"\n',  # the default place, in the mounted folder
        '[journal]\npath = "data/sub/journal.db"\n',
    ],
)
def test_a_journal_inside_a_mounted_folder_is_refused(tmp_path: Path, journal: str) -> None:
    config = _config(tmp_path, MOUNT_ALL + MOUNT_DATA + ALLOW + journal)
    with pytest.raises(ConfigurationError, match="change journal lies inside the folder"):
        load_workspace(config, principal=Principal.of("rita"))
    result = CliRunner().invoke(main, ["changes", "--config", str(config), "--as", "rita"])
    assert result.exit_code != 0
    assert "change journal lies inside the folder of mount" in result.stderr
    assert not (tmp_path / ".bastion" / "journal.db").exists()  # never opened


def test_a_journal_in_a_blocked_folder_or_outside_is_kept(tmp_path: Path) -> None:
    blocked = ALLOW + '[policy.limits]\nblocked_segments = [".bastion"]\n'
    config = _config(tmp_path, MOUNT_ALL + blocked + '[journal]\npath = ".bastion/j.db"\n')
    ws = load_workspace(config, principal=Principal.of("rita")).sync()
    assert ws.changes() == []
    outside = _config(tmp_path, MOUNT_DATA + ALLOW + '[journal]\npath = "j.db"\n')
    assert load_workspace(outside, principal=Principal.of("rita")).sync().changes() == []


def test_overlay_layers_inside_another_mounted_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    overlay = '[[mounts]]\nprefix = "/code"\nurl = "file:project"\noverlay = "file:data/layers"\n'
    config = _config(tmp_path, overlay + MOUNT_DATA + ALLOW)
    with pytest.raises(
        ConfigurationError,
        match="overlay layer folder of /code lies inside the folder of mount /data",
    ):
        load_workspace(config, principal=Principal.of("rita"))
