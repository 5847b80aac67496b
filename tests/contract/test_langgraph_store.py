"""LangGraphStore against the shared store contract (over LangGraph's InMemoryStore), its item
layout, and tenant isolation: a mounted store never sees outside its namespace, even over a
backend that matches namespace prefixes as text."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from langgraph.store.base import SearchOp
from langgraph.store.memory import InMemoryStore

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools import Toolset
from bastion.core.errors import ConfigurationError, NotFoundError
from bastion.core.paths import VPath
from bastion.stores.langgraph import LangGraphStore

from .store_contract import StoreContract

P = VPath.parse


class TestLangGraphStore(StoreContract):
    @pytest.fixture
    def store(self) -> LangGraphStore:
        return LangGraphStore(InMemoryStore(), namespace=("tenants", "acme", "files"))


async def test_listings_deletes_and_moves_over_many_search_pages() -> None:
    store = LangGraphStore(InMemoryStore(), namespace=("fs",), page_size=2)
    await store.makedirs(P("/d/sub"))
    for n in range(7):
        await store.write(P(f"/d/f{n}.txt"), b"x" * n)
        await store.write(P(f"/d/sub/g{n}.txt"), b"y")
    assert sorted(i.path.name for i in await store.list(P("/d"))) == [
        *(f"f{n}.txt" for n in range(7)),
        "sub",
    ]
    await store.rename(P("/d"), P("/e"))
    assert len([i async for i in store.walk()]) == 16
    assert await store.read_all(P("/e/sub/g6.txt")) == b"y"
    await store.delete(P("/e"), recursive=True)
    assert await store.list(VPath.ROOT) == []
    assert store.store.search(("fs",), limit=100) == []


# -- layout ------------------------------------------------------------------------------------


async def test_items_are_readable_by_other_langgraph_code() -> None:
    backend = InMemoryStore()
    store = LangGraphStore(backend, namespace=("tenants", "acme"))
    await store.mkdir(P("/notes"))
    await store.mkdir(P("/notes/v1.2"))
    await store.write(P("/notes/v1.2/plan.md"), b"ship it\n")
    await store.write(P("/notes/blob.bin"), b"\xff\x00")

    plan = backend.get(("tenants", "acme", "notes", "v1%2E2"), "plan.md")
    assert plan is not None
    assert plan.value["content"] == "ship it\n" and plan.value["encoding"] == "utf-8"
    assert plan.value["size"] == 8 and plan.value["parent"] == "/notes/v1.2"
    blob = backend.get(("tenants", "acme", "notes"), "blob.bin")
    assert blob is not None and blob.value["encoding"] == "base64"
    marker = backend.get(("tenants", "acme"), "notes")
    assert marker is not None and marker.value["kind"] == "directory"
    assert store.describe() == "langgraph (InMemoryStore)"


async def test_items_that_are_not_bastion_entries_are_ignored() -> None:
    backend = InMemoryStore()
    backend.put(("tenants", "acme"), "memory-1", {"text": "user likes tea"})
    store = LangGraphStore(backend, namespace=("tenants", "acme"))
    await store.write(P("/a.md"), b"a")
    assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/a.md"]
    with pytest.raises(NotFoundError):
        await store.stat(P("/memory-1"))


@pytest.mark.parametrize(
    "namespace",
    [(), "tenants", ("langgraph", "x"), ("a.b",), ("*",), ("",), ("ok", 3)],
    ids=["empty", "a-string", "reserved-root", "dot", "wildcard", "empty-label", "not-a-str"],
)
def test_a_namespace_that_could_reach_outside_is_refused(namespace: Any) -> None:
    with pytest.raises(ConfigurationError):
        LangGraphStore(InMemoryStore(), namespace=namespace)


def test_a_missing_langgraph_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "bastion.stores.langgraph")
    monkeypatch.setitem(sys.modules, "langgraph.store.base", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'bastion\[langchain\]'"):
        importlib.import_module("bastion.stores.langgraph")


# -- tenant isolation ----------------------------------------------------------------------------


class TextPrefixStore(InMemoryStore):
    """A backend that matches a search's namespace prefix as text (``"t.acme"`` is a prefix
    of ``"t.acme2"``), as stores that keep namespaces as dotted text with ``LIKE 'p%'`` do:
    the leak class of deepagents' StoreBackend (sibling tenants listing each other's files)."""

    def _filter_items(self, op: SearchOp) -> list[Any]:
        text = ".".join(op.namespace_prefix)
        wider = op._replace(namespace_prefix=op.namespace_prefix[:-1], offset=0, limit=1 << 30)
        found = super()._filter_items(wider)  # the value filter, over a wider set
        return [(item, v) for item, v in found if ".".join(item.namespace).startswith(text)]


async def _tree(store: LangGraphStore) -> set[str]:
    return {str(i.path) async for i in store.walk()}


@pytest.mark.parametrize("backend_type", [InMemoryStore, TextPrefixStore])
async def test_sibling_tenants_never_see_each_other(backend_type: type[InMemoryStore]) -> None:
    backend = backend_type()
    acme = LangGraphStore(backend, namespace=("tenants", "acme"))
    acme2 = LangGraphStore(backend, namespace=("tenants", "acme2"))
    for store, secret in ((acme, b"acme secret"), (acme2, b"acme2 secret")):
        await store.mkdir(P("/docs"))
        await store.write(P("/docs/secret.md"), secret)
        await store.write(P("/top.md"), secret)
    await acme2.mkdir(P("/docs/only-acme2"))
    await acme2.write(P("/docs/only-acme2/x.md"), b"acme2")

    if backend_type is TextPrefixStore:  # the backend itself does leak
        raw = backend.search(("tenants", "acme"), limit=100)
        assert {i.namespace for i in raw} >= {("tenants", "acme2"), ("tenants", "acme2", "docs")}

    assert await _tree(acme) == {"/docs", "/docs/secret.md", "/top.md"}
    assert await acme.read_all(P("/docs/secret.md")) == b"acme secret"
    with pytest.raises(NotFoundError):
        await acme.stat(P("/docs/only-acme2"))
    await acme.delete(P("/docs"), recursive=True)  # deletes acme's tree only
    assert await _tree(acme) == {"/top.md"}
    assert await _tree(acme2) == {
        "/docs",
        "/docs/secret.md",
        "/docs/only-acme2",
        "/docs/only-acme2/x.md",
        "/top.md",
    }
    await acme2.rename(P("/docs"), P("/moved"))
    assert await _tree(acme) == {"/top.md"}
    assert await acme2.read_all(P("/moved/only-acme2/x.md")) == b"acme2"


async def test_names_cannot_climb_out_of_the_namespace_or_collide() -> None:
    backend = InMemoryStore()
    outside = ("tenants", "other")
    backend.put(outside, "secret.md", {"kind": "file", "content": "x", "size": 1})
    store = LangGraphStore(backend, namespace=("tenants", "acme"))
    names = ("*", "%2A", "a.b", "a%2Eb", "tenants.other", "..x")  # wildcards, dots, escapes
    for name in names:
        await store.mkdir(P(f"/{name}"))
        await store.write(P(f"/{name}/secret.md"), name.encode())
    for name in names:  # each name is its own directory: no two encode alike
        assert await store.read_all(P(f"/{name}/secret.md")) == name.encode()
    namespaces = set(backend.list_namespaces(prefix=("tenants",))) - {outside}
    assert len(namespaces) == len(names) + 1
    assert all(ns[:2] == ("tenants", "acme") and len(ns) <= 3 for ns in namespaces)
    assert backend.get(outside, "secret.md").value["content"] == "x"  # type: ignore[union-attr]


async def test_workspaces_of_two_tenants_over_one_langgraph_store() -> None:
    """The deployment shape: one shared LangGraph store, each tenant's workspace mounts its
    own namespace; an agent of one tenant cannot list, grep or read the other's files."""
    backend = InMemoryStore()

    def workspace(tenant: str) -> Workspace:
        memories = LangGraphStore(backend, namespace=("tenants", tenant, "memories"))
        mounts = [Mount.of("/memories", memories), Mount.of("/scratch", MemoryStore())]
        principal = Principal.of(f"{tenant}-agent", tenant=tenant)
        return Workspace(mounts, policy=Policy.allow_all(), principal=principal)

    acme, globex = Toolset(workspace("acme")), Toolset(workspace("globex"))
    await acme.call("write_file", {"path": "/memories/keys.md", "content": "acme key 42\n"})
    await globex.call("write_file", {"path": "/memories/plan.md", "content": "globex plan\n"})

    listed = await globex.call("list_files", {"path": "/memories"})
    assert "plan.md" in listed["tree"] and "keys.md" not in listed["tree"]
    grep = await globex.call("grep", {"pattern": "acme"})
    assert grep["success"] is True and grep["total_found"] == 0
    read = await globex.call("read_file", {"path": "/memories/keys.md"})
    assert read == {"success": False, "error": "/memories/keys.md not found"}
    assert (await acme.call("read_file", {"path": "/memories/keys.md"}))["success"] is True
