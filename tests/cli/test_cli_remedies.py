"""An error's advice in the words of the place the user stands: the library says ``pass
create=True``, the workspace file says ``options = { create = true }``, the command line names
its flag (``leave out -E/--regex``). The advice travels as the error's ``remedy`` attribute
(docs/decisions/, "Remedies are attributes"), never parsed out of a message."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from cli_support import Run

from bastion.core.errors import ConfigurationError
from bastion.stores.local import LocalStore

SRC = Path(__file__).resolve().parents[2] / "src" / "bastion"

LIBRARY_ONLY = {
    ("workspace/files.py", "replace_all"): "no command edits; the agents' tool names replace_all",
    ("workspace/searching.py", "knowledge"): "the CLI refuses a file without [knowledge] first",
    ("knowledge/embedders/local.py", "device"): "only a caller who asked for device='cuda'",
}
"""Python advice that no command can meet, with why."""

_PASS = re.compile(r"(?:pass|use) (\w+)=")


def _advised(node: ast.AST) -> set[str]:
    """The argument names ``pass NAME=`` (or ``use NAME=``) strings under ``node`` advise."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found |= set(_PASS.findall(sub.value))
    return found


def test_every_python_advice_in_an_error_carries_its_remedy() -> None:
    missing = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        covered: set[int] = set()
        for call in ast.walk(tree):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr == "needing":
                covered |= {id(n) for n in ast.walk(func.value)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or id(node) in covered:
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            if not name.endswith("Error"):
                continue
            missing += [
                f"{rel}: pass {arg}=" for arg in _advised(node) if (rel, arg) not in LIBRARY_ONLY
            ]
    assert missing == []


def test_the_library_says_create_true_and_carries_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"pass create=True") as caught:
        LocalStore(tmp_path / "missing")
    assert caught.value.remedy == ("create", True)


def test_a_missing_mount_folder_is_advised_in_the_files_words(starter: Path, run: Run) -> None:
    config = starter / "bastion.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace('url = "file:scratch"', 'url = "file:nowhere"'), "utf-8")
    checked = run("config", "check")
    assert checked.exit_code == 1
    said = "create it or set options = { create = true } on this mount"
    assert said in checked.stderr and "create=True" not in checked.output
    listed = run("ls", "/docs")  # the other mounts work; the log line says the same words
    assert listed.exit_code == 0
    assert said in listed.stderr and "create=True" not in listed.stderr
    # the advice works as said
    config.write_text(
        text.replace('url = "file:scratch"', 'url = "file:nowhere"\noptions = { create = true }'),
        "utf-8",
    )
    assert run("config", "check").exit_code == 0
    assert (starter / "nowhere").is_dir()


def test_a_too_complex_pattern_names_the_grep_flag(starter: Path, run: Run) -> None:
    done = run("grep", "-E", "(a{1,100}){1,10}b{1,100}c{1,100}", "/docs")
    assert done.exit_code == 2
    assert "is too complex" in done.stderr
    assert "leave out -E/--regex" in done.stderr and "regex=False" not in done.stderr
