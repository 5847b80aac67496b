"""``bastion init`` writes a starter that loads; ``bastion config check`` explains a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Run, as_json, error_of

from bastion import Principal
from bastion.cli.setup import STARTER
from bastion.config import WorkspaceConfig, load_workspace


def test_the_starter_loads_with_load_workspace(starter: Path) -> None:
    text = (starter / "bastion.toml").read_text()
    assert text == STARTER and text.count("\n#") >= 8  # commented
    config = WorkspaceConfig.from_file(starter / "bastion.toml")
    assert [m.prefix for m in config.mounts] == ["/docs", "/scratch"]
    assert set(config.users) == {"alice", "bob", "guest"}
    assert config.knowledge is not None and config.audit == starter / ".bastion/audit.jsonl"
    ws = load_workspace(starter / "bastion.toml", principal=config.users["bob"]).sync()
    ws.write("/scratch/note.md", "hi")
    assert ws.read_text("/scratch/note.md") == "hi"
    assert ws.read_text("/docs/guide.md").startswith("# Guide")
    assert [r.operation for r in ws.audit.records][-3:] == ["write", "read", "read"]


def test_the_starter_names_the_agent_that_mcp_serves(starter: Path) -> None:
    """``bastion mcp`` serves the file's ``[principal]``: in a folder ``init`` just made, the
    agent sees both mounts and may write its notes (not the owner, who sees nothing)."""
    ws = load_workspace(starter / "bastion.toml").sync()
    assert ws.principal == Principal.of(
        "agent", tenant="acme", roles=["editor"], clearance="internal"
    )
    assert {str(e.path) for e in ws.list("/")} == {"/docs", "/scratch"}
    ws.write("/scratch/agent.md", "from the agent")
    assert "/docs" in ws.filesystem_map() and "/scratch" in ws.filesystem_map()


def test_init_refuses_to_replace_a_file(starter: Path, run: Run) -> None:
    again = run("init", ".", "--json")
    assert again.exit_code == 1 and error_of(again)["error"] == "exists"
    assert run("init", ".", "--force").exit_code == 0


def test_the_demo_starter_names_the_demo_people(demo: Path) -> None:
    config = WorkspaceConfig.from_file(demo / "bastion.toml")
    assert config.users["ana"] == Principal.of(
        "ana", tenant="larkspur", roles=["employee"], clearance="internal"
    )
    assert (demo / "corpus" / "larkspur" / "hr" / "salary-bands.md").is_file()


def test_config_check_prints_mounts_and_who_may_do_what(starter: Path, run: Run) -> None:
    result = run("config", "check")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "bastion.toml: valid"
    assert any(line.split()[:3] == ["/scratch", "file", "read_write"] for line in lines)
    guest = lines.index("  guest@acme (clearance public):")
    assert lines[guest + 1].split() == ["/docs", "read,", "list,", "search"]
    assert lines[guest + 2].split() == ["/scratch", "(nothing)"]
    data = as_json(run("config", "check", "--json"))
    assert data["valid"] is True
    assert data["may"]["bob"]["/scratch"] == ["read", "list", "search", "write", "delete"]
    assert data["may"]["bob"]["/docs"] == ["read", "list", "search"]
    assert data["mounts"][0]["store"] == "file"


def test_config_check_never_shows_a_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/m"\nurl = "memory://secret-token@host"\n'
        '[policy]\nrules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]\n'
    )
    result = run("config", "check", "--json")
    assert "secret-token" not in result.output


def test_config_check_reports_a_broken_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/m"\nurl = "memory://"\nscope = "sideways"\n[policy]\nrules = []\n'
    )
    result = run("config", "check", "--json")
    assert result.exit_code == 1
    assert error_of(result)["error"] == "configuration"
    assert "unknown scope" in error_of(result)["message"]
    assert "unknown scope" in json.loads(result.stdout)["problems"][0]


def test_users_in_the_file_are_checked(tmp_path: Path) -> None:
    from bastion.core.errors import ConfigurationError

    base = '[[mounts]]\nprefix = "/m"\nurl = "memory://"\n[policy]\nrules = []\n'
    bad = tmp_path / "bad.toml"
    bad.write_text(base + '[users.kim]\nclearance = "cosmic"\n')
    with pytest.raises(ConfigurationError, match="unknown clearance 'cosmic'"):
        WorkspaceConfig.from_file(bad)
    bad.write_text(base + '[users.kim]\nroles = "hr"\n')
    with pytest.raises(ConfigurationError, match="roles and tags must be lists of strings"):
        WorkspaceConfig.from_file(bad)
    bad.write_text(base + "[users.kim]\nlevel = 3\n")
    with pytest.raises(ConfigurationError, match="unknown keys level"):
        WorkspaceConfig.from_file(bad)
    listed = tmp_path / "people.toml"
    listed.write_text('[[users]]\nid = "kim"\nabout = "x"\ntenant = "t"\n')
    good = tmp_path / "good.toml"
    good.write_text('users = "people.toml"\n' + base)
    assert WorkspaceConfig.from_file(good).users["kim"].tenant == "t"
