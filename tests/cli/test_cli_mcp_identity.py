"""``bastion mcp`` acts for ``--as``/``--token`` or for the principal that ``--principal``,
``--role``, ``--tenant`` and ``--clearance`` name; checked before serving."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_support import Run, error_of
from mcp import Client, StdioServerParameters


def test_as_and_principal_options_do_not_mix(demo: Path, run: Run) -> None:
    result = run("mcp", "--as", "ana", "--clearance", "internal", "--json")
    assert result.exit_code == 2
    assert "name the whole principal" in error_of(result)["message"]


def test_an_unknown_clearance_is_a_usage_error(demo: Path, run: Run) -> None:
    result = run("mcp", "--principal", "bot", "--clearance", "cosmic", "--json")
    assert result.exit_code == 2 and "--clearance" in error_of(result)["message"]


async def test_stdio_server_acts_for_a_demo_user(demo: Path) -> None:
    config = str(demo / "bastion.toml")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bastion.cli", "mcp", "--config", config, "--as", "ana"],
    )
    async with Client(params, read_timeout_seconds=120) as client:
        listed = await client.call_tool("list_files", {"path": "/larkspur"})
        names = json.loads(listed.content[0].text)  # type: ignore[union-attr]
        assert "/hr" not in json.dumps(names) and "handbook" in json.dumps(names)
        hidden = await client.call_tool("read_file", {"path": "/larkspur/hr/salary-bands.md"})
        assert hidden.is_error


async def test_stdio_server_with_clearance_and_roles(demo: Path) -> None:
    config = str(demo / "bastion.toml")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "bastion.cli", "mcp", "--config", config, "--principal", "hr-bot",
            "--tenant", "larkspur", "--role", "hr", "--clearance", "confidential",
        ],
    )  # fmt: skip
    async with Client(params, read_timeout_seconds=120) as client:
        read = await client.call_tool("read_file", {"path": "/larkspur/hr/salary-bands.md"})
        assert not read.is_error
        assert "Salary bands" in read.content[0].text  # type: ignore[union-attr]
