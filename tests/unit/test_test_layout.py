"""Tests are organised by behaviour: every test file is ``tests/<part>/test_<behaviour>.py``,
named for what it pins, never for how the bug was found (CONTRIBUTING.md, "Where a test goes").

A part is a package of ``src/bastion`` or one of the few folders that cut across parts. A
red-team variant lives beside the behaviour it pins, under that behaviour's name: a file named
``test_redteam_*``, ``test_issue<N>*``, ``test_found_*``, ``*_variants`` or ``*_regressions``
says where a test came from, not what breaks when it fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

CROSS_CUTTING = {
    "contract": "the contract suites every store (and every index) passes",
    "faults": "real faults injected under the stores: full disks, dropped connections",
    "parity": "one answer at every front end, in a world with hidden things and one without",
    "security": "attacks on the guard's promises across parts (docs/security.md)",
    "unit": "small pure pieces of the core, and project-wide checks (architecture, public API)",
    "web": "the web page driven in Chromium as a person uses it (server/static)",
}
"""Folders that are not a package of ``src/bastion``, each with the one thing it holds."""

HISTORY = re.compile(
    r"^test_(red_?team|issue_?\d+|found|bugs?|round_?\d*)(_|\.py$)"
    r"|_(variants|regressions)\.py$"
)
"""File names that tell how a bug was found instead of the behaviour pinned."""


def parts() -> set[str]:
    packages = {
        p.name for p in (ROOT / "src" / "bastion").iterdir() if (p / "__init__.py").exists()
    }
    return packages | set(CROSS_CUTTING)


def misplaced(relative: str, known: set[str]) -> str | None:
    """Why the test file at ``relative`` (a path under ``tests/``, with ``/``) breaks the
    layout, or None when it is ``<part>/test_<behaviour>.py`` with a behaviour name."""
    folders, _, name = relative.rpartition("/")
    if not folders or "/" in folders:
        return f"tests/{relative}: a test file sits at tests/<part>/test_<behaviour>.py"
    if folders not in known:
        return f"tests/{relative}: {folders!r} is no part ({', '.join(sorted(known))})"
    if HISTORY.search(name):
        return f"tests/{relative}: named by how a bug was found; name the behaviour it pins"
    return None


def test_every_test_file_is_a_part_and_a_behaviour() -> None:
    known = parts()
    found = sorted(
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("test_*.py")
        if "fixtures" not in p.relative_to(TESTS).parts
    )
    assert len(found) > 100  # the walk found the suite
    problems = [why for rel in found if (why := misplaced(rel, known))]
    assert problems == []


def test_every_part_folder_is_a_package_or_says_what_it_holds() -> None:
    known = parts()
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    assert folders <= known
    assert {"workspace", "sandbox", "server", "security"} <= folders


@pytest.mark.parametrize(
    ("relative", "refused"),
    [
        ("security/test_redteam_search_view.py", True),
        ("security/test_red_team_files.py", True),
        ("contract/test_issue16_variants.py", True),
        ("security/test_issue10.py", True),
        ("security/test_found_bugs.py", True),
        ("governance/test_leak_regressions.py", True),
        ("parity/test_edges_variants.py", True),
        ("sandbox/test_round3.py", True),
        ("test_workspace.py", True),
        ("misc/test_workspace.py", True),
        ("workspace/deep/test_read_lines.py", True),
        ("security/test_hidden_search_view.py", False),
        ("contract/test_lost_updates_processes.py", False),
        ("knowledge/test_embedder_number_formats.py", False),
        ("governance/test_foundation.py", False),
        ("workspace/test_read_lines.py", False),
    ],
)
def test_the_rule_refuses_bug_history_and_strays(relative: str, refused: bool) -> None:
    assert (misplaced(relative, parts()) is not None) is refused
