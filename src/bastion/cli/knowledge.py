"""``bastion index``, ``bastion search`` and ``bastion eval``: thin shells over the library.

``index`` mounts a folder read-only at ``/`` and indexes it into an index folder (default
``.bastion/index`` in the current directory); ``search`` opens that index again; ``eval`` loads a
BEIR dataset into a scratch workspace, indexes it and scores a search mode. With ``--config``,
``index``, ``reindex`` and ``search`` use a workspace file (``bastion.toml``) instead: its
mounts, labels, policy, principal and ``[knowledge]`` index. Either way the workspace is built
by the one workspace-file schema (``bastion.config``).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import click

__all__ = ["eval_command", "index_command", "reindex_command", "search_command"]

_STATE = "bastion-cli.json"
_DEFAULT_INDEX = Path(".bastion/index")
_MODES = click.Choice(["bm25", "vector", "hybrid"])


def _settings(root: Path, index_dir: Path, *, dense: bool) -> Any:
    """The folder mounted read-only at ``/`` with its index, as a workspace file says it."""
    from bastion.config import KnowledgeConfig, folder_config

    knowledge = KnowledgeConfig(index_dir, "local" if dense else "none")
    return folder_config([("/", root, "read_only")], knowledge=knowledge)


def _from_config(config: Path) -> tuple[Any, bool]:
    """A workspace file with an index, and whether that index has embeddings. The file says
    where the index is: options that would say it too are refused, never ignored."""
    from bastion.config import WorkspaceConfig

    context = click.get_current_context()
    given = [
        f"--{name.replace('_dir', '').replace('_', '-')}"
        for name in ("index_dir", "rebuild", "keyword_only")
        if name in context.params
        and context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    ]
    if given:
        raise click.UsageError(f"--config takes the index from the file: drop {', '.join(given)}")

    settings = WorkspaceConfig.from_file(config)
    if settings.knowledge is None:
        raise click.ClickException(f"{config}: needs a [knowledge] table (the index folder)")
    return settings, settings.knowledge.embedder == "local"


_CONFIG = click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A workspace file (bastion.toml): its mounts, policy, principal and [knowledge] index.",
)


def indexed_settings(config: Path | None, index_dir: Path) -> tuple[Any, bool]:
    """The workspace a search-side command opens: the workspace file ``config``, else the
    folder `bastion index` indexed into ``index_dir``; and whether its index has embeddings."""
    if config is not None:
        return _from_config(config)
    root, dense = _indexed(index_dir)
    return _settings(root, index_dir, dense=dense), dense


def _indexed(index_dir: Path) -> tuple[Path, bool]:
    """The folder `bastion index` indexed into ``index_dir``, and whether it has embeddings."""
    state = index_dir / _STATE
    if not state.exists():
        raise click.ClickException(f"no index in {index_dir}; run `bastion index PATH` first")
    known = json.loads(state.read_text(encoding="utf-8"))
    return Path(known["root"]), not known.get("keyword_only", False)


async def _repair(ws: Any, progress: Any) -> Any:
    """The whole summary of a repair run. ``Workspace.reindex`` tells a principal only about
    the files it may read; the command line runs as the owner of the folder, who may hear of
    every file."""
    link = ws._link()
    return await link.reindex(ws.policy.classifications, progress)


@click.command("index")
@click.argument(
    "path", type=click.Path(exists=True, file_okay=False, path_type=Path), required=False
)
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=_DEFAULT_INDEX,
    show_default=True,
    help="Folder of the index (created if missing).",
)
@click.option("--rebuild", is_flag=True, help="Throw the index away and index everything again.")
@click.option("--keyword-only", is_flag=True, help="No embeddings: BM25 search only.")
@_CONFIG
def index_command(
    path: Path | None, index_dir: Path, rebuild: bool, keyword_only: bool, config: Path | None
) -> None:
    """Index the documents of the folder PATH (Markdown, text, HTML, PDF, DOCX), or every
    mount of a --config workspace file into its [knowledge] index."""
    from bastion.core.errors import BastionError

    if (path is None) == (config is None):
        raise click.UsageError("give a folder PATH or --config FILE (one of them)")
    if config is not None:
        try:
            settings, _dense = _from_config(config)
            with settings.opened() as ws:
                summary = asyncio.run(_repair(ws, None))
        except BastionError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(summary.format())
        return
    assert path is not None
    root = path.resolve()
    index_dir.mkdir(parents=True, exist_ok=True)
    state = index_dir / _STATE
    if state.exists() and not rebuild:
        known = json.loads(state.read_text(encoding="utf-8"))
        if known.get("keyword_only") != keyword_only:
            raise click.ClickException(
                "this index was built with"
                f"{'out' if known.get('keyword_only') else ''} embeddings; pass --rebuild"
            )
    if rebuild and index_dir.exists():
        import shutil

        shutil.rmtree(index_dir)
        index_dir.mkdir(parents=True)
    try:
        ws = _settings(root, index_dir, dense=not keyword_only).build()
        state.write_text(json.dumps({"root": str(root), "keyword_only": keyword_only}))
        with click.progressbar(length=1, label="indexing", show_pos=True) as bar:

            def progress(done: int, total: int, _path: str) -> None:
                bar.length = total
                bar.update(done - bar.pos)

            # Indexing reads as the system (every file, whatever its labels); an existing
            # index is only brought up to date (changed, new and deleted files).
            summary = asyncio.run(_repair(ws, progress))
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(summary.format())


@click.command("search")
@click.argument("query")
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=_DEFAULT_INDEX,
    show_default=True,
)
@click.option(
    "--mode", type=_MODES, default=None, help="Default: hybrid, or bm25 for a keyword-only index."
)
@click.option("-k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--related", is_flag=True, help="Add documents one relation away from the hits.")
@_CONFIG
def search_command(
    query: str, index_dir: Path, mode: str | None, k: int, related: bool, config: Path | None
) -> None:
    """Search an index built by `bastion index` (with --config: as the file's principal)."""
    from bastion.core.errors import BastionError

    try:
        settings, dense = indexed_settings(config, index_dir)
        ws = settings.build()
        result = asyncio.run(
            ws.search(query, mode=mode or ("hybrid" if dense else "bm25"), k=k, related=related)
        )
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(result.format())


@click.command("reindex")
@click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=_DEFAULT_INDEX,
    show_default=True,
)
@_CONFIG
def reindex_command(index_dir: Path, config: Path | None) -> None:
    """Repair an index built by `bastion index`: index files that are missing or changed
    since, drop documents whose files are gone (after a crash, or edits made without it)."""
    from bastion.core.errors import BastionError

    try:
        settings, _ = indexed_settings(config, index_dir)
        ws = settings.build()
        summary = asyncio.run(_repair(ws, None))
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(summary.format())


@click.command("eval")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--mode", type=_MODES, default="hybrid", show_default=True)
@click.option("--split", default="test", show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path(".bastion/runs"),
    show_default=True,
    help="Folder for the run record (JSON).",
)
@click.option("--limit", type=int, default=None, help="Only the first N documents (smoke test).")
def eval_command(dataset: Path, mode: str, split: str, out: Path, limit: int | None) -> None:
    """Score a search mode on a BEIR-format DATASET (corpus.jsonl, queries.jsonl, qrels/)."""
    from bastion.core.errors import BastionError
    from bastion.knowledge.eval import evaluate_workspace

    try:
        with tempfile.TemporaryDirectory(prefix="bastion-eval-") as tmp:
            record = evaluate_workspace(
                dataset, mode=mode, split=split, index_dir=Path(tmp), limit=limit, echo=click.echo
            )
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc
    saved = record.save(out)
    shown = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_p50_ms")
    figures = ", ".join(f"{k} {record.figures[k]:.4f}" for k in shown if k in record.figures)
    click.echo(f"{record.dataset} {mode}: {figures}")
    click.echo(f"run record: {saved}")
