"""``bastion ask``: a governed answer from the workspace's index, for one user.

Who asks comes from the shared options (``bastion.cli.common``): ``--as USER`` (a user of
``--users FILE``, of the workspace file's ``[users]``, or a default user) or ``--token JWT``
verified with ``--identity`` (never the workspace file's ``[principal]``). The answer is
printed with numbered citations (``path:lines``) and the verification verdict, or as JSON
with ``--json`` (the answer's ``[n]`` references and each citation's ``n``; never the raw
chunk markers). The exit status is 0 for a verified answer (or with ``--no-verify``),
:data:`~bastion.cli.common.EXIT_UNVERIFIED` (4) when verification failed, 1 for an error,
2 for a usage error.

The default generator is the extractive answerer (no model). ``--chat-url`` and
``--chat-model`` use an OpenAI-compatible endpoint instead; its API key is read from the
environment variable ``BASTION_CHAT_API_KEY`` only, never from the command line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from bastion.cli.common import DEFAULT_USERS, common_options, resolve_principal
from bastion.cli.declared import declared_option
from bastion.cli.errors import EXIT_UNVERIFIED
from bastion.cli.output import emit, principal_dict

__all__ = ["DEMO_USERS", "answer_dict", "ask_command"]

DEMO_USERS = DEFAULT_USERS
"""Who may ask when no users file is given (kept under its old name)."""

_KEY_ENV = "BASTION_CHAT_API_KEY"


def _chat(url: str | None, model: str | None) -> Any:
    if url is None:
        if model is not None:
            raise click.UsageError("--chat-model needs --chat-url")
        return None
    if model is None:
        raise click.UsageError("--chat-url needs --chat-model")
    from bastion.governance.answer import HttpChatModel

    return HttpChatModel(url, model, api_key=os.environ.get(_KEY_ENV))


def _reranker(kind: str, chat: Any, cross_encoder: Path | None) -> Any:
    from bastion.governance.answer import ChatRerank, CrossEncoderRerank, NoRerank

    if kind == "chat":
        if chat is None:
            raise click.UsageError("--rerank chat needs --chat-url and --chat-model")
        return ChatRerank(chat)
    if kind == "cross-encoder":
        if cross_encoder is None:
            raise click.UsageError("--rerank cross-encoder needs --cross-encoder FOLDER")
        return CrossEncoderRerank(cross_encoder)
    return NoRerank()


def answer_dict(answer: Any) -> dict[str, Any]:
    """The answer as JSON: its text with ``[n]`` references, and each citation with its
    ``n`` (the raw ``§chunk_id`` markers stay inside the library)."""
    from bastion.governance.answer.text import number_markers

    data: dict[str, Any] = answer.to_dict()
    numbers = {c.chunk_id: i for i, c in enumerate(answer.citations, start=1)}
    data["answer"] = number_markers(answer.answer, numbers)
    data["citations"] = [{"n": numbers[c.chunk_id], **c.to_dict()} for c in answer.citations]
    return data


@click.command("ask")
@click.argument("question")
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=Path(".bastion/index"),
    show_default=True,
    help="Index folder of `bastion index PATH` (without a workspace file).",
)
@declared_option(
    "ask",
    "mode",
    "--mode",
    help="Retrieval mode (default: hybrid, or bm25 on a keyword-only index).",
)
@declared_option("ask", "k", "-k")
@declared_option("ask", "budget_tokens", "--budget", "budget")
@click.option("--rerank", type=click.Choice(["none", "chat", "cross-encoder"]), default="none")
@click.option(
    "--cross-encoder",
    "cross_encoder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder of a saved cross-encoder (for --rerank cross-encoder).",
)
@click.option("--chat-url", default=None, help="OpenAI-compatible API root, e.g. http://host/v1.")
@click.option("--chat-model", default=None, help=f"Model name (API key from ${_KEY_ENV}).")
@click.option("--no-verify", is_flag=True, help="Skip verification (the answer says so).")
@common_options()
def ask_command(
    question: str,
    index_dir: Path,
    mode: str | None,
    k: int,
    budget: int,
    rerank: str,
    cross_encoder: Path | None,
    chat_url: str | None,
    chat_model: str | None,
    no_verify: bool,
) -> None:
    """Answer QUESTION with citations from the index, as --as USER (or --token) may read it.
    Exit code 4 when the answer failed its verification."""
    from bastion.cli.knowledge import indexed_settings
    from bastion.cli.session import open_session
    from bastion.workspace.sync import run_blocking

    found, _ = indexed_settings(None, index_dir)
    principal = resolve_principal(found)
    if principal is None:  # a question is a person's: never the file's [principal]
        raise click.UsageError("say who asks: --as USER or --token JWT (one of them)")
    chat = _chat(chat_url, chat_model)
    reranker = _reranker(rerank, chat, cross_encoder)
    with open_session(found, principal, index=True) as session:
        answer = run_blocking(
            session.ws.aio.ask(
                question,
                k=k,
                mode=mode,
                budget_tokens=budget,
                reranker=reranker,
                chat=chat,
                verify=not no_verify,
            )
        )
        data = answer_dict(answer)
        if session.principal is not None:
            data["principal"] = principal_dict(session.principal)
    emit(data, answer.format)
    if answer.verification is not None and not answer.verification.passed:
        raise SystemExit(EXIT_UNVERIFIED)
