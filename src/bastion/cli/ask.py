"""``bastion ask``: a governed answer from an index built by ``bastion index``, for one user.

Who asks comes from ``--as USER``: the user is looked up in a users file (``--users``, TOML or
YAML: user -> tenant, roles, clearance, tags) or, without one, among the demo users. The
answer is printed with numbered citations (``path:lines``) and the verification verdict, or as
JSON with ``--json``. The exit status is 0 for a verified answer (or with ``--no-verify``), 2
when verification failed, 1 for an error.

The default generator is the extractive answerer (no model). ``--chat-url`` and
``--chat-model`` use an OpenAI-compatible endpoint instead; its API key is read from the
environment variable ``BASTION_CHAT_API_KEY`` only, never from the command line.
"""

from __future__ import annotations

import asyncio
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from bastion.core.principal import Principal

__all__ = ["DEMO_USERS", "ask_command", "authenticate", "load_users"]

DEMO_USERS: dict[str, Principal] = {
    "admin": Principal.of("admin", roles={"admin"}, clearance="restricted"),
    "engineer": Principal.of("engineer", roles={"engineer"}, clearance="internal"),
    "guest": Principal.of("guest"),
}
"""Who may ask when no users file is given."""

_KEY_ENV = "BASTION_CHAT_API_KEY"
_TEXT_DEFAULTS = {"tenant": "default", "clearance": "public"}


def load_users(path: Path) -> dict[str, Principal]:
    """Users from a TOML (``.toml``) or YAML file: a mapping user -> ``tenant``, ``roles``,
    ``clearance``, ``tags`` (all optional), at the top level or under ``users``."""
    text = path.read_text(encoding="utf-8")
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise click.ClickException(f"users file {path} cannot be parsed: {exc}") from exc
    if isinstance(data, Mapping) and isinstance(data.get("users"), Mapping):
        data = data["users"]
    if not isinstance(data, Mapping):
        raise click.ClickException(f"users file {path} must map each user to its settings")
    users: dict[str, Principal] = {}
    for name, entry in data.items():
        settings = entry if entry is not None else {}
        if not isinstance(settings, Mapping):
            raise click.ClickException(f"users file {path}: user {name!r} must be a mapping")
        unknown = set(settings) - {"tenant", "roles", "clearance", "tags"}
        if unknown:
            raise click.ClickException(
                f"users file {path}: user {name!r} has unknown keys {', '.join(sorted(unknown))}"
            )
        lists = {key: settings.get(key, []) for key in ("roles", "tags")}
        texts = {key: settings.get(key, default) for key, default in _TEXT_DEFAULTS.items()}
        if not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists.values()
        ):
            raise click.ClickException(
                f"users file {path}: user {name!r}: roles and tags must be lists of strings"
            )
        if not all(isinstance(v, str) for v in texts.values()):
            raise click.ClickException(
                f"users file {path}: user {name!r}: tenant and clearance must be strings"
            )
        users[str(name)] = Principal.of(str(name), **texts, **lists)
    return users


def authenticate(user: str, users: Mapping[str, Principal]) -> Principal:
    """The principal named ``user`` in ``users`` (``--as``; ``--token`` verifies a JWT
    instead)."""
    principal = users.get(user)
    if principal is None:
        known = ", ".join(sorted(users)) or "(none)"
        raise click.ClickException(f"unknown user {user!r}; known users: {known}")
    return principal


def _from_token(token: str, identity_file: Path | None) -> Principal:
    """The principal of a verified JWT; every refusal is one line that shows no claim."""
    from bastion.core.errors import BastionError
    from bastion.governance.identity import JwtVerifier
    from bastion.governance.identity_config import IdentityConfig

    if identity_file is None:
        raise click.ClickException("--token needs --identity FILE (keys, issuer, audience)")
    try:
        return JwtVerifier(IdentityConfig.from_file(identity_file)).authenticate(token).principal
    except BastionError as exc:
        raise click.ClickException(str(exc)) from None


def _chat(url: str | None, model: str | None) -> Any:
    if url is None:
        if model is not None:
            raise click.ClickException("--chat-model needs --chat-url")
        return None
    if model is None:
        raise click.ClickException("--chat-url needs --chat-model")
    from bastion.governance.answer import HttpChatModel

    return HttpChatModel(url, model, api_key=os.environ.get(_KEY_ENV))


def _reranker(kind: str, chat: Any, cross_encoder: Path | None) -> Any:
    from bastion.governance.answer import ChatRerank, CrossEncoderRerank, NoRerank

    if kind == "chat":
        if chat is None:
            raise click.ClickException("--rerank chat needs --chat-url and --chat-model")
        return ChatRerank(chat)
    if kind == "cross-encoder":
        if cross_encoder is None:
            raise click.ClickException("--rerank cross-encoder needs --cross-encoder FOLDER")
        return CrossEncoderRerank(cross_encoder)
    return NoRerank()


@click.command("ask")
@click.argument("question")
@click.option("--as", "user", default=None, help="Who asks: a user of --users (or a demo user).")
@click.option(
    "--token",
    default=None,
    envvar="BASTION_TOKEN",
    help="Who asks, as a JWT (verified with --identity); also read from $BASTION_TOKEN.",
)
@click.option(
    "--identity",
    "identity_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Identity configuration (TOML/YAML: keys, issuer, audience, claims) for --token.",
)
@click.option(
    "--users",
    "users_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="TOML or YAML file: user -> tenant, roles, clearance, tags. Default: demo users.",
)
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=Path(".bastion/index"),
    show_default=True,
)
@click.option(
    "--mode",
    type=click.Choice(["bm25", "vector", "hybrid"]),
    default="hybrid",
    show_default=True,
    help="Retrieval mode (hybrid falls back to bm25 on a keyword-only index).",
)
@click.option("-k", type=click.IntRange(1, 100), default=8, show_default=True)
@click.option("--budget", type=click.IntRange(16), default=2048, show_default=True)
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
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A workspace file (bastion.toml): its mounts, labels, policy and [knowledge] index.",
)
def ask_command(
    question: str,
    user: str | None,
    token: str | None,
    identity_file: Path | None,
    users_file: Path | None,
    index_dir: Path,
    mode: str,
    k: int,
    budget: int,
    rerank: str,
    cross_encoder: Path | None,
    chat_url: str | None,
    chat_model: str | None,
    no_verify: bool,
    as_json: bool,
    config: Path | None,
) -> None:
    """Answer QUESTION with citations from an index built by `bastion index`."""
    from bastion.cli.knowledge import indexed_settings
    from bastion.core.errors import BastionError

    if (user is None) == (token is None):
        raise click.ClickException("say who asks: --as USER or --token JWT (one of them)")
    if token is not None:
        principal = _from_token(token, identity_file)
    else:
        assert user is not None
        users = load_users(users_file) if users_file is not None else DEMO_USERS
        principal = authenticate(user, users)
    try:
        settings, _ = indexed_settings(config, index_dir)
        chat = _chat(chat_url, chat_model)
        reranker = _reranker(rerank, chat, cross_encoder)
        ws = settings.build(principal=principal)
        answer = asyncio.run(
            ws.ask(
                question,
                k=k,
                mode=mode,
                budget_tokens=budget,
                reranker=reranker,
                chat=chat,
                verify=not no_verify,
            )
        )
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(answer.format())
    if answer.verification is not None and not answer.verification.passed:
        raise SystemExit(2)
