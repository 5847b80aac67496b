"""Red team, area A: a source router is shown only sources holding a document the asker may
read, so what it picks (and so what a search returns) never depends on hidden documents.

Class: *hidden documents on every read path* / *existence oracles* (``docs/security.md``).
A router (``Knowledge(router=...)``, ``docs/tenancy.md``) is told the sources the asker may
query; with one such source it is not asked at all. A source whose every document is hidden
(by labels, a policy rule, a blocked segment) must be left out of that list, or: the router
(a chat model, a third party) hears of it; and a router that picks it narrows the search to
nothing where, without the hidden documents, the search would have covered every source.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def _index(kind: str) -> MemoryIndex | PartitionedIndex:
    return PartitionedIndex(lambda name: MemoryIndex()) if kind == "partitioned" else MemoryIndex()


async def _world(
    kind: str, *, hidden: bool, policy: Policy | None = None
) -> tuple[Workspace, _Told]:
    router = _Told()
    ws = Workspace(
        [Mount.of("/hr", MemoryStore()), Mount.of("/eng", MemoryStore())],
        policy=policy or Policy.allow_all(),
        knowledge=Knowledge(_index(kind), router=router),
        principal=ADMIN,
    )
    await ws.write("/eng/dev.md", DEV)
    if hidden:
        await ws.write("/hr/pay.md", PAY)
    return ws, router


@pytest.mark.parametrize("kind", ["partitioned", "single"])
async def test_a_source_of_hidden_documents_is_not_shown_to_the_router(kind: str) -> None:
    ws, router = await _world(kind, hidden=True)
    reader = ws.with_principal(READER)
    router.shown.clear()
    result = await reader.search("salary", mode="bm25")
    assert all("/hr" not in shown for shown in router.shown)
    assert [h.path for h in result.hits] == ["/eng/dev.md"]


@pytest.mark.parametrize("kind", ["partitioned", "single"])
async def test_routed_results_do_not_depend_on_hidden_documents(kind: str) -> None:
    """Two worlds, with and without a restricted page under /hr: the reader's answers match."""
    with_hidden, _ = await _world(kind, hidden=True)
    without, _ = await _world(kind, hidden=False)
    for query in ("salary", "build bot", "salary bands board"):
        got = await with_hidden.with_principal(READER).search(query, mode="bm25")
        want = await without.with_principal(READER).search(query, mode="bm25")
        assert [(h.path, h.score) for h in got.hits] == [(h.path, h.score) for h in want.hits]


@pytest.mark.parametrize("kind", ["partitioned", "single"])
async def test_a_source_denied_by_a_policy_rule_is_not_shown_to_the_router(kind: str) -> None:
    policy = Policy(
        rules=(
            Rule.deny(["read", "search"], "/hr/**", principals=["reader"]),
            Rule.allow(["read", "write", "search", "list"], "/**"),
        )
    )
    ws, router = await _world(kind, hidden=True, policy=policy)
    await ws.write("/hr/open.md", "# Open\n\nSalary reviews in March.\n")  # public, but denied
    reader = ws.with_principal(Principal.of("reader", clearance="restricted"))
    router.shown.clear()
    result = await reader.search("salary", mode="bm25")
    assert all("/hr" not in shown for shown in router.shown)
    assert [h.path for h in result.hits] == ["/eng/dev.md"]


async def test_a_source_the_reader_may_read_is_still_routed() -> None:
    """The narrowing still works where the reader may see the source the router picks."""
    ws, router = await _world("partitioned", hidden=True)
    await ws.write("/hr/open.md", "# Open\n\nSalary reviews in March.\n")
    reader = ws.with_principal(READER)
    router.shown.clear()
    result = await reader.search("salary", mode="bm25")
    assert router.shown == [("/eng", "/hr")]
    assert [h.path for h in result.hits] == ["/hr/open.md"]
