"""A ``[knowledge]`` index opens up to date and remembers what it was built from.

Opening a workspace file (``load_workspace``, ``WorkspaceConfig.opened``, ``bastion mcp``, the
server) indexes what changed in its mounts since the last run, and nothing else; an index
folder refuses to be re-pointed at another source, a dropped mount or another embedder, with
one line that names the prefixes (never a source) and the fix, and the fix works. Real
LanceDB folders, keyword-only (``embedder = "none"``) where the model is not needed."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bastion import Principal, Workspace, load_workspace
from bastion.cli import main
from bastion.cli.mcp import _workspace
from bastion.config import WorkspaceConfig
from bastion.knowledge.origin import (
    ORIGIN_FILE,
    IndexMismatchError,
    IndexOrigin,
    check_origin,
    source_key,
)
from bastion.server.loading import ServerFile, opened_app

POLICY = '[policy]\nrules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]\n'
_SUMMARY = re.compile(r"indexed (\d+) files .*?(?:unchanged (\d+), removed (\d+))?(?: in |$)")


def _config(
    tmp_path: Path,
    mounts: dict[str, str],
    *,
    embedder: str = "none",
    knowledge: str = "",
    name: str = "bastion.toml",
) -> Path:
    lines = [f'[knowledge]\nfolder = "index"\nembedder = "{embedder}"\n{knowledge}']
    for prefix, url in mounts.items():
        lines.append(f'[[mounts]]\nprefix = "{prefix}"\nurl = "{url}"\nscope = "read_only"\n')
    file = tmp_path / name
    file.write_text("\n".join([*lines, POLICY]), encoding="utf-8")
    return file


@pytest.fixture
def project(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text("# Alpha\n\nThe heron nests by the river.\n")
    (docs / "bravo.md").write_text("# Bravo\n\nThe otter swims at dusk.\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("# Todo\n\nFeed the badger.\n")
    return tmp_path


def _opened(caplog: pytest.LogCaptureFixture) -> tuple[int, int, int]:
    """(indexed, unchanged, removed) of the last index-on-open log line."""
    lines = [r.getMessage() for r in caplog.records if "brought up to date on open" in r.message]
    assert lines, "no index run on open"
    found = _SUMMARY.search(lines[-1])
    assert found is not None, lines[-1]
    caplog.clear()
    return int(found[1]), int(found[2] or 0), int(found[3] or 0)


def _paths(ws: Workspace, query: str) -> list[str]:
    result = ws.sync().search(query, mode="bm25")
    return sorted(hit.path for hit in result.hits)


def test_opening_indexes_only_what_changed_since_the_last_run(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    config = _config(project, {"/docs": "file:docs"})
    ws = load_workspace(config)
    assert _opened(caplog) == (2, 0, 0)
    assert _paths(ws, "heron") == ["/docs/alpha.md"]
    del ws

    again = load_workspace(config)
    assert _opened(caplog) == (0, 2, 0)  # nothing changed: nothing indexed
    del again

    # While no workspace is open: one file changed, one deleted, one added.
    (project / "docs" / "alpha.md").write_text("# Alpha\n\nThe kingfisher dives.\n")
    (project / "docs" / "bravo.md").unlink()
    (project / "docs" / "charlie.md").write_text("# Charlie\n\nA badger digs.\n")
    with WorkspaceConfig.from_file(config).opened() as reopened:
        assert _opened(caplog) == (2, 0, 1)
        assert _paths(reopened, "kingfisher") == ["/docs/alpha.md"]
        assert _paths(reopened, "heron") == []
        assert _paths(reopened, "otter") == []  # the deleted file is gone from the index
        assert _paths(reopened, "badger") == ["/docs/charlie.md"]


def test_the_principal_gets_a_view_of_the_index_the_owner_brought_up_to_date(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    config = _config(project, {"/docs": "file:docs"})
    reader = Principal.of("reader")  # the policy grants it no reindex: the owner indexes
    ws = WorkspaceConfig.from_file(config).build(principal=reader)
    assert ws.principal == reader
    assert _opened(caplog)[0] == 2
    assert _paths(ws, "otter") == ["/docs/bravo.md"]


def test_index_on_open_false_leaves_the_index_as_it_is(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    config = _config(project, {"/docs": "file:docs"}, knowledge="index_on_open = false\n")
    ws = load_workspace(config)
    assert not [r for r in caplog.records if "on open" in r.message]
    assert _paths(ws, "heron") == []
    ws.sync().reindex()  # the caller's own run, when it wants one
    assert _paths(ws, "heron") == ["/docs/alpha.md"]
    # A caller may also override the file either way.
    settings = WorkspaceConfig.from_file(config)
    (project / "docs" / "delta.md").write_text("# Delta\n\nA newt.\n")
    assert _paths(settings.build(index_on_open=True), "newt") == ["/docs/delta.md"]


def test_bastion_mcp_and_the_server_index_on_open_too(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    config = _config(project, {"/docs": "file:docs"})
    seen: list[tuple[int, int]] = []
    with _workspace(
        (), config, None, None, (), None, False, progress=lambda d, t, _: seen.append((d, t))
    ):
        assert _opened(caplog) == (2, 0, 0)
    assert seen[-1] == (2, 2)
    (project / "docs" / "echo.md").write_text("# Echo\n\nA curlew calls.\n")
    with opened_app(ServerFile.read(config)):
        assert _opened(caplog) == (1, 2, 0)


def test_another_source_for_a_prefix_is_refused_naming_the_prefix_and_the_fix(
    project: Path,
) -> None:
    load_workspace(_config(project, {"/docs": "file:docs"}))
    repointed = _config(project, {"/docs": "file:notes"})
    with pytest.raises(IndexMismatchError) as caught:
        load_workspace(repointed)
    message = str(caught.value)
    assert "\n" not in message
    assert "/docs: another source" in message
    assert "`bastion reindex --rebuild`" in message and "another folder" in message
    assert "notes" not in message.replace(str(project), "")  # the source is never shown


def test_a_dropped_mount_is_refused_and_an_added_one_is_taken_in(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    load_workspace(_config(project, {"/docs": "file:docs"}))
    both = load_workspace(_config(project, {"/docs": "file:docs", "/notes": "file:notes"}))
    assert _opened(caplog)[0] == 1  # only the new mount's file
    assert _paths(both, "badger") == ["/notes/todo.md"]
    with pytest.raises(IndexMismatchError, match="/notes: no longer mounted"):
        load_workspace(_config(project, {"/docs": "file:docs"}))


def test_another_embedder_is_refused(project: Path) -> None:
    load_workspace(_config(project, {"/docs": "file:docs"}))
    # The local embedder is named, not run: the refusal comes before any model work.
    with pytest.raises(IndexMismatchError) as caught:
        load_workspace(_config(project, {"/docs": "file:docs"}, embedder="local"))
    assert (
        "embedder: built with none (keyword only), now "
        "sentence-transformers/all-MiniLM-L6-v2:" in str(caught.value)
    )
    assert "(384 dimensions)" in str(caught.value)


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_the_command_line_says_index_mismatch_and_reindex_rebuild_fixes_it(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    load_workspace(_config(project, {"/docs": "file:docs"}))
    embeddings = project / "index" / "embeddings.sqlite"
    embeddings.write_bytes(b"")  # stands for the embedding cache a rebuild keeps
    config = _config(project, {"/docs": "file:notes"})
    refused = _cli("search", "badger", "--config", str(config), "--json")
    assert refused.exit_code == 1
    assert '"error": "index_mismatch"' in refused.stderr
    as_user = _cli("reindex", "--rebuild", "--as", "admin", "--config", str(config))
    assert as_user.exit_code == 2
    assert (project / "index" / ORIGIN_FILE).exists()  # a refused rebuild deleted nothing

    rebuilt = _cli("reindex", "--rebuild", "--config", str(config))
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "indexed 1 files" in rebuilt.output
    assert embeddings.exists()
    ws = load_workspace(config)
    assert _opened(caplog) == (0, 1, 0)
    assert _paths(ws, "badger") == ["/docs/todo.md"]
    assert _paths(ws, "heron") == []
    # `bastion index --rebuild` with the file does the same.
    back = _config(project, {"/docs": "file:docs"})
    assert _cli("index", "--config", str(back)).exit_code == 1
    assert _cli("index", "--rebuild", "--config", str(back)).exit_code == 0


def test_an_index_made_by_bastion_index_before_origins_is_not_repointed(
    project: Path,
) -> None:
    index = project / "old-index"
    assert (
        _cli("index", str(project / "docs"), "--index", str(index), "--keyword-only").exit_code == 0
    )
    (index / ORIGIN_FILE).unlink()  # as an index made before the record existed
    other = _cli("index", str(project / "notes"), "--index", str(index), "--keyword-only")
    assert other.exit_code == 1
    assert "/: another source" in other.output
    assert "--rebuild" in other.output
    found = _cli("search", "heron", "--index", str(index))
    assert "/alpha.md" in found.output
    (project / "docs" / "bravo.md").unlink()
    rebuilt = _cli("reindex", "--rebuild", "--index", str(index))  # the folder it was made from
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "indexed 1 files" in rebuilt.output
    assert (index / ORIGIN_FILE).exists()


def test_a_source_is_spelled_without_secrets_and_relative_to_the_index(tmp_path: Path) -> None:
    index = tmp_path / "p" / ".bastion" / "index"

    def key(url: str, **options: str) -> str:
        return source_key(url, options, relative_to=tmp_path / "p", index_folder=index)

    assert key("file:docs") == "file:../../docs"
    assert key(f"file://{tmp_path}/p/docs") == key("file:docs")
    moved = source_key(
        "file:docs", relative_to=tmp_path / "q", index_folder=tmp_path / "q" / ".bastion" / "index"
    )
    assert moved == key("file:docs")  # a project moved whole keeps its index
    one = key("postgresql://app:hunter2@db.internal:5432/ws?sslmode=require&password=x")
    assert "hunter2" not in one and "password" not in one
    assert one == key("postgresql://app:rotated@db.internal:5432/ws?sslmode=require")
    assert one != key("postgresql://app:hunter2@db.internal:5432/other?sslmode=require")
    s3 = key("s3://bucket/docs", endpoint_url="http://minio:9000", secret="abc", key="k")
    assert s3 == key("s3://bucket/docs", endpoint_url="http://minio:9000", secret="xyz")
    assert "abc" not in s3
    # The record holds digests only.
    origin = IndexOrigin.of([("/db", one)], embedder=None, dim=None)
    assert "db.internal" not in origin.to_json()
    assert check_origin(tmp_path / "nothing-yet", origin) == origin


def test_with_the_local_model_a_reopen_embeds_nothing_and_keyword_only_is_refused(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bastion.config")
    config = _config(project, {"/docs": "file:docs"}, embedder="local")
    with WorkspaceConfig.from_file(config).opened() as ws:
        assert _opened(caplog) == (2, 0, 0)
        hits = ws.sync().search("a bird that nests near water", mode="vector").hits
        assert hits[0].path == "/docs/alpha.md"
    with WorkspaceConfig.from_file(config).opened():
        assert _opened(caplog) == (0, 2, 0)
    with pytest.raises(IndexMismatchError, match=r"now none \(keyword only\)"):
        load_workspace(_config(project, {"/docs": "file:docs"}, embedder="none"))
