"""``bastion changes|diff|undo|revert|checkpoint|restore`` over the journal named in
bastion.toml: every command reads the same journal file (one process each)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Run, as_json, error_of


@pytest.fixture
def journalled(starter: Path) -> Path:
    toml = starter / "bastion.toml"
    assert '\n[journal]\npath = ".bastion/journal.db"\n' in toml.read_text()  # the starter's
    return starter


def test_review_and_undo_from_the_command_line(journalled: Path, run: Run) -> None:
    assert run("put", "--as", "bob", "/scratch/a.md", input="one\n").exit_code == 0
    assert run("put", "--as", "bob", "/scratch/a.md", input="two\n").exit_code == 0
    listed = as_json(run("changes", "--as", "bob", "--json"))["changes"]
    assert [c["op"] for c in listed] == ["write", "write"]
    assert listed[1]["entries"] == [{"path": "/scratch/a.md", "before": "file", "after": "file"}]
    diff = run("diff", "--as", "bob", str(listed[1]["id"]))
    assert "-one\n+two" in diff.stdout
    assert run("checkpoint", "--as", "bob", "before-b").exit_code == 0
    assert run("put", "--as", "bob", "/scratch/b.md", input="b\n").exit_code == 0
    done = as_json(run("restore", "--as", "bob", "before-b", "--json"))
    assert done["removed"] == ["/scratch/b.md"]
    assert not (journalled / "scratch" / "b.md").exists()
    assert "took back 1 change(s)" in run("undo", "--as", "bob", str(listed[1]["id"])).stdout
    assert (journalled / "scratch" / "a.md").read_text() == "one\n"
    assert [
        c["name"] for c in as_json(run("checkpoint", "--as", "bob", "--json"))["checkpoints"]
    ] == ["before-b"]


def test_a_conflict_is_refused_with_its_code(journalled: Path, run: Run) -> None:
    run("put", "--as", "bob", "/scratch/a.md", input="one\n")
    run("put", "--as", "bob", "/scratch/a.md", input="two\n")
    first = as_json(run("changes", "--as", "bob", "--json"))["changes"][0]["id"]
    refused = run("undo", "--as", "bob", str(first), "--json")
    assert refused.exit_code != 0
    assert error_of(refused)["error"] == "conflict"
    assert (journalled / "scratch" / "a.md").read_text() == "two\n"


def test_without_a_journal_the_commands_say_so(starter: Path, run: Run) -> None:
    toml = starter / "bastion.toml"
    text = toml.read_text()
    toml.write_text(
        text.replace('[journal]\npath = ".bastion/journal.db"\nmax_age_days = 30\n', "")
    )
    assert "[journal]" not in toml.read_text()
    refused = run("changes", "--as", "bob")
    assert refused.exit_code != 0
    assert "no change journal" in refused.stderr
