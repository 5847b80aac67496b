"""``bastion eval-answers``: the governed answers of ``ask`` scored on the answer evaluation set
(:mod:`bastion.knowledge.eval.answer_set`): per role, right answers, right refusals, false
refusals, wrong answers, leaks and latency.

Each corpus is copied to a scratch folder, mounted read-only at ``/corpus`` under its role
graph and classifications, and indexed by the same pipeline as any file (BM25, and the local
embedder unless ``--mode bm25``). Every question is then asked through ``Workspace.ask`` as
each of its roles: the guard, the access filter and the answer workflow are the product's own.
With ``--chat-url``/``--chat-model`` the answers come from that OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from bastion.cli.common import common_options, options
from bastion.cli.output import emit

__all__ = ["eval_answers_command", "evaluate_answers", "format_report"]

_KEY_ENV = "BASTION_CHAT_API_KEY"
_MOUNT = "/corpus"


async def _world(corpus: Any, folder: Path, dense: bool) -> tuple[Any, Any]:
    from bastion.core.models import Scope
    from bastion.core.mounts import Mount
    from bastion.core.policy import Policy
    from bastion.core.principal import Classifications, Principal, RoleGraph
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.index.memory import MemoryIndex
    from bastion.stores.local import LocalStore
    from bastion.workspace.workspace import Workspace

    shutil.copytree(corpus.root, folder)
    embedder = None
    if dense:
        from bastion.knowledge.embedders import LocalEmbedder

        embedder = LocalEmbedder()
    policy = Policy.allow_all(
        roles=RoleGraph.from_mapping(corpus.roles),
        classifications=Classifications(corpus.classifications),
    )
    knowledge = Knowledge(MemoryIndex(), embedder=embedder)
    ws = Workspace(
        [Mount.of(_MOUNT, LocalStore(folder), Scope.READ_ONLY)],
        policy=policy,
        knowledge=knowledge,
        principal=Principal.of("eval-indexer"),
    )
    await ws.rebuild_index()
    return ws, knowledge.index


async def _visible(ws: Any, index: Any, who: Any) -> tuple[list[str], str]:
    """The corpus paths ``who`` may read, and the text of their indexed chunks."""
    view = ws.with_principal(who)
    paths: list[str] = []
    texts: list[str] = []
    for doc_id, meta in sorted(index.documents().items(), key=lambda kv: kv[1].path):
        if await view.exists(meta.path):
            paths.append(meta.path[len(_MOUNT) + 1 :])
            texts += [c.text for c in index.chunks_of(doc_id)]
    return paths, "\n".join(texts)


_FILE_LINES = (".md", ".markdown", ".txt")
"""Formats whose citations point at lines of the file itself (others: of the extracted text)."""


def _cited_text(citations: Sequence[Any], folder: Path, index: Any) -> str:
    """The text of the lines the citations point at: the file's own lines for text formats,
    the extracted text's (as the index's chunks hold it) for the others."""
    out: list[str] = []
    for c in citations:
        rel = c.path[len(_MOUNT) + 1 :]
        if rel.endswith(_FILE_LINES):
            lines = (folder / rel).read_text(encoding="utf-8", errors="replace").split("\n")
            numbered = dict(enumerate(lines, start=1))
        else:
            numbered = {
                chunk.start_line + i: line
                for chunk in index.chunks_of(c.doc_id)
                for i, line in enumerate(chunk.text.split("\n"))
            }
        for first, last in c.spans or ((c.start_line, c.end_line),):
            out += [numbered.get(n, "") for n in range(first, last + 1)]
    return "\n".join(out)


async def _run(
    pairs: Sequence[Any],
    corpora: dict[str, Any],
    *,
    mode: str,
    chat: Any,
    ask_options: dict[str, Any],
    progress: Callable[[int, int, str], None] | None,
) -> list[tuple[Any, Any, float, dict[str, Any]]]:
    from bastion.core.principal import Principal
    from bastion.governance.answer import AnswerStatus
    from bastion.knowledge.eval.answer_set import judge

    out: list[tuple[Any, Any, float, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="bastion-eval-answers-") as tmp:
        for name in sorted({p.case.corpus for p in pairs}):
            corpus = corpora[name]
            ws, index = await _world(corpus, Path(tmp) / name, mode != "bm25")
            mine = [p for p in pairs if p.case.corpus == name]
            views: dict[str, tuple[list[str], str]] = {}
            for pair in mine:
                who = Principal.of(
                    f"eval-{pair.role}",
                    roles={pair.role},
                    clearance=corpus.clearance.get(pair.role),
                )
                if pair.role not in views:
                    views[pair.role] = await _visible(ws, index, who)
                readable, visible_text = views[pair.role]
                started = time.perf_counter()
                answer = await ws.with_principal(who).ask(
                    pair.case.question, mode=mode, chat=chat, **ask_options
                )
                took = time.perf_counter() - started
                answered = answer.status is AnswerStatus.ANSWERED
                cited = [c.path[len(_MOUNT) + 1 :] for c in answer.citations]
                outcome = judge(
                    pair,
                    answered=answered,
                    text=answer.answer,
                    cited=cited,
                    readable=readable,
                    visible_text=visible_text,
                    cited_text=_cited_text(answer.citations, Path(tmp) / name, index),
                )
                out.append(
                    (
                        pair,
                        outcome,
                        took,
                        {
                            "id": pair.case.id,
                            "role": pair.role,
                            "question": pair.case.question,
                            "outcome": outcome.value,
                            "status": answer.status.value,
                            "verified": answer.verified,
                            "answer": answer.answer,
                            "cited": cited,
                            "cited_lines": [
                                f"{c.path[len(_MOUNT) + 1 :]}:{c.lines}" for c in answer.citations
                            ],
                        },
                    )
                )
                if progress is not None:
                    progress(len(out), len(pairs), pair.case.id)
    return out


def evaluate_answers(
    *,
    split: str = "test",
    corpus: str | None = None,
    mode: str = "hybrid",
    chat: Any = None,
    root: str | Path | None = None,
    ask_options: dict[str, Any] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Ask every (question, role) pair of ``split`` and score the answers; returns the report
    (``roles``: a tally per ``corpus/role`` and ``all``; ``cases``: one row per pair)."""
    from bastion.knowledge.eval.answer_set import load_answer_set, tally

    answer_set = load_answer_set(root)
    if corpus is not None and corpus not in answer_set.corpora:
        raise click.BadParameter(
            f"{corpus!r}: the corpora are {', '.join(sorted(answer_set.corpora))}",
            param_hint="--corpus",
        )
    pairs = answer_set.pairs(split, corpus)
    results = asyncio.run(
        _run(
            pairs,
            answer_set.corpora,
            mode=mode,
            chat=chat,
            ask_options=ask_options or {},
            progress=progress,
        )
    )
    tallies = tally([(p, o, s) for p, o, s, _ in results])
    return {
        "split": split,
        "mode": mode,
        "generator": "extractive" if chat is None else f"chat:{chat.name}",
        "pairs": len(pairs),
        "roles": {k: v.to_dict() for k, v in tallies.items()},
        "cases": [row for *_, row in results],
    }


def format_report(report: dict[str, Any]) -> str:
    """The per-role table for a terminal."""
    head = (
        f"{'role':<28} {'right ans':>10} {'right ref':>10} {'false ref':>9} {'wrong':>6} "
        f"{'leaks':>6} {'p50 ms':>7} {'p95 ms':>7}"
    )
    lines = [
        f"split={report['split']} mode={report['mode']} generator={report['generator']} "
        f"pairs={report['pairs']}",
        head,
    ]
    for name, row in report["roles"].items():
        if name == "all":
            continue
        lines.append(_row(name, row))
    lines.append(_row("all", report["roles"]["all"]))
    return "\n".join(lines)


def _row(name: str, row: dict[str, Any]) -> str:
    return (
        f"{name:<28} {row['right_answer']:>4}/{row['answerable']:<5} "
        f"{row['right_refusal']:>4}/{row['refusable']:<5} {row['false_refusal']:>9} "
        f"{row['wrong_answer']:>6} {row['leak']:>6} {row['latency_p50_ms']:>7.0f} "
        f"{row['latency_p95_ms']:>7.0f}"
    )


@click.command("eval-answers")
@click.option(
    "--split",
    type=click.Choice(["dev", "test", "all"]),
    default="test",
    show_default=True,
    help="The questions to ask (thresholds were chosen on dev; report test).",
)
@click.option("--corpus", default=None, help="Only this corpus (governed or harbour).")
@click.option(
    "--mode",
    type=click.Choice(["bm25", "vector", "hybrid"]),
    default="hybrid",
    show_default=True,
    help="Retrieval mode of ask (bm25 indexes without embeddings).",
)
@click.option("--chat-url", default=None, help="OpenAI-compatible API root, e.g. http://host/v1.")
@click.option("--chat-model", default=None, help=f"Model name (API key from ${_KEY_ENV}).")
@click.option(
    "--cases",
    "cases_only",
    is_flag=True,
    help="List every (question, role) with its outcome after the table.",
)
@common_options(identity=False)
def eval_answers_command(
    split: str,
    corpus: str | None,
    mode: str,
    chat_url: str | None,
    chat_model: str | None,
    cases_only: bool,
) -> None:
    """Score ask's answers on the shipped answer evaluation set, per role: right answers,
    right refusals, false refusals, wrong answers, leaks (must be 0) and latency."""
    chat = None
    if (chat_url is None) != (chat_model is None):
        raise click.UsageError("--chat-url and --chat-model go together")
    if chat_url is not None and chat_model is not None:
        from bastion.governance.answer import HttpChatModel

        chat = HttpChatModel(chat_url, chat_model, api_key=os.environ.get(_KEY_ENV))
    quiet = options().quiet or options().as_json

    def progress(done: int, total: int, case_id: str) -> None:
        if not quiet and (done % 20 == 0 or done == total):
            click.echo(f"asked {done}/{total}", err=True)

    report = evaluate_answers(split=split, corpus=corpus, mode=mode, chat=chat, progress=progress)

    def text() -> str:
        table = format_report(report)
        if not cases_only:
            return table
        rows = [
            f"{r['id']:<5} {r['role']:<20} {r['outcome']:<14} {r['question']}"
            for r in report["cases"]
        ]
        return table + "\n\n" + "\n".join(rows)

    emit(report, text)
    if report["roles"]["all"]["leak"]:
        raise SystemExit(1)
