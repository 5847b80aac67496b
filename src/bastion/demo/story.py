"""The governed story of ``make demo``: two companies' documents in one workspace, the same
questions asked by different people, and who gets which answer.

The corpus (:mod:`bastion.demo.corpus`) is written to a folder and mounted read-only, one mount
per tenant; each file's front matter labels it (classification, roles). The index is built
once, for the system; every question is then asked through a view of the workspace bound to
one user, so retrieval, the re-check of every chunk, the answer and its citations only ever
see what that user may read. A user with nothing authorized gets exactly "No authorized
documents found."

Retrieval is keyword (BM25) retrieval over an in-memory index: it needs no model, runs in a
fraction of a second, and a question whose words appear in no document the user may read finds
nothing, so the refusals are exact. Answers come from the extractive answerer (sentences copied
from the cited chunks), verified before they are shown.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bastion.core.errors import OperationError
from bastion.demo.corpus import (
    DemoUser,
    corpus_mounts,
    demo_policy,
    documents,
    user,
    users,
    write_corpus,
)
from bastion.workspace import SyncWorkspace, Workspace

if TYPE_CHECKING:
    from bastion.governance.answer.models import Answer

__all__ = ["QUESTIONS", "StoryAsk", "ask_all", "build_story_workspace", "run_story"]

QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("What are the approval thresholds for expense claims?", ("gus", "ana", "tom")),
    ("What is the salary band for a senior engineer?", ("ana", "mei", "zoe")),
    ("What is Project Heron?", ("omar", "lena", "zoe")),
    ("What is the on-call response target for a page?", ("ana", "raj", "tom")),
)
"""Each question and the users (ids from ``users.toml``) who ask it, in order."""

_INDENT = " " * 17


@dataclass(frozen=True, slots=True)
class StoryAsk:
    """One user's question and the answer they got."""

    user: DemoUser
    question: str
    answer: Answer


def build_story_workspace(folder: str | Path) -> SyncWorkspace:
    """Write the corpus under ``folder``, mount it (one read-only mount per tenant) and index
    it with a keyword-only in-memory index. Bound to an operator principal: use
    ``with_principal(user.principal)`` to act for a demo user."""
    from bastion.core.principal import Principal
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.index.memory import MemoryIndex

    write_corpus(folder)
    ws = Workspace(
        corpus_mounts(folder),
        policy=demo_policy(),
        knowledge=Knowledge(MemoryIndex()),
        principal=Principal.of("demo-operator"),
    ).sync()
    ws.rebuild_index()
    return ws


def ask_all(ws: SyncWorkspace) -> list[StoryAsk]:
    """Every question of :data:`QUESTIONS`, asked by each of its users."""
    return [
        StoryAsk(asker, question, ws.with_principal(asker.principal).ask(question, mode="bm25"))
        for question, asker_ids in QUESTIONS
        for asker in (user(uid) for uid in asker_ids)
    ]


def _who(person: DemoUser) -> str:
    return f"{person.id}@{person.tenant}"


def _answer_lines(answer: Answer) -> list[str]:
    """The answer with ``[n]`` references, then ``[n] path:lines`` for each citation."""
    from bastion.governance.answer.text import number_markers

    numbers = {c.chunk_id: n for n, c in enumerate(answer.citations, start=1)}
    lines = [number_markers(line, numbers) for line in answer.answer.splitlines()]
    lines += [f"[{numbers[c.chunk_id]}] {c.path}:{c.lines}" for c in answer.citations]
    if answer.citations and not answer.verified:  # pragma: no cover - extractive verifies
        lines.append("(NOT verified)")
    return lines


def _people(ws: SyncWorkspace, out: Callable[[str], Any]) -> None:
    total = len(documents())
    out(f"{'user':16}{'roles':19}{'clearance':14}{'reads':7}who")
    for person in users():
        visible = ws.with_principal(person.principal).glob("/**/*.md")
        roles = ",".join(sorted(person.roles)) or "-"
        reads = f"{len(visible)}/{total}"
        out(f"{_who(person):16}{roles:19}{person.clearance:14}{reads:7}{person.about}")


def _questions(asks: Sequence[StoryAsk], out: Callable[[str], Any]) -> None:
    question = None
    for ask in asks:
        if ask.question != question:
            question = ask.question
            out(f'\n"{question}"')
        first, *rest = _answer_lines(ask.answer)
        out(f"  {_who(ask.user):15}{first}")
        for line in rest:
            out(f"{_INDENT}{line}")


def _probes(ws: SyncWorkspace, out: Callable[[str], Any]) -> None:
    def attempt(person: str, what: str, call: Callable[[SyncWorkspace], str]) -> None:
        view = ws.with_principal(user(person).principal)
        try:
            result = call(view)
        except OperationError as exc:
            result = f"refused ({type(exc).__name__}): {exc}"
        out(f"  {_who(user(person)):15}{what:36}-> {result}")

    attempt(
        "ana",
        "read /larkspur/hr/salary-bands.md",
        lambda v: v.read_text("/larkspur/hr/salary-bands.md"),
    )
    attempt(
        "tom",
        "list /larkspur",
        lambda v: ", ".join(str(e.path) for e in v.list("/larkspur")),
    )
    attempt(
        "tom",
        "list /",
        lambda v: ", ".join(str(e.path) for e in v.list("/")),
    )
    attempt(
        "zoe",
        "grep 'Heron' everywhere",
        lambda v: f"{len(v.grep('Heron').matches)} matching lines",
    )
    attempt(
        "omar",
        "search 'Project Heron'",
        lambda v: f"{len(v.search('Project Heron', mode='bm25'))} hits",
    )
    attempt(
        "lena",
        "grep 'Heron' everywhere",
        lambda v: f"{len(v.grep('Heron').matches)} matching lines",
    )


def run_story(out: Callable[[str], Any] = print) -> list[StoryAsk]:
    """Run the governed story, printing each part; the asks, for whoever wants to check them."""
    with tempfile.TemporaryDirectory(prefix="bastion-story-") as tmp:
        ws = build_story_workspace(Path(tmp) / "corpus")
        tenants = sorted({doc.tenant for doc in documents()})
        out(
            f"\n== A governed corpus: {len(documents())} documents of {len(tenants)} companies "
            f"({', '.join(tenants)}), each labelled in its front matter"
        )
        for mount in ws.mounts:
            out(f"  {mount.prefix!s:15}{mount.description}, read-only")

        out("\n== Who may read what (counted with glob; list, read, grep and search agree)")
        _people(ws, out)

        out("\n== The same questions, asked by different people (cited lines in brackets)")
        asks = ask_all(ws)
        _questions(asks, out)
        answered = [a.answer for a in asks if a.answer.citations]
        verified = sum(answer.verified for answer in answered)
        out(
            f"\n{verified} of {len(answered)} answers verified (every sentence is supported by "
            f"the chunk it cites); {len(asks) - len(answered)} askers had no authorized document"
        )

        out("\n== Going around the questions: the guard gives the same answer")
        _probes(ws, out)
        return asks
