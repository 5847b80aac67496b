"""Workspace.ask end to end: retrieval through the guard, no leak to any principal, the
re-check of every chunk, the audit trail, mode fallback and the blocking facade.

Real parts throughout: the in-memory index and the real tokenizer; the hashing embedder (our
own port's test implementation) for hybrid retrieval.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from bastion import (
    ConfigurationError,
    MemoryAuditSink,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Rule,
    SearchHit,
    SearchResult,
    SyncWorkspace,
    Workspace,
)
from bastion.governance.answer import NO_CONTEXT, Answer, AnswerStatus
from bastion.knowledge.embedders import HashingEmbedder
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

DOCS = {
    "/docs/oncall.md": (
        "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n"
        "Escalations go to the team lead after 30 minutes.\n"
    ),
    "/docs/deploy.md": (
        "# Deploys\n\nWe deploy the billing service on Tuesdays behind a canary.\n\n"
        "Rollbacks need approval from the release manager.\n"
    ),
    "/docs/hr/salaries.md": (
        "---\nclassification: confidential\n---\n# Salaries\n\n"
        "On-call engineers earn a pager bonus of 500 euros per week.\n"
    ),
    "/docs/eng.md": (
        "---\nroles: [engineer]\n---\n# Engineering\n\n"
        "Pages for the billing service go to the payments team.\n"
    ),
}
SECRET_SENTENCES = {
    "/docs/hr/salaries.md": "pager bonus of 500 euros",
    "/docs/eng.md": "go to the payments team",
}
LEAD = Principal.of("lead", roles={"engineer"}, clearance="confidential")
INTERN = Principal.of("intern")
ENGINEER = Principal.of("eve", roles={"engineer"}, clearance="internal")


def _ws(
    *, dense: bool = False, policy: Policy | None = None, audit: MemoryAuditSink | None = None
) -> SyncWorkspace:
    knowledge = Knowledge(MemoryIndex(), embedder=HashingEmbedder() if dense else None)
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=policy or Policy.allow_all(),
        knowledge=knowledge,
        principal=LEAD,
        audit=audit,
    ).sync()
    for path, text in DOCS.items():
        ws.write(path, text)
    return ws


def _readable(ws: SyncWorkspace, path: str) -> bool:
    return ws.exists(path)


def test_an_answer_is_verbatim_cited_and_verified() -> None:
    ws = _ws()
    answer = ws.ask("How quickly does the on-call engineer answer pages?")
    assert isinstance(answer, Answer)
    assert answer.status is AnswerStatus.ANSWERED
    assert answer.verified
    assert answer.generator == "extractive" and answer.reranker == "none"
    first = answer.answer.splitlines()[0]
    assert first.startswith("The on-call engineer answers pages within 15 minutes. §")
    cited = {c.path: c for c in answer.citations}
    assert "/docs/oncall.md" in cited
    oncall = cited["/docs/oncall.md"]
    span = oncall.end_line - oncall.start_line + 1
    lines = ws.read_text(oncall.path, offset=oncall.start_line - 1, limit=span)
    assert "answers pages within 15 minutes" in lines
    assert {c.chunk_id for c in answer.citations} <= {c.chunk_id for c in answer.contexts}
    context = next(c for c in answer.contexts if c.path == "/docs/oncall.md")
    assert context.text.startswith("# On-call")  # the whole chunk, not a snippet
    assert context.tokens > 0
    data = answer.to_dict()
    assert set(data) >= {"answer", "citations", "contexts", "verification", "guardrails"}
    assert data["citations"][0].keys() == {
        "chunk_id",
        "doc_id",
        "path",
        "start_line",
        "end_line",
        "lines",
        "spans",
        "chunk_lines",
    }
    text = answer.format()
    assert "[1]" in text and "§" not in text and "verified" in text


def test_no_authorized_context_says_so_and_cites_nothing() -> None:
    ws = _ws()
    answer = ws.with_principal(INTERN).ask("What is the pager bonus in euros?")
    assert answer.answer == NO_CONTEXT == "No document you can read answers this question."
    assert answer.status is AnswerStatus.NO_CONTEXT
    assert answer.citations == () and answer.contexts == ()
    assert not answer.verified  # a refusal cites nothing: never "verified"
    assert answer.verification is not None and answer.verification.passed


def test_lead_sees_what_the_intern_may_not() -> None:
    ws = _ws()
    lead = ws.ask("What is the pager bonus in euros?")
    assert "500 euros" in lead.answer
    assert [c.path for c in lead.citations] == ["/docs/hr/salaries.md"]
    intern = ws.with_principal(INTERN).ask("What is the pager bonus in euros?")
    assert "500" not in intern.answer


def test_a_path_rule_keeps_documents_out_of_answers() -> None:
    policy = Policy(rules=(Rule.deny(["read"], "/docs/hr/**"), Rule.allow("*", "/**")))
    ws = _ws(policy=policy)
    answer = ws.ask("What is the pager bonus in euros?")
    assert answer.status is AnswerStatus.NO_CONTEXT
    assert all(c.path != "/docs/hr/salaries.md" for c in answer.contexts)


QUESTIONS = [
    "How quickly are pages answered?",
    "What is the pager bonus?",
    "Who approves rollbacks?",
    "Where do billing pages go?",
    "When do we deploy billing?",
    "on-call engineers euros payments team lead",
]


@pytest.mark.parametrize("dense", [False, True])
def test_no_principal_ever_gets_what_it_may_not_read(dense: bool) -> None:
    ws = _ws(dense=dense)
    rng = random.Random(4)
    principals = [LEAD, INTERN, ENGINEER, Principal.of("other", tenant="elsewhere")]
    for _ in range(24):
        who = rng.choice(principals)
        view = ws.with_principal(who)
        answer = view.ask(rng.choice(QUESTIONS), k=rng.randint(1, 6))
        for item in (*answer.citations, *answer.contexts):
            assert _readable(view, item.path), (who.id, item.path)
        for path, secret in SECRET_SENTENCES.items():
            if not _readable(view, path):
                assert secret not in answer.answer
                assert all(secret not in c.text for c in answer.contexts)
        assert answer.verification is not None and answer.verification.passed, answer


def test_hybrid_is_the_default_and_falls_back_on_a_keyword_only_index() -> None:
    dense = _ws(dense=True).ask("canary deploys")
    assert dense.mode == "hybrid" and dense.notes == ()
    keyword = _ws().ask("canary deploys")
    assert keyword.mode == "bm25"
    assert keyword.notes == ("keyword-only index: hybrid retrieval fell back to bm25",)
    with pytest.raises(ConfigurationError, match="needs an embedder"):
        _ws().ask("canary deploys", mode="vector")


def test_asking_without_an_index_or_with_k_below_one_is_refused() -> None:
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all()).sync()
    with pytest.raises(ConfigurationError, match="no knowledge index"):
        ws.ask("anything")
    with pytest.raises(ValueError, match="k must be at least 1"):
        _ws().ask("anything", k=0)


def test_path_and_filter_narrow_retrieval() -> None:
    ws = _ws()
    answer = ws.ask("billing service", path="/docs/deploy.md")
    assert {c.path for c in answer.contexts} == {"/docs/deploy.md"}
    tagged = ws.ask("billing service", filter={"tags": "nothing-has-this"})
    assert tagged.status is AnswerStatus.NO_CONTEXT


def test_every_step_is_audited_without_text() -> None:
    sink = MemoryAuditSink()
    ws = _ws(audit=sink)
    question = "What is the pager bonus in euros?"
    before = len(sink.records)
    answer = ws.ask(question)
    records = sink.records[before:]
    steps = [r.operation for r in records]
    assert steps == [
        "ask.question",
        "ask.retrieve",
        "ask.relevance",
        "ask.context",
        "ask.generate",
        "ask.cite",
        "ask.verify",
        "ask",
    ]
    assert all(r.principal == "lead" for r in records)
    by_step = {r.operation: r for r in records}
    assert f"chars={len(question)} sha256=" in by_step["ask.question"].reason
    cited = answer.citations[0].chunk_id
    assert cited in by_step["ask.cite"].reason
    assert cited in by_step["ask.retrieve"].reason
    assert by_step["ask.verify"].allowed and by_step["ask.verify"].reason == "passed"
    assert by_step["ask"].reason.startswith("answered: cited 1 of")
    for record in records:
        blob = str(record.to_dict())
        assert "pager" not in blob and "euros" not in blob and "Salaries" not in blob


def test_the_facade_matches_the_async_method() -> None:
    import inspect

    assert inspect.signature(SyncWorkspace.ask) == inspect.signature(Workspace.ask)
    assert SyncWorkspace.ask.__doc__ == Workspace.ask.__doc__


# -- defence in depth: a search that returned what it should not -----------------------------------


class _LeakySearch(Workspace):
    """A workspace whose search is broken: it also returns the confidential chunk, and a chunk
    that no longer exists. ``ask`` must drop both on its own re-check."""

    async def search(self, query: str, **kwargs: Any) -> SearchResult:
        honest = await super().search(query, **kwargs)
        assert self._knowledge is not None
        index = self._knowledge.knowledge.index
        [secret] = [m for m in index.documents().values() if m.path == "/docs/hr/salaries.md"]
        chunk = index.chunks_of(secret.doc_id)[0]
        leaked = SearchHit(
            path=secret.path,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            snippet=chunk.text,
            score=99.0,
            chunk_id=chunk.chunk_id,
            doc_id=secret.doc_id,
        )
        stale = replace(honest.hits[0], chunk_id="f" * 32, score=98.0)
        return SearchResult(query=query, mode=honest.mode, hits=(leaked, stale, *honest.hits))


def test_ask_rechecks_every_chunk_itself() -> None:
    sink = MemoryAuditSink()
    shared = _ws(audit=sink)
    knowledge = shared.aio._knowledge.knowledge  # the same index, seen by a broken search
    leaky = _LeakySearch(
        [Mount.of("/docs", shared.aio.mounts[0].store)],
        policy=Policy.allow_all(),
        knowledge=knowledge,
        principal=INTERN,
        audit=sink,
    ).sync()
    answer = leaky.ask("How quickly are pages answered?")
    assert answer.status is AnswerStatus.ANSWERED
    assert all(c.path != "/docs/hr/salaries.md" for c in answer.contexts)
    assert "500 euros" not in answer.answer
    [recheck] = [r for r in sink.records if r.operation == "ask.recheck"]
    assert not recheck.allowed and recheck.bytes == 2
    assert "re-check refused it" in recheck.reason and "no longer indexed" in recheck.reason
