"""Acceptance: the upstream governed-RAG corpus (``shared/data/governed-rag-demo``) and its
``manifest.json``. Every role sees exactly the documents the manifest says, through read,
list, glob, grep and search, and the demo-roles queries behave as the manifest states.

Labels come from explicit metadata only: the test writes copies of the documents with front
matter holding the manifest's classification and allowed roles; a file name says nothing
(the upstream indexer's name heuristic is exactly what this corpus warns against). The role
hierarchy and the classification order are the manifest's; each role's clearance is the "Max
Classification" of upstream ``demo-roles.md``.

Real parts: the copies on local disk, the in-memory index with BM25 and the hashing embedder
(our own port's test implementation) for the vector side, the real tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bastion import Mount, NotFoundError, Policy, Principal, SyncWorkspace, Workspace
from bastion.core.models import Scope
from bastion.core.principal import Classifications, RoleGraph
from bastion.governance.answer import NO_CONTEXT, Answer, AnswerStatus
from bastion.governance.answer.text import chunk_sentences
from bastion.knowledge.embedders import HashingEmbedder
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.stores.local import LocalStore

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "governed-rag-demo"
MANIFEST: dict[str, Any] = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
DOCS: dict[str, dict[str, Any]] = {d["doc_id"]: d for d in MANIFEST["v1_docs"]}
ROLES = sorted(MANIFEST["role_hierarchy"])
QUERIES = MANIFEST["v1_demo_queries"]

CLEARANCE = {"public": "public", "hr.admin": "confidential", "admin": "confidential"}
"""Max classification per role in upstream demo-roles.md; every other role: internal."""


def _clearance(role: str) -> str:
    return CLEARANCE.get(role, "internal")


def _body(doc_id: str) -> str:
    return (DATA / DOCS[doc_id]["path"]).read_text(encoding="utf-8")


def _labelled_copy(doc_id: str) -> str:
    """The document with front matter written by us: the manifest's labels for it."""
    doc = DOCS[doc_id]
    roles = ", ".join(doc["upstream_indexer_allowed_roles"])
    return (
        f"---\ntitle: {doc['title']}\nclassification: {doc['upstream_indexer_classification']}\n"
        f"roles: [{roles}]\n---\n{_body(doc_id)}"
    )


def _workspace(folder: Path, names: dict[str, str]) -> SyncWorkspace:
    """The corpus copies in ``folder`` (``names``: doc_id -> file name), mounted read-only at
    ``/corpus`` under the manifest's policy, indexed."""
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, name in names.items():
        (folder / name).write_text(_labelled_copy(doc_id), encoding="utf-8")
    policy = Policy.allow_all(
        roles=RoleGraph.from_mapping(MANIFEST["role_hierarchy"]),
        classifications=Classifications(tuple(MANIFEST["classification_order"])),
    )
    ws = Workspace(
        [Mount.of("/corpus", LocalStore(folder), Scope.READ_ONLY)],
        policy=policy,
        knowledge=Knowledge(MemoryIndex(), embedder=HashingEmbedder()),
    ).sync()
    ws.rebuild_index()
    return ws


def _as(ws: SyncWorkspace, role: str, clearance: str | None = None) -> SyncWorkspace:
    return ws.with_principal(
        Principal.of(f"user-{role}", roles={role}, clearance=clearance or _clearance(role))
    )


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> SyncWorkspace:
    return _workspace(tmp_path_factory.mktemp("manifest") / "corpus", {d: f"{d}.md" for d in DOCS})


def _visible(view: SyncWorkspace, paths: dict[str, str]) -> dict[str, set[str]]:
    """doc_ids seen by each operation; ``paths``: workspace path -> doc_id."""
    found: dict[str, set[str]] = {}
    found["list"] = {paths[str(e.path)] for e in view.list("/corpus", recursive=True)}
    found["glob"] = {paths[str(e.path)] for e in view.glob("/corpus/**/*.md")}
    found["grep"] = {paths[m.path] for m in view.grep(r"\S", "/corpus", regex=True).matches}
    found["search bm25"] = {
        paths[hit.path]
        for doc in DOCS.values()
        for hit in view.search(doc["title"], mode="bm25", k=50).hits
    }
    found["search vector"] = {
        paths[hit.path] for hit in view.search("policy", mode="vector", k=100).hits
    }
    found["search hybrid"] = {
        paths[hit.path] for hit in view.search("policy", mode="hybrid", k=100).hits
    }
    readable = set()
    for path, doc_id in paths.items():
        try:
            text = view.read_text(path)
        except NotFoundError as exc:
            assert str(exc) == f"{path} not found"
            assert not view.exists(path)
        else:
            assert text == _labelled_copy(doc_id)
            readable.add(doc_id)
    found["read"] = readable
    return found


# -- the manifest, read as Bastion reads it ---------------------------------------------------


def test_the_shared_corpus_is_there() -> None:
    assert set(DOCS) == {"engineering-handbook", "finance-policy", "hr-confidential"}
    for doc_id in DOCS:
        assert _body(doc_id).startswith("# ")
    assert set(MANIFEST["v1_role_visibility"]) == set(ROLES)


def test_the_role_graph_inherits_as_the_manifest_says() -> None:
    graph = RoleGraph.from_mapping(MANIFEST["role_hierarchy"])
    for role, inherited in MANIFEST["role_hierarchy"].items():
        assert graph.effective({role}) == {role, *inherited}


# -- every role sees exactly what the manifest says --------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_each_role_sees_exactly_its_documents(ws: SyncWorkspace, role: str) -> None:
    expected = set(MANIFEST["v1_role_visibility"][role])
    paths = {f"/corpus/{d}.md": d for d in DOCS}
    for operation, seen in _visible(_as(ws, role), paths).items():
        assert seen == expected, f"{role} through {operation}"


def test_file_names_do_not_label(tmp_path: Path) -> None:
    """Each document saved under another document's name: access follows the front matter
    (the name heuristic upstream would get every one of them wrong)."""
    swapped = {
        "engineering-handbook": "hr-confidential.md",
        "finance-policy": "engineering-handbook.md",
        "hr-confidential": "finance-policy.md",
    }
    ws = _workspace(tmp_path / "corpus", swapped)
    paths = {f"/corpus/{name}": doc_id for doc_id, name in swapped.items()}
    for role in ROLES:
        expected = set(MANIFEST["v1_role_visibility"][role])
        for operation, seen in _visible(_as(ws, role), paths).items():
            assert seen == expected, f"{role} through {operation}"


def test_clearance_is_checked_as_well_as_roles(ws: SyncWorkspace) -> None:
    """hr.admin holds the role hr-confidential names; cleared only for internal, it no
    longer sees it (the classification order is the manifest's)."""
    view = _as(ws, "hr.admin", clearance="internal")
    assert {str(e.path) for e in view.glob("/corpus/*.md")} == {
        "/corpus/engineering-handbook.md",
        "/corpus/finance-policy.md",
    }
    with pytest.raises(NotFoundError):
        view.read_text("/corpus/hr-confidential.md")
    unknown = _as(ws, "admin", clearance="restricted")  # not a level of this policy
    assert unknown.glob("/corpus/*.md") == []


# -- the demo-roles queries, through ask -------------------------------------------------------


def _cited(answer: Answer) -> set[str]:
    return {Path(c.path).stem for c in answer.citations}


def _retrieved(answer: Answer) -> set[str]:
    return {Path(c.path).stem for c in answer.contexts}


@pytest.mark.parametrize("case", QUERIES, ids=[f"{q['role']}: {q['query']}" for q in QUERIES])
def test_demo_roles_query(ws: SyncWorkspace, case: dict[str, Any]) -> None:
    role, question = case["role"], case["query"]
    visible = set(MANIFEST["v1_role_visibility"][role])
    answer = _as(ws, role).ask(question, mode="bm25")

    # Access, always: nothing the role may not read is retrieved, cited or quoted.
    assert answer.verification is not None and answer.verification.passed
    assert answer.verified == bool(answer.citations)
    assert _retrieved(answer) <= visible
    assert _cited(answer) <= visible
    for hidden in set(DOCS) - visible:
        for sentence in chunk_sentences(_body(hidden)):
            assert sentence not in answer.answer, hidden

    expected_docs = set(case["expected_docs"])
    facts = case.get("expected_answer_contains", [])
    retrieved_text = "\n".join(c.text for c in answer.contexts)
    # Evidence: the documents that answer are retrieved, and hold the facts.
    assert expected_docs <= _retrieved(answer)
    for fact in facts:
        assert fact in retrieved_text, fact
    # The answer itself, as the manifest words it: the expected documents cited, the facts
    # stated, a refusal exactly the refusal sentence (never the nearest authorized chunk).
    assert expected_docs <= _cited(answer), f"{role}: {question!r} -> {answer.answer!r}"
    for fact in facts:
        assert fact in answer.answer, (role, question, fact)
    if case.get("expect_refusal"):
        # Whether or not words of the question occur in what the role may read.
        assert answer.answer == NO_CONTEXT and answer.status is AnswerStatus.NO_CONTEXT
        assert answer.citations == () and answer.contexts == ()
    else:
        assert answer.status is AnswerStatus.ANSWERED and answer.citations
