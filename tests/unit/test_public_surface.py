"""One public door: ``bastion`` (and a few documented subpackages) is what users import.

The docs import only public paths; every error class Bastion raises on purpose is exported from
``bastion``; ``__version__`` comes from the installed distribution's metadata.
"""

from __future__ import annotations

import ast
import importlib
import re
from importlib.metadata import version
from pathlib import Path

import pytest

import bastion
from bastion.core.errors import BastionError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "bastion"
PUBLIC = {
    "bastion",
    "bastion.agents.langchain",
    "bastion.agents.mcp",
    "bastion.agents.openai",
    "bastion.agents.pydantic_ai",
    "bastion.demo",
    "bastion.demo.corpus",
    "bastion.demo.story",
    "bastion.sandbox",
    "bastion.server",
    "bastion.testing",
}
"""The public modules (``docs/architecture.md``, "What is public"); all else may move."""
HISTORY = {"decisions.md", "changes.md"}
"""Records of what was, quoted as it was: not teaching material."""
INTERNAL_ERRORS = {"Abandoned", "JournalRetry"}
"""Error classes raised and caught inside Bastion only (never reach a caller)."""

_FROM = re.compile(r"^\s*from (bastion[\w.]*) import (\([^)]*\)|[^\n]+)$", re.M)
_IMPORT = re.compile(r"^\s*import (bastion[\w.]*)", re.M)


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def imports_of(text: str) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every ``from bastion... import`` and ``import bastion...``."""
    found = [
        (module, [n.strip().split(" as ")[0] for n in names.strip("()").split(",") if n.strip()])
        for module, names in _FROM.findall(text)
    ]
    return found + [(module, []) for module in _IMPORT.findall(text)]


@pytest.mark.parametrize("doc", [d for d in _docs() if d.name not in HISTORY], ids=str)
def test_a_doc_imports_only_public_paths(doc: Path) -> None:
    for module, names in imports_of(doc.read_text(encoding="utf-8")):
        assert module in PUBLIC, f"{doc.name} imports the internal module {module}"
        exported = set(importlib.import_module(module).__all__)
        for name in names:
            assert name in exported, f"{doc.name}: {module} does not export {name}"


def test_the_doc_check_catches_a_private_path() -> None:
    text = "```python\nfrom bastion.core.errors import NotFoundError\nimport bastion.stores\n```"
    assert [m for m, _ in imports_of(text)] == ["bastion.core.errors", "bastion.stores"]
    assert not {m for m, _ in imports_of(text)} & PUBLIC
    parens = "from bastion import (\n    Workspace,\n    Mount,\n)\n"
    assert imports_of(parens) == [("bastion", ["Workspace", "Mount"])]


def _error_classes() -> dict[str, str]:
    """Every class in the package that derives from ``BastionError`` (by name, transitively):
    name -> module."""
    bases: dict[str, tuple[str, list[str]]] = {}
    for file in SRC.rglob("*.py"):
        module = ".".join(file.relative_to(SRC.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                bases[node.name] = (module, [n.rsplit(".", 1)[-1] for n in names])
    errors = {"BastionError": "bastion.core.errors"}
    grew = True
    while grew:
        grew = False
        for name, (module, parents) in bases.items():
            if name not in errors and any(p in errors for p in parents):
                errors[name] = module
                grew = True
    return errors


def test_every_error_class_is_exported_from_bastion() -> None:
    errors = _error_classes()
    assert len(errors) > 40
    for name, module in errors.items():
        if name.startswith("_") or name in INTERNAL_ERRORS:
            continue
        assert name in bastion.__all__, f"{module}.{name} is not exported from bastion"
        assert getattr(bastion, name) is getattr(importlib.import_module(module), name)
        assert issubclass(getattr(bastion, name), BastionError)


def test_every_exported_error_has_the_one_root() -> None:
    for name in bastion.__all__:
        value = getattr(bastion, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, BastionError), name


def test_the_version_is_the_distributions() -> None:
    assert bastion.__version__ == version("bastion")
