"""A source router is shown only sources holding a document the asker may read, so what it picks
(and so what a search returns) never depends on hidden documents.

Red-team variants (area A) of the class *hidden documents on every read path* / *existence
oracles* (``docs/security.md``). A router (``Knowledge(router=...)``, ``docs/tenancy.md``) is
told the sources the asker may query; with one such source it is not asked at all. A source
whose every document is hidden (by labels, a policy rule, a blocked segment) must be left out of
that list, or: the router (a chat model, a third party) hears of it; and a router that picks it
narrows the search to nothing where, without the hidden documents, the search would have covered
every source.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.policy import Rule
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.partitioned import PartitionedIndex

READER = Principal.of("reader", clearance="internal")
ADMIN = Principal.of("admin", clearance="restricted")

PAY = "---\nclassification: restricted\n---\n# Pay\n\nSalary bands for the board.\n"
DEV = "# Dev\n\nSalary of the build bot: zero.\n"


class _Told:
    """A router that records the sources it was shown and picks ``/hr`` for salaries."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, ...]] = []

    def __call__(self, question: str, sources: Sequence[str]) -> list[str]:
        self.shown.append(tuple(sources))
        return ["/hr"] if "salary" in question.lower() else list(sources)


def _knowledge(kind: str, router: _Told, folder: Path) -> Knowledge:
    if kind == "lance":  # LanceDB tables, one per tenant and source
        return Knowledge.open(folder, embedder=None, router=router)
    index = PartitionedIndex(lambda name: MemoryIndex()) if kind == "partitioned" else MemoryIndex()
    return Knowledge(index, router=router)


async def _world(
    kind: str, folder: Path, *, hidden: bool, policy: Policy | None = None
) -> tuple[Workspace, _Told]:
    router = _Told()
    ws = Workspace(
        [Mount.of("/hr", MemoryStore()), Mount.of("/eng", MemoryStore())],
        policy=policy or Policy.allow_all(),
        knowledge=_knowledge(kind, router, folder),
        principal=ADMIN,
    )
    await ws.write("/eng/dev.md", DEV)
    if hidden:
        await ws.write("/hr/pay.md", PAY)
    return ws, router


@pytest.mark.parametrize("kind", ["partitioned", "single", "lance"])
async def test_a_source_of_hidden_documents_is_not_shown_to_the_router(
    kind: str, tmp_path: Path
) -> None:
    ws, router = await _world(kind, tmp_path / "w", hidden=True)
    reader = ws.with_principal(READER)
    router.shown.clear()
    result = await reader.search("salary", mode="bm25")
    assert all("/hr" not in shown for shown in router.shown)
    assert [h.path for h in result.hits] == ["/eng/dev.md"]


@pytest.mark.parametrize("kind", ["partitioned", "single", "lance"])
async def test_routed_results_do_not_depend_on_hidden_documents(kind: str, tmp_path: Path) -> None:
    """Two worlds, with and without a restricted page under /hr: the reader's answers match."""
    with_hidden, _ = await _world(kind, tmp_path / "w", hidden=True)
    without, _ = await _world(kind, tmp_path / "w0", hidden=False)
    for query in ("salary", "build bot", "salary bands board"):
        got = await with_hidden.with_principal(READER).search(query, mode="bm25")
        want = await without.with_principal(READER).search(query, mode="bm25")
        assert [(h.path, h.score) for h in got.hits] == [(h.path, h.score) for h in want.hits]


@pytest.mark.parametrize("kind", ["partitioned", "single", "lance"])
async def test_a_source_denied_by_a_policy_rule_is_not_shown_to_the_router(
    kind: str, tmp_path: Path
) -> None:
    policy = Policy(
        rules=(
            Rule.deny(["read", "search"], "/hr/**", principals=["reader"]),
            Rule.allow(["read", "write", "search", "list"], "/**"),
        )
    )
    ws, router = await _world(kind, tmp_path / "w", hidden=True, policy=policy)
    await ws.write("/hr/open.md", "# Open\n\nSalary reviews in March.\n")  # public, but denied
    reader = ws.with_principal(Principal.of("reader", clearance="restricted"))
    router.shown.clear()
    result = await reader.search("salary", mode="bm25")
    assert all("/hr" not in shown for shown in router.shown)
    assert [h.path for h in result.hits] == ["/eng/dev.md"]


async def test_a_source_the_reader_may_read_is_still_routed(tmp_path: Path) -> None:
    """The narrowing still works where the reader may see the source the router picks."""
    ws, router = await _world("partitioned", tmp_path / "w", hidden=True)
    await ws.write("/hr/open.md", "# Open\n\nSalary reviews in March.\n")
    reader = ws.with_principal(READER)
    router.shown.clear()
    result = await reader.search("salary", mode="bm25")
    assert router.shown == [("/eng", "/hr")]
    assert [h.path for h in result.hits] == ["/hr/open.md"]
