"""No command is an oracle of what its principal may not see.

Two workspaces differ only by documents ``dana`` may not see (``world.py``: a restricted
file in a folder she reads, a folder of restricted files, a file labelled by its sidecar, a
file of her clearance for a role she lacks); every command she runs prints the same bytes in
both, on stdout and stderr, with the same exit code, as text and as ``--json``. Against main, ``grep`` printed "some documents
under /drive that match are not visible to dana" for the hidden figure and not for its
neighbours (thirty calls read a restricted number), and ``glob --json`` spelt hidden names
out the same way, a letter at a time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_support import Run
from click.testing import Result
from world import world as _world

READS: list[tuple[str, ...]] = [
    ("ls", "/"),
    ("ls", "/drive"),
    ("ls", "-l", "/drive"),
    ("ls", "/drive/notes"),
    ("ls", "/drive/public"),
    ("ls", "/drive/hr"),
    ("tree", "/"),
    ("tree", "/drive", "--depth", "1"),
    ("stat", "/drive"),
    ("stat", "/drive/notes"),
    ("stat", "/drive/plan.md"),
    ("stat", "/drive/deals.md"),
    ("stat", "/drive/hr"),
    ("stat", "/drive/notes/pay.txt.labels.yaml"),
    ("cat", "/drive/plan.md"),
    ("cat", "/drive/deals.md"),
    ("cat", "/drive/hr/reorg-plan.md", "--lines", "1:2"),
    ("cat", "/drive/notes/pay.txt", "--bytes", "0:6"),
    ("cat", "/drive/notes/pay.txt.labels.yaml"),
    ("grep", "-E", "acquire Osprey Telematics for 2[0-9] million", "/drive"),
    ("grep", "acquire Osprey Telematics for 21 million", "/drive"),
    ("grep", "acquire Osprey Telematics for 22 million", "/drive"),
    ("grep", "acquire Osprey Telematics for 23 million", "/drive"),
    ("grep", "-i", "osprey", "/drive"),
    ("grep", "-i", "osprey", "/drive", "--glob", "*.md"),
    ("grep", "-i", "-C", "2", "osprey", "/"),
    ("grep", "Osprey", "/drive", "--max", "1"),
    ("grep", "Osprey", "/drive/hr"),
    ("grep", "classification", "/drive/notes"),
    ("glob", "**/*"),
    ("glob", "/drive/**"),
    ("glob", "**/d*"),
    ("glob", "**/reorg*"),
    ("glob", "**/*.labels.yaml"),
    ("glob", "/drive/*.md", "--limit", "1"),
    ("glob", "*", "--path", "/drive/hr"),
    ("search", "acquire Osprey Telematics 22 million"),
    ("search", "Osprey", "-k", "1"),
    ("search", "reorg Leeds", "--path", "/drive/hr"),
    ("search", "Osprey", "--related"),
    ("search", "zebra"),
    ("ask", "How much will the board pay to acquire Osprey Telematics?"),
    ("ask", "Who moves to Leeds?"),
    ("reindex",),
    ("reindex", "--rebuild"),
    ("index",),
]

WRITES: list[tuple[str, ...]] = [
    ("put", "/drive/new.md"),
    ("put", "/drive/new.md", "--append"),
    ("cp", "/drive/plan.md", "/drive/notes/plan-copy.md"),
    ("mv", "/drive/notes/plan-copy.md", "/drive/public/plan2.md"),
    ("rm", "/drive/public/plan2.md"),
    ("rm", "/drive/new.md"),
    ("ls", "-l", "/drive"),
    ("audit",),
    ("audit", "--path", "/drive/hr"),
    ("audit", "--outcome", "refused"),
    ("audit", "--limit", "3"),
]
"""Run after :data:`READS`, in order: what they print holds the time of the write."""


_TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ?")
_NUMBERS = re.compile(r'"(time|duration_ms)": [0-9.e+-]+')
_VERSIONS = re.compile(r'"version": "[^"]*"|^version: .*$', re.MULTILINE)


def _shown(result: Result, *, written: bool) -> tuple[int, str, str]:
    """Exit code, stdout, stderr; a file's version (its inode and change time) and, after a
    write, the times, are not the same in two folders, and are written as placeholders."""

    def steady(text: str) -> str:
        text = _VERSIONS.sub("VERSION", text)
        return _NUMBERS.sub(r'"\1": 0', _TIMES.sub("T", text)) if written else text

    return result.exit_code, steady(result.stdout), steady(result.stderr)


def _run_all(
    run: Run, root: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[tuple[str, ...], tuple[int, str, str]]:
    monkeypatch.chdir(root)
    done = run("index")
    assert done.exit_code == 0, done.output
    seen: dict[tuple[str, ...], tuple[int, str, str]] = {}
    for written, commands in ((False, READS), (True, WRITES)):
        for command in commands:
            for extra in ((), ("--json",)):
                args = (*command, "--as", "dana", *extra)
                text = "# new\n\nabout Osprey\n" if command[0] == "put" else None
                seen[args] = _shown(run(*args, input=text), written=written)
    return seen


def test_every_command_prints_the_same_bytes_whatever_is_hidden(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _run_all(run, _world(tmp_path / "plain", hidden=False), monkeypatch)
    more = _run_all(run, _world(tmp_path / "more", hidden=True), monkeypatch)
    assert plain.keys() == more.keys()
    differ = [args for args in plain if plain[args] != more[args]]
    assert not differ, [(args, plain[args], more[args]) for args in differ[:3]]
    # the worlds were seen: dana read her files, found Osprey, and was refused the rest
    assert plain[("cat", "/drive/plan.md", "--as", "dana")][0] == 0
    assert "Osprey is one name" in plain[("grep", "-i", "osprey", "/drive", "--as", "dana")][1]
    assert plain[("reindex", "--as", "dana")][0] == 1
    for args, (_code, out, err) in more.items():
        asked = " ".join(args) if args[0] != "audit" else out + err  # her own requests
        for secret in ("22 million", "reorg", "minutes", "pay.txt", "deals", "board"):
            assert secret in asked or secret not in out + err, (args, secret)


def _outputs(
    run: Run, commands: Sequence[tuple[str, ...]], guess: int
) -> set[tuple[int, str, str]]:
    """What each command prints, its guessed argument (``command[guess]``) written as G."""
    found = set()
    for command in commands:
        code, out, err = _shown(run(*command, "--as", "dana"), written=False)
        found.add((code, out.replace(command[guess], "G"), err.replace(command[guess], "G")))
    return found


def test_grep_for_a_figure_tells_nothing_of_which_figure_is_there(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_world(tmp_path / "w", hidden=True))
    for flags in ((), ("--json",), ("-i",), ("-E",)):
        guesses = [
            ("grep", *flags, f"acquire Osprey Telematics for {n} million", "/drive")
            for n in range(18, 27)
        ]
        answers = _outputs(run, guesses, -2)
        assert len(answers) == 1, answers  # the same answer for the true figure and others


def test_glob_tells_nothing_of_a_hidden_name_letter_by_letter(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_world(tmp_path / "w", hidden=True))
    for flags in ((), ("--json",)):
        # /drive/d* would hold deals.md and /drive/hr/r* reorg-plan.md: both answer as
        # /drive/a* (nothing there), and a hidden folder as a missing one
        guesses = [("glob", *flags, f"/drive/{s}*") for s in ("a", "d", "de", "g", "hr/r")]
        assert len(_outputs(run, guesses, -1)) == 1
        folders = [("glob", *flags, "*", "--path", p) for p in ("/drive/hr", "/drive/zz")]
        assert len(_outputs(run, folders, -1)) == 1
