"""The scripted tour that ``make demo`` runs: a governed workspace, start to finish, offline.

Part one is the filesystem an agent sees: a folder of sample documents mounted read-only at
``/docs`` (local disk), a read-write scratch area at ``/scratch`` (memory) and a write-only
drop box at ``/outbox``; it reads, writes, edits, greps and searches (keyword search over the
core's SQLite index: no extra needed) as an agent would, and shows what the guard refuses.

Part two is the governed story (:mod:`bastion.demo.story`): two companies' labelled documents,
the same questions asked by different people, who gets which answer and citations, and who
gets "No document you can read answers this question."
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bastion.core.errors import OperationError
from bastion.core.models import Scope
from bastion.core.mounts import Mount
from bastion.core.policy import FileLimits, Policy, Rule
from bastion.core.principal import Principal
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.workspace import SyncWorkspace, Workspace

__all__ = ["SAMPLE_DOCS", "build_demo_workspace", "run_demo"]

SAMPLE_DOCS: dict[str, str] = {
    "handbook.md": (
        "# Engineering handbook\n\n"
        "Every change gets a code review before it merges.\n"
        "The on-call engineer answers pages within 15 minutes.\n"
    ),
    "runbooks/deploy.md": (
        "# Deploying\n\n1. Run the test suite.\n2. Tag the release.\n3. Watch the dashboards.\n"
    ),
    "hr/salaries.md": "# Salaries\n\nConfidential: compensation bands for 2026.\n",
}


def build_demo_workspace(docs_root: Path, knowledge: Any = None) -> SyncWorkspace:
    """The demo's workspace: sample docs on disk, scratch in memory, an HR folder denied;
    ``knowledge`` (a :class:`~bastion.Knowledge`) makes it searchable."""
    for rel, text in SAMPLE_DOCS.items():
        target = docs_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    policy = Policy(
        rules=(
            Rule.deny("*", "/docs/hr/**", description="HR records are for HR staff"),
            Rule.allow("*", "/**", roles={"engineer"}),
        ),
        limits=FileLimits(max_file_bytes=1 << 20, blocked_segments=frozenset({".git", ".env"})),
    )
    mounts = [
        Mount.of("/docs", LocalStore(docs_root), Scope.READ_ONLY, description="team documents"),
        Mount.of("/scratch", MemoryStore(), Scope.READ_WRITE, description="your notes"),
        Mount.of("/outbox", MemoryStore(), Scope.WRITE_ONLY, description="reports to hand in"),
    ]
    agent = Principal.of("demo-agent", roles={"engineer"})
    return Workspace(mounts, policy=policy, principal=agent, knowledge=knowledge).sync()


def run_demo(out: Callable[[str], Any] = print) -> None:
    """Run the tour, printing each step and its result: the filesystem, then the story."""
    from bastion.demo.story import run_story

    out("# Part 1: one governed filesystem for an agent")
    _run_filesystem_tour(out)
    out("\n# Part 2: governed answers over two companies' documents")
    run_story(out)


def _run_filesystem_tour(out: Callable[[str], Any]) -> None:
    from bastion.knowledge.engine import Knowledge

    with tempfile.TemporaryDirectory(prefix="bastion-demo-") as tmp:
        # the core's own index (SQLite, keyword search): the tour needs no extra
        knowledge = Knowledge.open(Path(tmp) / "index", embedder=None, index="sqlite")
        ws = build_demo_workspace(Path(tmp) / "docs", knowledge)

        def step(title: str) -> None:
            out(f"\n== {title}")

        def refused(call: Callable[[], Any]) -> None:
            try:
                call()
            except OperationError as exc:
                out(f"refused ({type(exc).__name__}): {exc}")
            else:  # pragma: no cover - the demo's refusals are tested
                raise AssertionError("the guard should have refused this")

        step("Filesystem map (what the agent's system prompt gets)")
        out(ws.filesystem_map())

        step("List everything the agent may see (the HR folder is not there)")
        for entry in ws.list("/", recursive=True):
            out(f"{entry.kind.value:9} {entry.path}")

        step("Read lines 3-4 of /docs/handbook.md")
        out(ws.read_text("/docs/handbook.md", offset=2, limit=2).rstrip())

        step("Write and edit a note in /scratch")
        ws.write("/scratch/notes/todo.md", "- review the deploy runbook\n- book on-call training\n")
        result = ws.edit("/scratch/notes/todo.md", "on-call training", "on-call shadowing")
        out(f"edited {result.path}: {result.replacements} replacement")
        out(ws.read_text("/scratch/notes/todo.md").rstrip())

        step("Grep for 'on-call' across every mount")
        out(ws.grep("on-call", ignore_case=True).format())

        step("Index the documents, then search by meaning (hybrid: BM25 + local embeddings)")
        out(ws.index_directory("/").format())
        out(ws.search("how quickly are pages answered?", k=2).format())
        step("Search never returns what the agent may not read (the HR folder)")
        out(ws.search("compensation bands", mode="bm25").format())
        step("A new note is searchable as soon as the write returns")
        ws.append("/scratch/notes/todo.md", "- rotate the canary keys\n")
        out(ws.search("canary keys", mode="bm25").format())

        step("Hand in a report to the write-only /outbox")
        info = ws.write("/outbox/report.md", "All runbooks reviewed.\n")
        out(f"wrote {info.path} ({info.size} bytes)")

        step("What the guard refuses")
        refused(lambda: ws.write("/docs/handbook.md", "overwritten"))
        refused(lambda: ws.read_text("/docs/../../etc/passwd"))
        refused(lambda: ws.read_text("/docs/hr/salaries.md"))
        refused(lambda: ws.read_text("/outbox/report.md"))
        refused(lambda: ws.write("/scratch/.env", "SECRET=1"))
        refused(lambda: ws.read_text("/etc/passwd"))

        step("Audit trail (last 5 records)")
        records = ws.audit.records if hasattr(ws.audit, "records") else ()
        for record in records[-5:]:
            verdict = "allowed" if record.allowed else "REFUSED"
            out(f"{record.operation:6} {record.path:28} {verdict}: {record.reason}")
        knowledge.close()
