"""The first hour on the light core: the workspace `bastion init` writes is usable at once by
the person who ran it (its ``default_user``), every CLI write is searchable when it returns
(``--no-index`` for bulk copies), and the index is the core's own (SQLite, no extra)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Run


def test_the_starter_acts_as_its_default_user_said_in_one_line(starter: Path, run: Run) -> None:
    done = run("put", "/scratch/x.md", input="hello\n")
    assert done.exit_code == 0, done.output
    said = [line for line in done.stderr.splitlines() if "acting as" in line]
    assert said == [
        "acting as alice (default_user of the workspace file); --as USER acts as another"
    ]
    listed = run("ls", "/")
    assert listed.exit_code == 0 and listed.stdout.split() == ["docs/", "scratch/"]
    assert run("ls", "/", "-q").stderr == ""  # -q: no note
    assert run("ls", "/", "--as", "guest").stderr == ""  # named: nothing to say


def test_a_workspace_without_a_default_says_how_to_name_one(starter: Path, run: Run) -> None:
    config = starter / "bastion.toml"
    config.write_text(config.read_text().replace('default_user = "alice"\n', ""))
    done = run("ls", "/")
    assert 'default_user = "alice"' in done.stderr and "--as USER" in done.stderr


def test_a_default_user_not_in_users_is_refused_naming_the_users(starter: Path, run: Run) -> None:
    config = starter / "bastion.toml"
    config.write_text(config.read_text().replace('default_user = "alice"', 'default_user = "zed"'))
    done = run("ls", "/", "--json")
    assert done.exit_code == 1
    error = json.loads(done.stderr)
    assert error["error"] == "configuration"
    assert "default_user" in error["message"] and "alice, bob, guest" in error["message"]


def test_put_mv_rm_keep_the_index_in_step(starter: Path, run: Run) -> None:
    assert run("put", "/scratch/quokka.md", input="The quokka is a marsupial.\n").exit_code == 0
    assert run("search", "quokka", "--json").stdout.count("/scratch/quokka.md") == 1
    assert run("mv", "/scratch/quokka.md", "/scratch/q.md").exit_code == 0
    paths = [h["path"] for h in json.loads(run("search", "quokka", "--json").stdout)["hits"]]
    assert paths == ["/scratch/q.md"]
    assert run("cp", "/scratch/q.md", "/scratch/copy.md").exit_code == 0
    paths = [h["path"] for h in json.loads(run("search", "quokka", "--json").stdout)["hits"]]
    assert sorted(paths) == ["/scratch/copy.md", "/scratch/q.md"]
    assert run("rm", "/scratch/q.md").exit_code == 0
    assert run("rm", "/scratch/copy.md").exit_code == 0
    assert json.loads(run("search", "quokka", "--json").stdout)["hits"] == []


def test_no_index_leaves_the_index_to_one_index_run(starter: Path, run: Run) -> None:
    for n in range(3):
        done = run("put", "--no-index", f"/scratch/w{n}.md", input=f"wombat {n}\n")
        assert done.exit_code == 0
    assert json.loads(run("search", "wombat", "--json").stdout)["hits"] == []
    assert run("index", "-q").exit_code == 0
    assert len(json.loads(run("search", "wombat", "--json").stdout)["hits"]) == 3


def test_the_starters_index_is_the_cores_sqlite_file(starter: Path, run: Run) -> None:
    assert run("index", "-q").exit_code == 0
    assert (starter / ".bastion" / "index" / "index.sqlite").is_file()
    assert not (starter / ".bastion" / "index" / "tables").exists()
