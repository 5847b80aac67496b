"""``bastion mcp`` options, config files and the demo workspace, in-process."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bastion.agents.tools import Toolset
from bastion.cli import main
from bastion.cli_mcp import _mount_from_option, _workspace


def test_the_command_is_registered_and_documented() -> None:
    result = CliRunner().invoke(main, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "--transport [stdio|http]" in result.output and "PREFIX=DIR[:SCOPE]" in result.output


def test_mount_options(tmp_path: Path) -> None:
    ro = _mount_from_option(f"/docs={tmp_path}")
    assert str(ro.prefix) == "/docs" and ro.scope.value == "read_only"
    assert ro.store.kind == "local"
    rw = _mount_from_option("/scratch=memory:read_write")
    assert rw.scope.value == "read_write" and rw.store.kind == "memory"
    with pytest.raises(click.BadParameter):
        _mount_from_option("/docs")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--demo", "--mount", "/a=memory"], "--demo takes no --mount or --config"),
        (["--mount", "/a=/no/such/folder"], "/no/such/folder is not a folder"),
    ],
)
def test_bad_options_fail_before_serving(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["mcp", *args])
    assert result.exit_code != 0 and message in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 'red'\n", "unknown keys colour"),
        ("[[mounts]]\nprefix = '/a'\n", "each mount needs 'prefix' and 'path'"),
        (
            "[policy]\nrules = [{ effect = 'maybe', actions = ['read'], paths = ['/**'] }]\n",
            "effect",
        ),
        ("not toml at all [", "cannot load"),
    ],
)
def test_bad_config_files_are_reported(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "bastion.toml"
    config.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["mcp", "--config", str(config)])
    assert result.exit_code != 0 and message in result.output


def test_a_yaml_config_and_options_that_override_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    config = tmp_path / "bastion.yaml"
    config.write_text(
        "principal: {id: from-file, roles: [reader]}\nmounts:\n  - {prefix: /docs, path: docs}\n",
        encoding="utf-8",
    )
    extra = ("/scratch=memory:read_write",)
    with _workspace(extra, config, None, "from-option", ("writer",), None, False) as ws:
        assert ws.principal.id == "from-option" and ws.principal.roles == {"writer"}
        assert [str(m.prefix) for m in ws.mounts] == ["/docs", "/scratch"]
        assert "write_file" in Toolset(ws)


async def test_the_demo_workspace_is_searchable_and_governed() -> None:
    with _workspace((), None, None, None, (), None, False) as ws:
        tools = Toolset(ws)
        assert {"search", "ask", "write_file"} <= set(tools.names)
        hits = await tools.call("search", {"query": "pages answered"})
        assert hits["hits"][0]["path"] == "/docs/handbook.md"
        hidden = await tools.call("read_file", {"path": "/docs/hr/salaries.md"})
        assert hidden == {"success": False, "error": "/docs/hr/salaries.md not found"}
        secret = await tools.call("search", {"query": "compensation bands"})
        assert secret["total_found"] == 0
