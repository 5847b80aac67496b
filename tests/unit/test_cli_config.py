"""`bastion index`, `reindex`, `search` and `ask` read the same workspace file as `bastion mcp`
and `load_workspace` (``--config``): a mount's labels hide its documents from a principal
without the clearance or the role, on every entry point. Run in-process with click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bastion.cli import main

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
labels = { classification = "restricted", roles = ["board"] }

[[mounts]]
prefix = "/handbook"
url = "file:handbook"
scope = "read_only"

[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]
"""
USERS = """
[users.chair]
roles = ["board"]
clearance = "restricted"

[users.admin]
roles = ["admin"]
clearance = "restricted"
"""


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "board").mkdir()
    (tmp_path / "board" / "minutes.md").write_text(
        "# Minutes\n\nThe acquisition codename is Falcon.\n", encoding="utf-8"
    )
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "leave.md").write_text(
        "# Leave\n\nAsk your lead before taking leave.\n", encoding="utf-8"
    )
    (tmp_path / "users.toml").write_text(USERS, encoding="utf-8")
    file = tmp_path / "bastion.toml"
    file.write_text(CONFIG, encoding="utf-8")
    done = _run("index", "--config", str(file))
    assert done.exit_code == 0, done.output
    assert (tmp_path / "index").is_dir()
    return file


def test_search_acts_for_the_files_principal(config: Path) -> None:
    hidden = _run("search", "acquisition codename", "--config", str(config))
    assert hidden.exit_code == 0, hidden.output
    assert "minutes" not in hidden.output and "Falcon" not in hidden.output
    public = _run("search", "leave", "--config", str(config))
    assert "/handbook/leave.md" in public.output
    config.write_text(
        CONFIG.replace(
            'id = "intern"', 'id = "chair"\nroles = ["board"]\nclearance = "restricted"'
        ),
        encoding="utf-8",
    )
    shown = _run("search", "acquisition codename", "--config", str(config))
    assert "/board/minutes.md" in shown.output


@pytest.mark.parametrize(("user", "sees"), [("chair", True), ("admin", False)])
def test_ask_honours_the_mount_labels(config: Path, user: str, sees: bool) -> None:
    users = str(config.parent / "users.toml")
    result = _run(
        "ask", "What is the acquisition codename?", "--as", user, "--users", users,
        "--config", str(config), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert ("Falcon" in answer["answer"]) is sees
    assert ("/board/minutes.md" in json.dumps(answer["citations"])) is sees


def test_reindex_with_the_file(config: Path) -> None:
    (config.parent / "handbook" / "travel.md").write_text("# Travel\n\nBook trains.\n")
    result = _run("reindex", "--config", str(config))
    assert result.exit_code == 0, result.output
    found = _run("search", "trains", "--config", str(config))
    assert "/handbook/travel.md" in found.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["index", "--keyword-only"],
            "--config takes the index from the file: drop --keyword-only",
        ),
        (["index", "--index", "elsewhere"], "drop --index"),
        (["search", "q", "--index", "elsewhere"], "drop --index"),
        (["index", "some-folder"], "give a folder PATH or --config FILE"),
    ],
)
def test_options_that_would_contradict_the_file_are_refused(
    config: Path, args: list[str], message: str
) -> None:
    if "some-folder" in args:
        args = ["index", str(config.parent / "handbook")]
    result = _run(*args, "--config", str(config))
    assert result.exit_code != 0 and message in result.output


def test_a_file_without_an_index_or_with_a_typo_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "bastion.toml"
    file.write_text(CONFIG.split("[principal]")[1].replace('id = "intern"', ""), encoding="utf-8")
    (tmp_path / "board").mkdir()
    (tmp_path / "handbook").mkdir()
    result = _run("search", "q", "--config", str(file))
    assert result.exit_code != 0 and "needs a [knowledge] table" in result.output
    file.write_text(CONFIG.replace("embedder", "embeder"), encoding="utf-8")
    result = _run("search", "q", "--config", str(file))
    assert result.exit_code != 0 and f"{file}: knowledge: unknown keys embeder" in result.output
