"""The dependency rule, checked on the source (``docs/architecture.md``).

Every import counts: at module level, inside a function, under ``if TYPE_CHECKING:`` and in a
``try``. A lazy or type-only import is still a dependency: it breaks the same way when the
imported part moves, and an arrow drawn in a type hint is an arrow in the design.

* Each part of the package sits on one layer of :data:`LAYERS`; a module imports only from its
  own part or from parts on lower layers (no upward, no sideways imports).
* Nothing inside the package imports the package root ``bastion`` (it re-exports the public
  surface, so an import of it from inside is an import of everything).
* No import cycle between modules, anywhere.
* No module imports another module's ``_private`` name; a ``_private`` module is imported only
  from inside its own package; an attribute ``obj._name`` is read only in the module that
  defines ``_name`` (third-party implementer hooks are listed in :data:`FOREIGN_PRIVATE`).
* Modules and classes stay small, counted on the syntax tree (:data:`MAX_STATEMENTS`,
  :data:`MAX_METHODS`): reflowing lines neither meets nor breaks a limit.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "bastion"
ROOT = "bastion"

LAYERS: dict[str, int] = {
    "core": 0,  # pure domain and ports: the standard library only
    "labels": 1,  # document labels: front matter, the resolver, sidecars, the labelling store
    "remote": 1,  # HTTP plumbing for remote services (retries, one OpenAI-compatible client)
    "analysis": 1,  # the keyword analyzer: keyword search and the answer's checks share it
    "configfile": 1,  # the one reader of TOML / YAML settings files (config, identity, server)
    "testing": 1,  # the store contract a plug-in runs (pytest, imported lazily)
    "stores": 2,
    "knowledge": 2,
    "governance": 2,
    "sandbox": 2,  # takes the workspace through sandbox.port.SandboxWorkspace
    "workspace": 3,
    "agents": 4,
    "config": 4,  # the composition root: builds stores, knowledge and the workspace from a file
    "demo": 5,  # the tour and its corpus; the server's demo and the CLI use it
    "server": 6,  # `bastion serve` runs it
    "cli": 7,
}
"""Lower imports nothing higher; parts on one layer import nothing from each other."""

FOREIGN_PRIVATE: dict[tuple[str, str], str] = {
    ("bastion.stores._fsspec_objects", "_strip_protocol"): "fsspec's path hook for filesystems",
    ("bastion.stores._fsspec_s3", "_strip_protocol"): "fsspec's path hook for filesystems",
    ("bastion.stores._fsspec_s3", "_call_s3"): "s3fs: one S3 call with its retries",
    ("bastion.stores._fsspec_s3", "_copy_managed"): "s3fs: a server-side multipart copy",
    ("bastion.stores._fsspec_s3", "_s3"): "s3fs: its botocore client (conditional writes)",
    ("bastion.stores._fsspec_s3", "_s3creator"): "s3fs: whether its botocore client is made",
    ("bastion.stores.fsspec", "_call_s3"): "s3fs: how an S3 filesystem is told from others",
}
"""``(module, attribute)``: private attributes of third-party objects that a store adapter
reads on purpose, each with what it is."""

PENDING: dict[str, str] = {}
"""Known breaches, each with its way out. A ratchet: a breach found and not listed fails, and so
does a listed one that is gone (delete its line)."""


@dataclass(frozen=True, slots=True)
class Edge:
    """One import of a package module by another."""

    source: str
    target: str
    """The module imported: ``from a.b import c`` targets ``a.b.c`` when that is a module."""
    names: tuple[str, ...]
    """The names taken (``from ... import``); empty for ``import a.b``."""
    line: int

    def where(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(_modules()[module].read_text(encoding="utf-8"))


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if _modules()[module].name != "__init__.py":
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


@cache
def _edges() -> tuple[Edge, ...]:
    modules = _modules()
    found: list[Edge] = []
    for module in modules:
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.Import):
                found += [
                    Edge(module, alias.name, (), node.lineno)
                    for alias in node.names
                    if alias.name.split(".")[0] == ROOT
                ]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, node)
                if base.split(".")[0] != ROOT:
                    continue
                whole = [a.name for a in node.names if f"{base}.{a.name}" not in modules]
                found += [
                    Edge(module, f"{base}.{a.name}", (), node.lineno)
                    for a in node.names
                    if f"{base}.{a.name}" in modules
                ]
                if whole:
                    found.append(Edge(module, base, tuple(whole), node.lineno))
    return tuple(found)


def _part(module: str) -> str:
    """The part of the package a module belongs to (``bastion.stores.local`` -> ``stores``);
    ``""`` for the package root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


# -- the table ----------------------------------------------------------------------------------


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {_part(m) for m in _modules()} - {""}
    assert parts - LAYERS.keys() == set(), "place the new part in LAYERS and docs/architecture.md"
    assert LAYERS.keys() - parts == set(), "a part in LAYERS no longer exists"


def _layer_breaches() -> dict[str, str]:
    return {
        f"{e.source} -> {e.target}": f"{e.where()} ({_part(e.source)} on layer "
        f"{LAYERS[_part(e.source)]}, {_part(e.target)} on {LAYERS[_part(e.target)]})"
        for e in _edges()
        if _part(e.source)
        and _part(e.target)
        and _part(e.source) != _part(e.target)
        and LAYERS[_part(e.target)] >= LAYERS[_part(e.source)]
    }


def test_no_import_runs_up_or_sideways() -> None:
    breaches = _layer_breaches()
    assert [v for k, v in breaches.items() if k not in PENDING] == []


def test_nothing_inside_imports_the_package_root() -> None:
    wrong = [e.where() + f" {list(e.names)}" for e in _edges() if e.target == ROOT and e.source]
    assert wrong == []


def test_core_imports_only_stdlib_and_core() -> None:
    offenders = []
    for module in _modules():
        if _part(module) != "core":
            continue
        for node in ast.walk(_tree(module)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [_resolve(module, node)]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == ROOT:
                    if _part(name) != "core":
                        offenders.append(f"{module}: {name}")
                elif top not in sys.stdlib_module_names and top != "__future__":
                    offenders.append(f"{module}: {name}")
    assert offenders == []


def test_workspace_never_imports_a_concrete_store() -> None:
    wrong = [
        e.where()
        for e in _edges()
        if _part(e.source) == "workspace" and _part(e.target) == "stores"
    ]
    assert wrong == []


# -- cycles -------------------------------------------------------------------------------------


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _cycle_breaches() -> dict[str, str]:
    graph: dict[str, set[str]] = {m: set() for m in _modules()}
    for edge in _edges():
        if edge.target in graph and edge.target != edge.source:
            graph[edge.source].add(edge.target)
    return {"cycle " + " ".join(c): " <-> ".join(c) for c in _cycles(graph)}


def test_no_import_cycle_between_modules() -> None:
    breaches = _cycle_breaches()
    assert [v for k, v in breaches.items() if k not in PENDING] == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


# -- private names ------------------------------------------------------------------------------


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_another_modules_private_name() -> None:
    wrong = [
        f"{e.where()} {name}"
        for e in _edges()
        for name in e.names
        if _private(name) and e.target != e.source
    ]
    assert wrong == []


def test_a_private_module_is_imported_only_inside_its_package() -> None:
    """``stores/_fd.py`` is the stores package's own: ``bastion.stores.local`` may import it,
    ``bastion.sandbox`` may not."""
    wrong = []
    for edge in _edges():
        parts = edge.target.split(".")
        for depth, part in enumerate(parts):
            if _private(part):
                package = ".".join(parts[:depth])
                if not edge.source.startswith(package + "."):
                    wrong.append(edge.where())
                break
    assert wrong == []


def _defined(tree: ast.Module) -> set[str]:
    """Every name a module defines: functions, classes, assigned names and attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def _private_reads(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``obj._name`` (``obj`` not ``self`` or ``cls``) and ``getattr(obj, "_name", ...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.lineno, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            yield node.lineno, node.args[1].value


def _private_read_breaches() -> dict[str, str]:
    found: dict[str, str] = {}
    for module in _modules():
        tree = _tree(module)
        own = _defined(tree)
        for line, name in _private_reads(tree):
            if name not in own and (module, name) not in FOREIGN_PRIVATE:
                found[f"{module} .{name}"] = f"{module}:{line} reads .{name}"
    return found


def test_private_attributes_are_read_only_where_they_are_defined() -> None:
    breaches = _private_read_breaches()
    assert [v for k, v in breaches.items() if k not in PENDING] == []


def test_every_pending_breach_still_exists() -> None:
    """Fixed one? Delete its line from PENDING."""
    found = _layer_breaches() | _cycle_breaches() | _private_read_breaches()
    assert [k for k in PENDING if k not in found] == []


def test_the_checks_see_imports_in_functions_and_under_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bastion.workspace.workspace import Workspace\n"
        "def f():\n    from bastion import Policy\n    return x._hidden\n"
    )
    tree = ast.parse(source)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert {"bastion.workspace.workspace", "bastion"} <= imported
    assert list(_private_reads(tree)) == [(6, "_hidden")]


# -- capabilities -------------------------------------------------------------------------------


def test_what_a_store_declares_is_read_not_probed() -> None:
    """``keeps_labels``, ``bounds_own_waits``, ``timeout``... are declared on the store port with
    their defaults: no module asks ``getattr(store, "keeps_labels", ...)`` or ``hasattr``."""
    declared = {name for name in _port_attributes() if not name.startswith("_")}
    probes = [
        f"{module}:{node.lineno} {node.args[1].value}"
        for module in _modules()
        for node in ast.walk(_tree(module))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in declared
    ]
    assert probes == []


def _port_attributes() -> set[str]:
    [port] = [
        node
        for node in ast.walk(_tree("bastion.core.ports"))
        if isinstance(node, ast.ClassDef) and node.name == "Store"
    ]
    names: set[str] = set()
    for item in port.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(item.name)
    return names


# -- size ---------------------------------------------------------------------------------------
# Measured on the syntax tree, so that reflowing lines can neither meet nor break a limit.

MAX_STATEMENTS = 450
"""Statements per module: every ``ast.stmt`` node, nested ones included (a ``def`` counts one,
and so does each statement of its body; a docstring counts one whatever its length)."""
MAX_METHODS = 30
"""Functions defined in one class body (methods, properties, nested helpers)."""
OVERSIZED: dict[str, tuple[int, str]] = {
    "bastion.workspace.workspace.Workspace": (
        52,
        "the public facade: one method per verb (overlay: a small object of its own)",
    ),
    "bastion.stores.local.LocalStore": (33, "split its descriptor work into stores._fd"),
    "bastion.knowledge.index.bm25.BM25": (32, "split the posting lists from the scoring"),
    "bastion.knowledge.index.memory.MemoryIndex": (31, "split the vector part from the rest"),
}
"""Classes over :data:`MAX_METHODS`, each with the most methods it may have and its way out. A
ratchet: one that grows fails, and so does one that is back under the limit (delete its
line)."""


def _statements(tree: ast.Module) -> int:
    return sum(isinstance(node, ast.stmt) for node in ast.walk(tree))


def _methods(tree: ast.Module, module: str) -> dict[str, int]:
    return {
        f"{module}.{node.name}": sum(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in node.body
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


def test_modules_stay_small() -> None:
    too_big = {m: n for m in _modules() if (n := _statements(_tree(m))) > MAX_STATEMENTS}
    assert too_big == {}, f"split the module (at most {MAX_STATEMENTS} statements)"


def test_classes_stay_small() -> None:
    counts: dict[str, int] = {}
    for module in _modules():
        if module.startswith("bastion.testing."):
            continue  # the store contract: a list of tests, as long as the contract is
        counts.update(_methods(_tree(module), module))
    too_big = {
        name: n for name, n in counts.items() if n > OVERSIZED.get(name, (MAX_METHODS, ""))[0]
    }
    assert too_big == {}, f"split the class (at most {MAX_METHODS} methods)"
    back_under = [name for name in OVERSIZED if counts.get(name, 0) <= MAX_METHODS]
    assert back_under == [], "delete these lines from OVERSIZED"


def test_the_size_checks_count_the_tree_not_the_lines() -> None:
    one_line = ast.parse("class A:\n    def f(self): x = 1; y = 2; return x + y\n")
    reflowed = ast.parse(
        "class A:\n    def f(\n        self,\n    ):\n        x = 1\n        y = 2\n"
        "        return (\n            x\n            + y\n        )\n"
    )
    assert _statements(one_line) == _statements(reflowed) == 5
    assert _methods(one_line, "m") == _methods(reflowed, "m") == {"m.A": 1}
