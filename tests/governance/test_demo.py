"""The governed demo: its corpus is labelled in front matter, every user sees exactly the
documents the labels allow (through glob, list, grep, read and search), the story's questions
get the right answers and refusals, and ``bastion demo`` runs end to end in a subprocess.

Real parts throughout: the corpus on local disk, the in-memory index, the real tokenizer.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import ConfigurationError, NotFoundError, SyncWorkspace
from bastion.core.models import DEFAULT_CLASSIFICATIONS
from bastion.demo.corpus import (
    CorpusDocument,
    DemoUser,
    documents,
    role_hierarchy,
    user,
    users,
    write_corpus,
)
from bastion.demo.story import QUESTIONS, StoryAsk, build_story_workspace, run_story
from bastion.governance.answer import NO_CONTEXT, AnswerStatus
from bastion.governance.answer.text import chunk_sentences
from bastion.labels.frontmatter import FrontMatter, split_front_matter

ORDER = list(DEFAULT_CLASSIFICATIONS)


def _effective(roles: frozenset[str]) -> set[str]:
    graph = role_hierarchy()
    seen: set[str] = set()
    todo = list(roles)
    while todo:
        role = todo.pop()
        if role not in seen:
            seen.add(role)
            todo += graph.get(role, ())
    return seen


def _may_read(person: DemoUser, doc: CorpusDocument) -> bool:
    """The reference rule, written out: same tenant, clearance at or above the
    classification, and a shared role unless the document names none."""
    return (
        doc.tenant == person.tenant
        and ORDER.index(person.clearance) >= ORDER.index(doc.classification)
        and (not doc.roles or bool(doc.roles & _effective(person.roles)))
    )


def _expected(person: DemoUser) -> set[str]:
    return {doc.path for doc in documents() if _may_read(person, doc)}


def _body(doc: CorpusDocument) -> str:
    return doc.text[_front(doc).end :]


def _front(doc: CorpusDocument) -> FrontMatter:
    found = split_front_matter(doc.text, doc.path)
    assert found is not None, doc.path
    return found


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> SyncWorkspace:
    return build_story_workspace(tmp_path_factory.mktemp("story") / "corpus")


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[StoryAsk], str]]:
    lines: list[str] = []
    asks = run_story(lines.append)
    yield asks, "\n".join(lines)


# -- the corpus -------------------------------------------------------------------------------


def test_the_corpus_covers_two_tenants_four_classifications_and_the_departments() -> None:
    docs = documents()
    assert 14 <= len(docs) <= 20
    assert {d.tenant for d in docs} == {"larkspur", "tidewater"}
    assert {d.classification for d in docs} == set(DEFAULT_CLASSIFICATIONS)
    assert {"hr", "finance", "engineering", "legal", "security"} <= {d.department for d in docs}
    for tenant in ("larkspur", "tidewater"):
        mine = [d for d in docs if d.tenant == tenant]
        assert {"public", "internal", "confidential", "restricted"} == {
            d.classification for d in mine
        }


def test_every_document_states_its_labels_in_front_matter() -> None:
    for doc in documents():
        meta, body = _front(doc).metadata, _body(doc)
        assert meta["tenant"] == doc.tenant, doc.path
        assert meta["classification"] == doc.classification, doc.path
        assert doc.path.startswith(f"/{doc.tenant}/")
        assert body.lstrip().startswith("# "), doc.path
        if doc.classification != "public":
            assert meta["roles"], f"{doc.path}: a non-public document names its readers"


def test_every_user_has_a_known_tenant_role_and_clearance() -> None:
    graph = role_hierarchy()
    for person in users():
        assert person.tenant in {"larkspur", "tidewater"}
        assert person.clearance in DEFAULT_CLASSIFICATIONS
        assert person.roles <= set(graph)
    assert _effective(frozenset({"executive"})) == set(graph)
    with pytest.raises(ConfigurationError, match="no demo user 'nobody'"):
        user("nobody")


# -- who sees what ----------------------------------------------------------------------------


@pytest.mark.parametrize("person", users(), ids=[u.id for u in users()])
def test_each_user_sees_exactly_what_the_labels_allow(ws: SyncWorkspace, person: DemoUser) -> None:
    view = ws.with_principal(person.principal)
    expected = _expected(person)
    assert expected, "every demo user reads something"

    assert {str(e.path) for e in view.glob("/**/*.md")} == expected
    listed = {str(e.path) for e in view.list("/", recursive=True) if e.is_file}
    assert listed == expected
    grepped = {m.path for m in view.grep(r"\S", regex=True).matches}
    assert grepped == expected
    searched = {
        hit.path for doc in documents() for hit in view.search(doc.title, mode="bm25", k=50).hits
    }
    assert searched == expected
    for doc in documents():
        if doc.path in expected:
            assert view.read_text(doc.path) == doc.text
        else:
            # Another tenant's mount is no mount at all for this user (NoMountError is a
            # NotFoundError); inside their own tenant, a hidden file is plainly not found.
            with pytest.raises(NotFoundError, match=r"not found|not under any mount"):
                view.read_text(doc.path)


def test_labels_come_from_front_matter_not_from_the_file_name(tmp_path: Path) -> None:
    """The salary bands saved under a public-sounding name stay hidden from the visitor; the
    press release saved as ``hr/salary-bands.md`` is public."""
    folder = tmp_path / "corpus"
    write_corpus(folder)
    salary = folder / "larkspur" / "hr" / "salary-bands.md"
    press = folder / "larkspur" / "public" / "press-release-wren-2.md"
    salary_text, press_text = salary.read_text(), press.read_text()
    salary.write_text(press_text)
    press.write_text(salary_text)

    from bastion.demo.corpus import corpus_mounts, demo_policy
    from bastion.workspace import Workspace

    ws = Workspace(corpus_mounts(folder), policy=demo_policy()).sync()
    gus = ws.with_principal(user("gus").principal)
    visible = {str(e.path) for e in gus.glob("/**/*.md")}
    assert "/larkspur/hr/salary-bands.md" in visible
    assert "/larkspur/public/press-release-wren-2.md" not in visible
    assert "Wren 2" in gus.read_text("/larkspur/hr/salary-bands.md")
    with pytest.raises(NotFoundError):
        gus.read_text("/larkspur/public/press-release-wren-2.md")


# -- the story --------------------------------------------------------------------------------


def test_the_story_asks_every_question_of_every_asker(story: tuple[list[StoryAsk], str]) -> None:
    asks, _ = story
    assert [(a.question, a.user.id) for a in asks] == [
        (q, uid) for q, ids in QUESTIONS for uid in ids
    ]


def test_askers_without_an_authorized_document_get_exactly_no_context(
    story: tuple[list[StoryAsk], str],
) -> None:
    asks, _ = story
    refused = {(a.user.id, a.question) for a in asks if a.answer.status is AnswerStatus.NO_CONTEXT}
    assert refused == {
        ("gus", QUESTIONS[0][0]),
        ("ana", QUESTIONS[1][0]),
        ("omar", QUESTIONS[2][0]),
        ("zoe", QUESTIONS[2][0]),
        ("ana", QUESTIONS[3][0]),
        ("tom", QUESTIONS[3][0]),
    }
    for ask in asks:
        if ask.answer.status is AnswerStatus.NO_CONTEXT:
            assert ask.answer.answer == NO_CONTEXT
            assert ask.answer.citations == () and ask.answer.contexts == ()


def test_each_answer_cites_the_askers_own_document(story: tuple[list[StoryAsk], str]) -> None:
    asks, _ = story
    cited = {
        (a.user.id, a.question): {c.path for c in a.answer.citations}
        for a in asks
        if a.answer.citations
    }
    assert cited == {
        ("ana", QUESTIONS[0][0]): {"/larkspur/handbook/travel-and-expenses.md"},
        ("tom", QUESTIONS[0][0]): {"/tidewater/handbook/expenses.md"},
        ("mei", QUESTIONS[1][0]): {"/larkspur/hr/salary-bands.md"},
        ("zoe", QUESTIONS[1][0]): {"/tidewater/hr/salary-bands.md"},
        ("lena", QUESTIONS[2][0]): {"/larkspur/legal/project-heron.md"},
        ("raj", QUESTIONS[3][0]): {"/larkspur/engineering/on-call.md"},
    }
    for ask in asks:  # answers verified; refusals cite nothing and are never "verified"
        assert ask.answer.verified == bool(ask.answer.citations), (ask.user.id, ask.question)
        assert ask.answer.verification is not None and ask.answer.verification.passed


def test_no_answer_holds_a_sentence_its_asker_may_not_read(
    story: tuple[list[StoryAsk], str],
) -> None:
    asks, _ = story
    for ask in asks:
        for doc in documents():
            if _may_read(ask.user, doc):
                continue
            for sentence in chunk_sentences(_body(doc)):
                assert sentence not in ask.answer.answer, (ask.user.id, doc.path)
            for context in ask.answer.contexts:
                assert context.path != doc.path


def test_the_story_output_shows_answers_citations_and_refusals(
    story: tuple[list[StoryAsk], str],
) -> None:
    _, text = story
    assert "17 documents of 2 companies (larkspur, tidewater)" in text
    assert "gus@larkspur    -                  public        2/17" in text
    assert "  gus@larkspur   No document you can read answers this question." in text
    assert "  omar@larkspur  No document you can read answers this question." in text
    assert "  zoe@tidewater  No document you can read answers this question." in text
    assert "Expense claims under $400 need approval from your line manager. [1]" in text
    assert "expense claims up to $300 are approved by your shift lead. [1]" in text
    assert "[1] /larkspur/hr/salary-bands.md:" in text
    assert "[1] /tidewater/hr/salary-bands.md:" in text
    assert "[1] /larkspur/legal/project-heron.md:" in text
    assert "6 of 6 answers verified" in text
    probes = [
        r"ana@larkspur +read /larkspur/hr/salary-bands.md +-> refused \(NotFoundError\): "
        r"/larkspur/hr/salary-bands.md not found",
        r"tom@tidewater +list /larkspur +-> refused \(NoMountError\)",
        r"tom@tidewater +list / +-> /tidewater\n",
        r"zoe@tidewater +grep 'Heron' everywhere +-> 0 matching lines",
        r"omar@larkspur +search 'Project Heron' +-> 0 hits",
        r"lena@larkspur +grep 'Heron' everywhere +-> 4 matching lines",
    ]
    for probe in probes:
        assert re.search(probe, text), probe
    # The one place Project Heron's text may appear is lena's answer.
    heron_lines = [line for line in text.splitlines() if "Fenwick" in line]
    assert len(heron_lines) == 1 and "lena@larkspur" in heron_lines[0]


def test_bastion_demo_runs_end_to_end_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bastion.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "# Part 1: one governed filesystem for an agent" in out
    assert "# Part 2: governed answers over two companies' documents" in out
    assert out.count("No document you can read answers this question.") == 6
    assert "[1] /larkspur/engineering/on-call.md:" in out
    assert "refused (NotFoundError): /docs/hr/salaries.md not found" in out
