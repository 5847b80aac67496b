"""The dependency rule, checked on the source: core imports only the standard library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "bastion"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_imports_only_stdlib_and_core() -> None:
    offenders = []
    for file in sorted((SRC / "core").rglob("*.py")):
        for name in _imports(file):
            top = name.split(".")[0]
            if top == "bastion":
                if not name.startswith("bastion.core"):
                    offenders.append(f"{file.name}: {name}")
            elif top not in sys.stdlib_module_names and top != "__future__":
                offenders.append(f"{file.name}: {name}")
    assert offenders == []


def test_workspace_never_imports_a_concrete_store() -> None:
    for file in sorted((SRC / "workspace").rglob("*.py")):
        assert not any(n.startswith("bastion.stores") for n in _imports(file)), file.name


def test_modules_stay_small() -> None:
    sizes = {
        f.relative_to(SRC).as_posix(): len(f.read_text().splitlines()) for f in SRC.rglob("*.py")
    }
    too_big = {name: n for name, n in sizes.items() if n > 700}
    assert too_big == {}
