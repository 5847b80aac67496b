"""The workspace is composed, not stitched: plain parts with one job each, no import circle."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from bastion.core.audit import MemoryAuditSink
from bastion.core.mounts import Mount
from bastion.core.policy import Policy
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "bastion" / "workspace"

PREFIX = "bastion.workspace."

ALLOWED = {("workspace", "sync")}
"""``Workspace.sync()`` names the facade derived from it (a type-checking import only)."""


def _module_imports(path: Path) -> set[str]:
    """Sibling modules imported at module level (``TYPE_CHECKING`` blocks included; imports
    inside functions are lazy and left out)."""
    found: set[str] = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If):
            body.extend(node.body + node.orelse)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
            found.add(str(node.module).split(".")[2])
    return found


def test_the_modules_of_the_workspace_import_no_circle() -> None:
    graph = {
        f.stem: {m for m in _module_imports(f) if (f.stem, m) not in ALLOWED}
        for f in PACKAGE.glob("*.py")
        if f.stem != "__init__"
    }
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, " -> ".join((*trail, module))
        if module in done:
            return
        for imported in graph.get(module, ()):
            visit(imported, (*trail, module))
        done.add(module)

    for module in graph:
        visit(module, ())


def test_the_workspace_is_a_plain_class_and_its_coroutines_delegate() -> None:
    assert Workspace.__bases__ == (object,)
    for name, member in inspect.getmembers(Workspace, inspect.iscoroutinefunction):
        if name.startswith("_"):
            continue
        source = inspect.getsource(member)
        body = ast.parse(source.strip()).body[0]
        assert isinstance(body, ast.AsyncFunctionDef)
        statements = [s for s in body.body if not isinstance(s, ast.Expr)]  # the docstring
        if name == "run":  # at most: the sandbox imported, the execute gate, the sandbox run
            assert len(statements) <= 3
        else:
            assert len(statements) == 1, f"Workspace.{name} does more than delegate"


async def test_views_for_two_principals_share_mounts_audit_and_nothing_else() -> None:
    from bastion.core.principal import Principal

    sink = MemoryAuditSink()
    owner = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all(), audit=sink)
    view = owner.with_principal(Principal.of("ada"))
    await owner.write("/m/a.txt", "one")
    assert await view.read_text("/m/a.txt") == "one"
    assert view.mounts == owner.mounts
    assert [r.principal for r in sink.records] == ["local", "ada"]
    assert [r.operation for r in sink.records] == ["write", "read"]
