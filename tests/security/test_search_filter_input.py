"""Hostile values in a search's ``filter`` are a one-line argument error (HTTP 400), never a
``TypeError`` or ``AttributeError`` from inside the index (HTTP 500 and an error in the server's
log).

Red-team variants (area A) of the class *hostile input and bounded work* (``docs/security.md``).
The server passes a request's ``filter`` object through as it came; an agent's tool arguments
may hold anything JSON does.
"""

from __future__ import annotations

from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.core.errors import ConfigurationError
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.server.errors import describe

BAD: list[dict[str, Any]] = [
    {"section": 5},
    {"section": ["Intro"]},
    {"date_from": 2024},
    {"date_to": ["2024"]},
    {"tags": 5},
    {"tags": [1]},
    {"tags": {"a": 1}},
    {"tags": [["nested"]]},
    {"doc_ids": [[1]]},
    {"doc_ids": None},
    {"classifications": None},
    {"classifications": [None]},
]
GOOD: list[dict[str, Any]] = [
    {"tags": "ops"},
    {"tags": ["ops"]},
    {"tags": ("ops",)},
    {"doc_ids": []},
    {"section": "A"},
    {"section": None},
    {"date_from": "2020", "date_to": "2030-12"},
    {"classifications": ["public", "made-up"]},
]


async def _ws() -> Workspace:
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
    )
    await ws.write("/docs/a.md", "---\ntags: [ops]\ndate: 2024-05-01\n---\n# A\n\nalpha notes\n")
    return ws


@pytest.mark.parametrize("options", BAD, ids=[str(o) for o in BAD])
async def test_a_hostile_filter_value_is_a_one_line_argument_error(options: dict[str, Any]) -> None:
    ws = await _ws()
    for call in (
        lambda: ws.search("alpha", mode="bm25", filter=options),
        lambda: ws.ask("What are the alpha notes?", mode="bm25", filter=options),
    ):
        with pytest.raises(ValueError) as caught:
            await call()
        key = next(iter(options))
        assert str(caught.value) == str(caught.value).splitlines()[0]
        assert key in str(caught.value)
        status, code, _message = describe(caught.value)
        assert (status, code) == (400, "bad_argument")


@pytest.mark.parametrize("options", GOOD, ids=[str(o) for o in GOOD])
async def test_well_formed_filter_values_still_search(options: dict[str, Any]) -> None:
    ws = await _ws()
    result = await ws.search("alpha", mode="bm25", filter=options)
    assert all(h.path == "/docs/a.md" for h in result.hits)


async def test_an_unknown_filter_key_of_any_type_is_named_in_one_line() -> None:
    ws = await _ws()
    with pytest.raises(ConfigurationError, match="unknown search filter 1, nope"):
        await ws.search("alpha", mode="bm25", filter={1: "x", "nope": "y"})  # type: ignore[dict-item]


@pytest.mark.parametrize("index", ["memory", "postgres"])
async def test_a_huge_k_asks_for_every_hit(index: str, request: pytest.FixtureRequest) -> None:
    """``k`` past any index's size (``10**30``) returns every hit, on PostgreSQL too (whose
    LIMIT is a 64-bit integer: it failed there as an index fault, HTTP 502)."""
    from bastion.knowledge.embedders.hashing import HashingEmbedder

    model = HashingEmbedder()
    if index == "postgres":
        from bastion.knowledge.index.postgres import PostgresIndex

        knowledge = Knowledge(
            PostgresIndex(request.getfixturevalue("pg_dsn"), dim=model.dim), embedder=model
        )
    else:
        knowledge = Knowledge(MemoryIndex(), embedder=model)
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())], policy=Policy.allow_all(), knowledge=knowledge
    )
    try:
        await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
        for mode in ("bm25", "vector", "hybrid"):
            for k in (10**12, 10**30):
                assert [h.path for h in (await ws.search("alpha", mode=mode, k=k)).hits] == [
                    "/docs/a.md"
                ]
    finally:
        knowledge.close()
