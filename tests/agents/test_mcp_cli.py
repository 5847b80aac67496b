"""``bastion mcp`` options, config files and the demo workspace, in-process."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bastion import Principal
from bastion.agents.tools import Toolset
from bastion.cli import main
from bastion.cli.mcp import _mount_from_option, _workspace

ALLOW_ALL = "[policy]\nrules = [{ effect = 'allow', actions = ['*'], paths = ['/**'] }]\n"
NO_OPTIONS = (None, None, None, (), None, False)


def test_the_command_is_registered_and_documented() -> None:
    result = CliRunner().invoke(main, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "--transport [stdio|http]" in result.output and "PREFIX=DIR[:SCOPE]" in result.output


def test_mount_options_are_entries_of_the_workspace_file(tmp_path: Path) -> None:
    odd = tmp_path / "a $HOME {x} #1"
    odd.mkdir()
    assert _mount_from_option(f"/docs={odd}") == ("/docs", str(odd), "read_only")
    assert _mount_from_option("/scratch=memory:read_write") == ("/scratch", "memory", "read_write")
    (odd / "a.md").write_text("found", encoding="utf-8")
    with _workspace((f"/docs={odd}", "/scratch=memory:read_write"), *NO_OPTIONS) as ws:
        assert ws.sync().read_text("/docs/a.md") == "found"
        ro, rw = ws.mounts
        assert ro.scope.value == "read_only" and ro.store.kind == "local"
        assert rw.scope.value == "read_write" and rw.store.kind == "memory"
    with pytest.raises(click.BadParameter):
        _mount_from_option("/docs")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--demo", "--mount", "/a=memory"], "--demo takes no --mount or --config"),
        (["--mount", "/a=/no/such/folder"], "'/no/such/folder' is not an existing directory"),
        (["--config", __file__, "--mount", "/a=memory"], "--config takes no --mount or --policy"),
        (["--config", __file__, "--policy", __file__], "--config takes no --mount or --policy"),
    ],
)
def test_bad_options_fail_before_serving(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["mcp", *args])
    assert result.exit_code != 0 and message in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 'red'\n", "workspace file: unknown keys colour"),
        ("[[mounts]]\nprefix = '/a'\n" + ALLOW_ALL, "mount /a: needs a url"),
        (
            "[[mounts]]\nprefix = '/a'\nurl = 'memory://'\n"
            "[policy]\nrules = [{ effect = 'maybe', actions = ['read'], paths = ['/**'] }]\n",
            "effect",
        ),
        ("not toml at all [", "is not valid TOML"),
        (
            "index = 'i'\nkeyword_only = true\n" + ALLOW_ALL,
            '"index" is now [knowledge] folder',
        ),
    ],
)
def test_bad_config_files_are_reported(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "bastion.toml"
    config.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["mcp", "--config", str(config)])
    assert result.exit_code != 0 and message in result.output
    assert str(config) in result.output  # the error names the file


def test_a_yaml_config_and_options_that_override_its_principal(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    config = tmp_path / "bastion.yaml"
    config.write_text(
        "principal: {id: from-file, roles: [reader], clearance: restricted}\n"
        "mounts:\n  - {prefix: /docs, url: 'file:docs', scope: read_write}\n"
        "policy: {rules: [{effect: allow, actions: ['*'], paths: ['/**']}]}\n",
        encoding="utf-8",
    )
    with _workspace((), config, None, None, (), None, False) as ws:
        assert ws.principal == Principal.of("from-file", roles={"reader"}, clearance="restricted")
    with _workspace((), config, None, "from-option", ("writer",), None, False) as ws:
        # the options name the whole principal: nothing is inherited from the file's
        assert ws.principal == Principal.of("from-option", roles={"writer"})
        assert [str(m.prefix) for m in ws.mounts] == ["/docs"]
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
