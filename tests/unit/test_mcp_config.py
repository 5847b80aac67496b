"""``bastion mcp --config`` reads the one workspace-file schema: a mount's labels, timeout and
URL are honoured, so a mount labelled ``restricted`` for role ``board`` serves nothing to an
agent that lacks the clearance or the role (it used to serve everything: the command had its
own schema, which dropped labels). Driven through the function the command calls and the
tools it serves; the same file loads with ``load_workspace``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bastion import Principal
from bastion.agents.tools import Toolset
from bastion.cli import main
from bastion.cli.mcp import _workspace
from bastion.config import WorkspaceConfig

CONFIG = """
[knowledge]
folder = "index"
embedder = "none"

[principal]
id = "intern"

[[mounts]]
prefix = "/board"
url = "file:board"
scope = "read_only"
description = "board minutes"
timeout = 7
labels = { classification = "restricted", roles = ["board"] }

[[mounts]]
prefix = "/docs"
url = "sqlite:docs.db"

[policy]
rules = [{ effect = "allow", actions = ["*", "reindex"], paths = ["/**"] }]
"""
MINUTES = "Acquisition codename Falcon approved.\n"
BOARD = Principal.of("chair", roles={"board"}, clearance="restricted")


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "board" / "2026").mkdir(parents=True)
    (tmp_path / "board" / "2026" / "minutes.md").write_text(MINUTES, encoding="utf-8")
    file = tmp_path / "bastion.toml"
    file.write_text(CONFIG, encoding="utf-8")
    with WorkspaceConfig.from_file(file).opened(principal=BOARD) as ws:
        ws.sync().reindex()  # the index holds the minutes, labelled
    yield file


def _serve(config: Path, principal: str | None = None, *roles: str) -> object:
    return _workspace((), config, None, principal, roles, None, False)


async def _hidden_everywhere(tools: Toolset) -> None:
    """Every tool answers as if /board were not mounted at all."""
    read = await tools.call("read_file", {"path": "/board/2026/minutes.md"})
    assert read == {
        "success": False,
        "error": "/board/2026/minutes.md is not under any mount; mounted: /docs",
    }
    stat = await tools.call("stat", {"path": "/board/2026/minutes.md"})
    assert stat["success"] is False and "Falcon" not in str(stat)
    listing = await tools.call("list_files", {"path": "/", "recursive": True})
    assert "board" not in str(listing) and "minutes" not in str(listing)
    found = await tools.call("glob", {"pattern": "/**/*.md"})
    assert "minutes" not in str(found)
    grep = await tools.call("grep", {"pattern": "Falcon", "path": "/"})
    assert "Falcon" not in str(grep) and "minutes" not in str(grep)
    search = await tools.call("search", {"query": "acquisition codename Falcon"})
    assert search["total_found"] == 0
    answer = await tools.call("ask", {"question": "What codename was approved?"})
    assert "Falcon" not in str(answer)


async def test_a_labelled_mount_serves_nothing_to_the_files_own_agent(config: Path) -> None:
    with _serve(config) as ws:  # type: ignore[attr-defined]
        assert ws.principal == Principal.of("intern")
        board = next(m for m in ws.mounts if str(m.prefix) == "/board")
        assert board.timeout == 7 and board.labels.classification == "restricted"
        assert {m.store.kind for m in ws.mounts} == {"local", "sqlite"}
        await _hidden_everywhere(Toolset(ws))


@pytest.mark.parametrize(
    ("principal", "roles"),
    [("agent-with-role", ("board",)), ("agent-without-role", ())],
)
async def test_the_role_alone_or_an_id_alone_is_not_enough(
    config: Path, principal: str, roles: tuple[str, ...]
) -> None:
    # --principal/--role name the whole principal: no clearance is inherited from the file.
    with _serve(config, principal, *roles) as ws:  # type: ignore[attr-defined]
        assert ws.principal == Principal.of(principal, roles=roles)
        await _hidden_everywhere(Toolset(ws))


async def test_the_board_sees_its_minutes_through_the_same_file(config: Path) -> None:
    config.write_text(
        CONFIG.replace(
            'id = "intern"', 'id = "chair"\nroles = ["board"]\nclearance = "restricted"'
        ),
        encoding="utf-8",
    )
    with _serve(config) as ws:  # type: ignore[attr-defined]
        tools = Toolset(ws)
        read = await tools.call("read_file", {"path": "/board/2026/minutes.md"})
        assert "Falcon" in read["content"]
        search = await tools.call("search", {"query": "acquisition codename Falcon"})
        assert [hit["path"] for hit in search["hits"]] == ["/board/2026/minutes.md"]


def test_the_command_refuses_a_file_of_the_old_schema(tmp_path: Path) -> None:
    old = tmp_path / "old.toml"
    old.write_text(
        '[[mounts]]\nprefix = "/board"\npath = "board"\n[policy]\nrules = []\n', encoding="utf-8"
    )
    result = CliRunner().invoke(main, ["mcp", "--config", str(old)])
    assert result.exit_code != 0
    assert f"{old}: mount /board: unknown keys path" in result.output
    assert 'a mount\'s "path" is now url = "file:FOLDER"' in result.output
