"""Command-line conventions: grep's exit codes, one table of exit codes shared by the code
and docs/cli.md, and help on every option of every command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from cli_support import Run

from bastion.cli import main
from bastion.cli.errors import EXIT_CODES

_DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_grep_exits_0_on_a_match_1_on_none_2_on_an_error(starter: Path, run: Run) -> None:
    assert run("put", "/scratch/a.md", input="the quokka\n").exit_code == 0
    assert run("grep", "quokka", "/scratch").exit_code == 0
    none = run("grep", "wallaby", "/scratch")
    assert none.exit_code == 1 and none.stdout.strip() in ("", "(no matches)")
    missing = run("grep", "quokka", "/nowhere", "--json")
    assert missing.exit_code == 2
    assert json.loads(missing.stderr.splitlines()[-1])["error"] == "not_found"
    bad = run("grep", "-E", "(", "/scratch")
    assert bad.exit_code == 2


def test_the_exit_code_table_in_the_docs_is_the_codes_table() -> None:
    page = (_DOCS / "cli.md").read_text(encoding="utf-8")
    start = page.index("| exit code | meaning |")
    rows = page[start:].split("\n\n", 1)[0].splitlines()[2:]
    found = [tuple(cell.strip() for cell in row.strip("|").split(" | ", 1)) for row in rows]
    assert found == list(EXIT_CODES)


def test_ask_docs_name_the_same_exit_code_for_a_failed_verification() -> None:
    unverified = dict(EXIT_CODES)["4"]
    assert "verification" in unverified
    ask = (_DOCS / "ask.md").read_text(encoding="utf-8")
    assert re.search(r"4 when\s+verification failed", ask)


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        found.append((f"{prefix}{name}", command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix}{name} ")
    return found


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"bastion {name} {'/'.join(param.opts)}"
        for name, command in _commands(main)
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert missing == []


def test_errors_name_the_commands_flags_not_python_arguments(starter: Path, run: Run) -> None:
    assert run("put", "/scratch/d/x.md", input="a\n").exit_code == 0
    assert run("put", "/scratch/y.md", input="b\n").exit_code == 0
    taken = run("cp", "/scratch/y.md", "/scratch/d/x.md", "--json")
    message = json.loads(taken.stderr.splitlines()[-1])["message"]
    assert "pass -f/--overwrite" in message and "overwrite=True" not in message
    full = run("rm", "/scratch/d")
    assert "pass -r/--recursive" in full.stderr and "recursive=True" not in full.stderr
    bad = run("grep", "-E", "(", "/scratch")
    assert "leave out -E/--regex" in bad.stderr and "regex=False" not in bad.stderr


def test_the_library_keeps_its_own_words_and_the_remedy_as_an_attribute(tmp_path: Path) -> None:
    import pytest

    from bastion import MemoryStore, Mount, Policy, Workspace
    from bastion.core.errors import AlreadyExistsError

    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all()).sync()
    ws.write("/m/a.md", "a")
    ws.write("/m/b.md", "b")
    with pytest.raises(AlreadyExistsError, match="pass overwrite=True") as caught:
        ws.copy("/m/a.md", "/m/b.md")
    assert caught.value.remedy == ("overwrite", True)
