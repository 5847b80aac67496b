"""``bastion index``, ``search``, ``reindex`` and ``eval``: thin shells over the library.

The workspace is the one of the shared options (``--config``, else ``./bastion.toml``) and its
``[knowledge]`` index. Without a workspace file, ``index PATH`` mounts a folder read-only at
``/`` and indexes it into an index folder (``--index``, default ``.bastion/index``) that
``search``, ``reindex`` and ``ask`` open again. ``eval`` loads a BEIR dataset into a scratch
workspace, indexes it and scores a search mode. Either way the workspace is built by the one
workspace-file schema (``bastion.config``). Every command takes ``--json``; ``search`` and
``ask`` act for ``--as``/``--token`` like every file command.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from bastion.cli.common import common_options, load_config, options, resolve_principal, settings
from bastion.cli.declared import declared_option
from bastion.cli.errors import EXIT_SKIPPED, CliError
from bastion.cli.output import Progress, emit, principal_dict
from bastion.workspace.operations import MODES

__all__ = ["eval_command", "index_command", "indexed_settings", "reindex_command", "search_command"]

_STATE = "bastion-cli.json"
_DEFAULT_INDEX = Path(".bastion/index")
_MODES = click.Choice(list(MODES))


def _settings(root: Path, index_dir: Path, *, dense: bool) -> Any:
    """The folder mounted read-only at ``/`` with its index, as a workspace file says it."""
    from bastion.config import KnowledgeConfig, folder_config

    knowledge = KnowledgeConfig(index_dir, "local" if dense else "none")
    return folder_config([("/", root, "read_only")], knowledge=knowledge)


def _explicit(name: str) -> bool:
    context = click.get_current_context()
    return (
        name in context.params
        and context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    )


def _from_config(config: Path | None = None) -> tuple[Any, bool]:
    """The workspace file of this command with an index, and whether that index has
    embeddings. The file says where the index is: options that would say it too are refused,
    never ignored."""
    given = [
        f"--{name.replace('_dir', '').replace('_', '-')}"
        for name in ("index_dir", "keyword_only")
        if _explicit(name)
    ]
    if given:
        raise click.UsageError(f"--config takes the index from the file: drop {', '.join(given)}")
    if config is not None:
        found: Any = load_config(config)
        where = str(config)
    else:
        found = settings()
        where = str(options().config or "bastion.toml")
    if found.knowledge is None:
        raise CliError(f"{where}: needs a [knowledge] table (the index folder)", code="no_index")
    return found, found.knowledge.embedder == "local"


def _uses_config() -> bool:
    """A workspace file decides (``--config``, or ``./bastion.toml`` unless ``--index`` names
    an index folder)."""
    from bastion.cli.common import config_path

    if options().config is not None:
        return True
    return not _explicit("index_dir") and config_path(required=False) is not None


def indexed_settings(config: Path | None, index_dir: Path) -> tuple[Any, bool]:
    """The workspace a search-side command opens: the workspace file (``config``, else the
    shared ``--config`` or ``./bastion.toml``), else the folder `bastion index` indexed into
    ``index_dir``; and whether its index has embeddings."""
    if config is not None or _uses_config():
        return _from_config(config)
    root, dense = _indexed(index_dir)
    return _settings(root, index_dir, dense=dense), dense


def _indexed(index_dir: Path) -> tuple[Path, bool]:
    """The folder `bastion index` indexed into ``index_dir``, and whether it has embeddings."""
    state = index_dir / _STATE
    if not state.exists():
        raise CliError(f"no index in {index_dir}; run `bastion index PATH` first", code="no_index")
    known = json.loads(state.read_text(encoding="utf-8"))
    return Path(known["root"]), not known.get("keyword_only", False)


def _reason(path: str, why: str) -> str:
    """A skip reason without the path it is about (the line names the path once)."""
    for lead in (f"{path}: ", f"{path} "):
        if why.startswith(lead):
            return why[len(lead) :]
    return why


def _summary(summary: Any) -> None:
    """Print an index run's summary, each skipped file once with its reason; exit with
    :data:`EXIT_SKIPPED` when files were skipped."""
    skipped = {path: _reason(path, why) for path, why in sorted(summary.skipped.items())}
    data = {
        "indexed": summary.indexed,
        "chunks": summary.chunks,
        "unchanged": summary.unchanged,
        "removed": summary.removed,
        "skipped": skipped,
        "seconds": round(summary.seconds, 3),
    }

    def text() -> str:
        head = summary.format().splitlines()[0]
        return "\n".join([head, *(f"  skipped {path}: {why}" for path, why in skipped.items())])

    emit(data, text)
    if summary.skipped:
        raise SystemExit(EXIT_SKIPPED)


def _run_repair(settings_: Any, label: str, *, rebuild: bool = False) -> Any:
    """Repair the index of ``settings_``: as the owner, who hears of every file; or, with
    ``--as``/``--token``, as that principal through ``Workspace.reindex`` (an operator task:
    the policy must grant it ``reindex`` on ``/``, and the summary names only what it may
    read). ``rebuild`` throws the index away first (the owner's, who may delete its folder)."""
    from bastion.cli.session import open_session
    from bastion.knowledge.origin import clear_index
    from bastion.workspace.sync import run_blocking

    principal = resolve_principal(settings_)
    if rebuild:
        if principal is not None:
            raise click.UsageError(
                "--rebuild deletes the index folder's tables: run it as the folder's owner "
                "(drop --as/--token)"
            )
        clear_index(settings_.knowledge.folder)
    progress = Progress(label)
    try:
        if principal is not None:
            with open_session(settings_, principal, index=True) as session:
                return session.ws.reindex(progress=progress, segments=progress.segment)
        with settings_.opened(owner=True, index_on_open=False) as ws:
            return run_blocking(ws.reindex(progress=progress, segments=progress.segment))
    finally:
        progress.close()


_INDEX_OPTION = click.option(
    "--index",
    "index_dir",
    type=click.Path(path_type=Path),
    default=_DEFAULT_INDEX,
    show_default=True,
    help="Index folder of `bastion index PATH` (without a workspace file).",
)


@click.command("index")
@click.argument(
    "path", type=click.Path(exists=True, file_okay=False, path_type=Path), required=False
)
@_INDEX_OPTION
@click.option(
    "--rebuild",
    is_flag=True,
    help="Throw the index away and index everything again (also for another folder or embedder).",
)
@click.option("--keyword-only", is_flag=True, help="No embeddings: BM25 search only.")
@common_options()
def index_command(path: Path | None, index_dir: Path, rebuild: bool, keyword_only: bool) -> None:
    """Index every mount of the workspace file into its [knowledge] index, or the documents
    of the folder PATH (Markdown, text, HTML, PDF, DOCX) into --index. With --as or --token,
    as that principal (an operator task: the policy must grant it reindex). Exit code 3 when
    files were skipped (each is named once, with its reason)."""
    if path is None:
        if options().config is None and settings(required=False) is None:
            raise click.UsageError(
                "give a folder PATH, or run it where a bastion.toml is (or pass --config FILE)"
            )
        found, _dense = _from_config()
        _summary(_run_repair(found, "indexing", rebuild=rebuild))
        return
    if options().config is not None:
        raise click.UsageError("give a folder PATH or --config FILE (one of them)")
    root = path.resolve()
    index_dir.mkdir(parents=True, exist_ok=True)
    state = index_dir / _STATE
    if rebuild:
        from bastion.knowledge.origin import clear_index

        clear_index(index_dir)
    else:
        _record_legacy(index_dir)
    found = _settings(root, index_dir, dense=not keyword_only)
    before = state.read_text(encoding="utf-8") if state.exists() else None
    state.write_text(json.dumps({"root": str(root), "keyword_only": keyword_only}))
    # Indexing reads as the system (every file, whatever its labels); an existing index is
    # only brought up to date (changed, new and deleted files). Opening it refuses another
    # folder or embedder than it was built from (bastion.knowledge.origin).
    from bastion.core.errors import IndexMismatchError

    try:
        summary = _run_repair(found, "indexing")
    except IndexMismatchError as exc:
        if before is None:
            state.unlink()
        else:
            state.write_text(before, encoding="utf-8")
        raise CliError(
            f"{exc.problem}; pass --rebuild to index {root} there instead, or --index "
            "ANOTHER_FOLDER to keep both",
            code="index_mismatch",
        ) from None
    _summary(summary)


def _record_legacy(index_dir: Path) -> None:
    """An index `bastion index PATH` made before indexes kept their origin: record the
    folder and embedder its state names, so that re-pointing it is refused too."""
    from bastion.knowledge.origin import ORIGIN_FILE

    if (index_dir / _STATE).exists() and not (index_dir / ORIGIN_FILE).exists():
        root, dense = _indexed(index_dir)
        knowledge = _settings(root, index_dir, dense=dense).open_knowledge()
        if knowledge is not None:
            knowledge.close()


def hit_dict(hit: Any) -> dict[str, Any]:
    return {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": hit.score,
        "section": hit.section,
        "title": hit.title,
        "snippet": hit.snippet,
        "related_to": hit.related_to,
    }


@click.command("search")
@click.argument("query")
@_INDEX_OPTION
@declared_option("search", "mode", "--mode")
@declared_option("search", "k", "-k")
@declared_option("search", "path", "--path", "under", help="Only under this folder.")
@declared_option("search", "related", "--related")
@common_options()
def search_command(
    query: str, index_dir: Path, mode: str | None, k: int, under: str, related: bool
) -> None:
    """Search the workspace's index as --as USER (or --token) may see it."""
    from bastion.cli.session import open_session

    found, _ = indexed_settings(None, index_dir)
    with open_session(found, resolve_principal(found), index=True) as session:
        result = session.ws.search(query, mode=mode, k=k, path=under, related=related)
        session.say_limited(not result.hits)
        data = {
            "query": query,
            "mode": result.mode,
            "principal": principal_dict(session.principal) if session.principal else None,
            "hits": [hit_dict(hit) for hit in result.hits],
        }
        emit(data, result.format)


@click.command("reindex")
@_INDEX_OPTION
@click.option(
    "--rebuild",
    is_flag=True,
    help="Throw the index away and index every mount again: the fix for an index built "
    "from other mounts or another embedder.",
)
@common_options()
def reindex_command(index_dir: Path, rebuild: bool) -> None:
    """Repair the index: index files that are missing or changed since, drop documents whose
    files are gone (after a crash, or edits made without it). With --as or --token, as that
    principal (the policy must grant it reindex). --rebuild starts the index over for the
    workspace as it is now. Exit code 3 when files were skipped."""
    found, _ = indexed_settings(None, index_dir)
    _summary(_run_repair(found, "reindexing", rebuild=rebuild))


@click.command("eval")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--mode", type=_MODES, default="hybrid", show_default=True)
@click.option("--split", default="test", show_default=True, help="A file qrels/SPLIT.tsv.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path(".bastion/runs"),
    show_default=True,
    help="Folder for the run record (JSON).",
)
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=None,
    help="Only the first N documents and the queries whose relevant documents are all "
    "among them (smoke test).",
)
@common_options(identity=False)
def eval_command(dataset: Path, mode: str, split: str, out: Path, limit: int | None) -> None:
    """Score a search mode on a BEIR-format DATASET (corpus.jsonl, queries.jsonl, qrels/)."""
    from bastion.cli.evaluation import evaluate_workspace

    splits = sorted(p.stem for p in (dataset / "qrels").glob("*.tsv"))
    if splits and split not in splits:
        raise click.BadParameter(
            f"{split!r}: {dataset.name} has the splits {', '.join(splits)}", param_hint="--split"
        )
    quiet = options().quiet

    def say(line: str) -> None:
        if not quiet:
            click.echo(line, err=True)

    kept: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bastion-eval-") as tmp:
        source = dataset
        if limit is not None:
            from bastion.cli.eval_subset import subset_dataset

            cut = subset_dataset(dataset, split, limit, Path(tmp) / "data")
            if cut.queries == 0:
                raise click.BadParameter(
                    f"no query has all its relevant documents among the first {limit}; raise N",
                    param_hint="--limit",
                )
            say(
                f"--limit {limit}: {cut.documents} documents, {cut.queries} of "
                f"{cut.judged_queries} queries (those whose relevant documents are all among them)"
            )
            kept = {"documents": cut.documents, "queries": cut.queries}
            source = cut.folder
        indexing, querying = Progress("indexing"), Progress("querying")
        try:
            record = evaluate_workspace(
                source,
                mode=mode,
                split=split,
                index_dir=Path(tmp) / "index",
                echo=say,
                index_progress=indexing,
                query_progress=querying,
            )
        finally:
            indexing.close()
            querying.close()
    saved = record.save(out)
    shown = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_p50_ms")
    figures = ", ".join(f"{k} {record.figures[k]:.4f}" for k in shown if k in record.figures)
    emit(
        {
            "dataset": record.dataset,
            "mode": mode,
            "split": split,
            "figures": dict(record.figures),
            "limit": kept or None,
            "record": str(saved),
        },
        f"{record.dataset} {mode}: {figures}\nrun record: {saved}",
    )
