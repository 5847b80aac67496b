"""``ask`` answers, cites, quotes and refuses exactly as it would if the documents hidden from
the asker did not exist; its audit records and the asker's own records tell nothing more.

Red-team variants (area A) of the class *hidden documents on every read path* ("ask (contexts,
citations, answers)", ``docs/security.md``). Two worlds hold the same visible files; one also
holds pages hidden from the asker (classification, roles, another tenant, a policy rule) that
answer the questions far better. The asker's answers, in full (text, status, citations, contexts
with their scores, verification, notes), must match; so must what the audit log says of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.audit import MemoryAuditSink
from bastion.core.paths import VPath
from bastion.core.policy import Rule
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

ASKER = Principal.of("intern", tenant="acme", clearance="internal", roles=["eng"])

VISIBLE = {
    "/docs/oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n",
    "/docs/leave.md": "# Leave\n\nEmployees take 25 days of leave a year.\n",
    "/docs/eng/build.md": "---\nroles: [eng]\n---\n# Build\n\nThe build runs every night at 2.\n",
}
HIDDEN = {
    "/docs/pay.md": (
        "---\nclassification: confidential\n---\n# Pay\n\n"
        "The pager bonus is 500 euros a week for the on-call engineer.\n"
    ),
    "/docs/hr.md": "---\nroles: [hr]\n---\n# HR\n\nThe pager bonus is paid monthly with pages.\n",
    "/docs/globex.md": (
        "---\ntenant: globex\n---\n# Globex\n\nGlobex pays a pager bonus of 900 euros.\n"
    ),
    "/docs/denied/notes.md": "# Notes\n\nThe pager bonus rises in March; pages count twice.\n",
}
POLICY = Policy(
    rules=(
        Rule.deny(["read", "search"], "/docs/denied/**", principals=["intern"]),
        Rule.allow(["read", "write", "search", "list"], "/**"),
    )
)
QUESTIONS = [
    "What is the pager bonus?",
    "How quickly are pages answered?",
    "What is the on-call pager bonus?",
    "When does the build run?",
    "How many days of leave a year?",
    "Who pays a pager bonus of 900 euros?",
]

Make = Callable[[str], Knowledge]


@pytest.fixture(params=["memory", "lance"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    made: list[Knowledge] = []

    def build(world: str) -> Knowledge:
        if request.param == "memory":
            knowledge = Knowledge(MemoryIndex())
        else:
            knowledge = Knowledge.open(tmp_path / world, embedder=None)
        made.append(knowledge)
        return knowledge

    yield build
    for knowledge in made:
        knowledge.close()


async def _world(knowledge: Knowledge, files: dict[str, str]) -> tuple[Workspace, MemoryAuditSink]:
    store = MemoryStore()
    for raw, text in files.items():
        path = VPath.parse(raw.removeprefix("/docs"))
        await store.makedirs(path.parent)
        await store.write(path, text.encode())
    audit = MemoryAuditSink()
    owner = Workspace([Mount.of("/docs", store)], policy=POLICY, knowledge=knowledge, audit=audit)
    await owner.rebuild_index()
    return owner.with_principal(ASKER), audit


def _said(answer: Any) -> Any:
    """The answer as the asker gets it, scores to 4 decimals (sums taken in another order
    round in the last bits)."""
    return _rounded(answer.to_dict())


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


def _records(audit: MemoryAuditSink, since: int) -> list[tuple[str, str, bool, str, int]]:
    """The asker's own records as the asker reads them (what it was told)."""
    return [
        (r.operation, str(r.path), r.allowed, r.reason if r.told is None else r.told, r.bytes)
        for r in audit.records[since:]
        if r.principal == ASKER.id
    ]


async def test_ask_says_the_same_with_and_without_hidden_documents(make: Make) -> None:
    alone, alone_log = await _world(make("alone"), VISIBLE)
    crowded, crowded_log = await _world(make("crowded"), {**VISIBLE, **HIDDEN})
    for question in QUESTIONS:
        for options in ({}, {"k": 2}, {"path": "/docs/eng"}, {"relevance_floor": None}):
            marks = len(alone_log.records), len(crowded_log.records)
            want = _said(await alone.ask(question, mode="bm25", **options))
            got = _said(await crowded.ask(question, mode="bm25", **options))
            assert got == want, (question, options)
            assert "500" not in got["answer"] and "900" not in got["answer"]
            assert _records(crowded_log, marks[1]) == _records(alone_log, marks[0])


async def test_a_refused_question_cites_nothing_and_says_no_more(make: Make) -> None:
    crowded, _ = await _world(make("refused"), {**VISIBLE, **HIDDEN})
    answer = await crowded.ask("What is the pager bonus?", mode="bm25")
    assert answer.answer == "No document you can read answers this question."
    assert answer.citations == ()
    assert all(c.path in VISIBLE for c in answer.contexts)
    answered = await crowded.ask("How quickly are pages answered?", mode="bm25")
    assert [c.path for c in answered.citations] == ["/docs/oncall.md"]


async def _written(knowledge: Knowledge, files: dict[str, str]) -> Workspace:
    """A world whose files are written one at a time (each embedded on its own)."""
    owner = Workspace([Mount.of("/docs", MemoryStore())], policy=POLICY, knowledge=knowledge)
    for path, text in files.items():
        await owner.write(path, text)
    return owner.with_principal(ASKER)


async def test_hybrid_ask_with_the_packaged_model_says_the_same() -> None:
    """The real MiniLM, hybrid retrieval (vector candidates fused with keyword ones), files
    written one at a time. (Loaded in one batch, a document's vectors move in about the
    fourth decimal with the other texts of its batch: see the residual in docs/security.md.)"""
    from bastion.knowledge.embedders.local import LocalEmbedder

    model = LocalEmbedder()
    alone = await _written(Knowledge(MemoryIndex(), embedder=model), VISIBLE)
    crowded = await _written(Knowledge(MemoryIndex(), embedder=model), {**VISIBLE, **HIDDEN})
    for question in QUESTIONS:
        assert _said(await crowded.ask(question)) == _said(await alone.ask(question)), question
        for mode in ("hybrid", "vector"):
            got = (await crowded.search(question, k=5, mode=mode)).hits
            want = (await alone.search(question, k=5, mode=mode)).hits
            assert [h.path for h in got] == [h.path for h in want]
            assert [h.score for h in got] == pytest.approx(
                [h.score for h in want], rel=1e-6, abs=1e-6
            )
