"""The workspace file: the documented example runs against real stores (PostgreSQL, moto's
S3, SQLite, a folder, memory); bad files fail in one line naming the mount, never a secret."""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from moto_s3 import make_bucket, moto_endpoint

from bastion.config import (
    WorkspaceConfig,
    check_mounts,
    close_mounts,
    expand_env,
    load_workspace,
)
from bastion.core.errors import ConfigurationError, NotFoundError, PolicyDeniedError, ScopeError
from bastion.core.models import Labels, Scope
from bastion.core.principal import Principal
from bastion.stores.fsspec import FsspecStore

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
SECRET = "pa55-Word-Never-Shown"
ALLOW_ALL = '[policy]\nrules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]\n'


def _documented_example() -> str:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "docs/configuration.md has no toml example"
    return str(blocks[0])


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


def _write(folder: Path, text: str) -> Path:
    path = folder / "bastion.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(text: str, tmp_path: Path, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigurationError) as caught:
        WorkspaceConfig.from_toml(_write(tmp_path, text), env=env or {})
    message = str(caught.value)
    assert "\n" not in message
    return message


# -- the documented example, end to end ------------------------------------------------------


@pytest.fixture
def example_env(pg_server: Any, endpoint: str) -> Iterator[dict[str, str]]:
    database = f"cfg_{uuid.uuid4().hex[:10]}"
    pg_server.psql(
        "DO $$ BEGIN CREATE ROLE bastion LOGIN PASSWORD 'x'; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$;"
    )
    pg_server.psql(f"CREATE DATABASE {database} OWNER bastion;")
    info = pg_server.get_postmaster_info()
    bucket = f"lake-{uuid.uuid4().hex[:10]}"
    client = make_bucket(endpoint, bucket)
    client.put_object(Bucket=bucket, Key="support/export.csv", Body=b"case,status\n1,open\n")
    try:
        yield {
            "PG_PASSWORD": "x",
            "PG_HOST": quote(str(info.socket_dir), safe=""),
            "PG_PORT": str(info.port or 5432),
            "PG_DATABASE": database,
            "LAKE_BUCKET": bucket,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "S3_ENDPOINT": endpoint,
        }
    finally:
        pg_server.psql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}';"
        )
        pg_server.psql(f"DROP DATABASE IF EXISTS {database};")


async def test_the_documented_example_builds_a_working_workspace(
    tmp_path: Path, example_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "refunds.md").write_text("Refunds take five days.\n")
    path = _write(tmp_path, _documented_example())
    monkeypatch.chdir(tmp_path.parent)  # relative paths follow the file, not the cwd
    config = WorkspaceConfig.from_toml(path, env=example_env)
    assert [m.prefix for m in config.mounts] == [
        "/handbook",
        "/notes",
        "/cases",
        "/lake",
        "/scratch",
    ]
    lake = config.mounts[3]
    assert lake.scope is Scope.READ_ONLY
    assert lake.timeout == 30
    assert lake.labels == Labels(tenant="acme", classification="internal", tags=frozenset({"lake"}))
    assert lake.url == f"s3://{example_env['LAKE_BUCKET']}/support"
    assert config.mounts[1].labels.roles == frozenset({"support"})
    assert config.knowledge is not None
    assert config.knowledge.folder == tmp_path / ".bastion" / "index"

    agent = Principal.of("ana", tenant="acme", roles={"support"}, clearance="confidential")
    ws = load_workspace(path, principal=agent, env=example_env)
    try:
        await check_mounts(ws.mounts)
        assert await ws.read_text("/handbook/refunds.md") == "Refunds take five days.\n"
        await ws.write("/notes/today.md", "Call the customer about the refund.\n")
        await ws.write("/cases/1.md", "Case 1: refund requested.\n")
        assert await ws.read_text("/cases/1.md") == "Case 1: refund requested.\n"
        assert await ws.read_text("/lake/export.csv") == "case,status\n1,open\n"
        with pytest.raises(ScopeError):
            await ws.write("/lake/export.csv", "no")
        await ws.write("/scratch/tmp.txt", "scratch")
        hits = await ws.search("customer refund", mode="bm25")
        assert "/notes/today.md" in [str(hit.path) for hit in hits.hits]
        assert (tmp_path / "data" / "notes.db").is_file()
        assert (tmp_path / ".bastion" / "index").is_dir()
        outsider = ws.with_principal(Principal.of("bo", tenant="acme", clearance="internal"))
        with pytest.raises(NotFoundError):  # confidential, for support: not there for bo
            await outsider.read_text("/cases/1.md")
    finally:
        await close_mounts(ws.mounts)


# -- variables and secrets -----------------------------------------------------------------


def test_expand_env_forms() -> None:
    env = {"USER": "ana", "EMPTY": ""}
    assert expand_env("${USER}@host", env, "x") == "ana@host"
    assert expand_env("${MISSING:-fallback}", env, "x") == "fallback"
    assert expand_env("${EMPTY:-unused}", env, "x") == ""
    assert expand_env("cost: $$5 and ${USER}", env, "x") == "cost: $5 and ana"
    assert expand_env("$USER stays", env, "x") == "$USER stays"
    assert expand_env({"a": ["${USER}", 3, True]}, env, "x") == {"a": ["ana", 3, True]}
    with pytest.raises(ConfigurationError, match="mount /x: environment variable NOPE is not"):
        expand_env("${NOPE}", env, "mount /x")


def test_a_missing_variable_names_the_mount_and_the_variable(tmp_path: Path) -> None:
    text = '[[mounts]]\nprefix = "/db"\nurl = "postgresql://u:${PG_PASSWORD}@h/db"\n' + ALLOW_ALL
    message = _error(text, tmp_path)
    assert message.startswith(f"{tmp_path / 'bastion.toml'}: mount /db: environment variable")
    assert "PG_PASSWORD is not set" in message


def test_secrets_never_appear_in_errors_or_reprs(tmp_path: Path) -> None:
    env = {"PG_PASSWORD": SECRET, "KEY": SECRET}
    base = '[[mounts]]\nprefix = "/db"\nurl = "gopherx://u:${PG_PASSWORD}@h/db"\n'
    config = WorkspaceConfig.from_toml(_write(tmp_path, base + ALLOW_ALL), env=env)
    assert SECRET not in repr(config)
    with pytest.raises(ConfigurationError) as caught:
        config.build()
    assert str(caught.value).startswith("mount /db: unknown URL scheme 'gopherx'")
    assert SECRET not in str(caught.value)
    bad_scope = base.replace("gopherx", "postgresql") + 'scope = "everything"\n'
    assert SECRET not in _error(bad_scope + ALLOW_ALL, tmp_path, env)
    options = '[[mounts]]\nprefix = "/m"\nurl = "memory://"\noptions = { key = "${KEY}" }\n'
    config = WorkspaceConfig.from_toml(_write(tmp_path, options + ALLOW_ALL), env=env)
    assert SECRET not in repr(config)
    with pytest.raises(ConfigurationError) as caught:
        config.build()
    assert SECRET not in str(caught.value)
    assert "memory:// takes no path and no options" in str(caught.value)


def test_empty_options_are_left_out(tmp_path: Path) -> None:
    text = (
        '[[mounts]]\nprefix = "/m"\nurl = "s3://bucket/x"\n'
        '[mounts.options]\nendpoint_url = "${S3_ENDPOINT:-}"\nanon = true\n' + ALLOW_ALL
    )
    config = WorkspaceConfig.from_toml(_write(tmp_path, text), env={})
    assert dict(config.mounts[0].options) == {"anon": True}


# -- checking the file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('colour = "blue"\n' + ALLOW_ALL, "workspace file: unknown keys colour"),
        (ALLOW_ALL, "needs at least one [[mounts]]"),
        ('[[mounts]]\nprefix = "/a"\nurl = "memory://"\n', "needs a policy"),
        ('[[mounts]]\nurl = "memory://"\n' + ALLOW_ALL, "mount 1: needs a prefix"),
        ('[[mounts]]\nprefix = "/a"\n' + ALLOW_ALL, "mount /a: needs a url"),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\nsope = "read_only"\n' + ALLOW_ALL,
            "mount /a: unknown keys sope",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\nscope = "admin"\n' + ALLOW_ALL,
            "mount /a: unknown scope; use read_only, read_write, write_only",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\ntimeout = -1\n' + ALLOW_ALL,
            "mount /a: timeout must be a positive number",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\ntimeout = true\n' + ALLOW_ALL,
            "mount /a: timeout must be a positive number",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\nlabels = { classification = "top" }\n'
            + ALLOW_ALL,
            "mount /a: unknown classification 'top'",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\nlabels = { owner = "x" }\n' + ALLOW_ALL,
            "mount /a: labels: unknown keys owner",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\nlabels = { roles = [1] }\n' + ALLOW_ALL,
            "mount /a: labels.roles must be a list of names",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\n[[mounts]]\nprefix = "/a"\n'
            'url = "memory://"\n' + ALLOW_ALL,
            "mount /a: mounted twice",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\n[knowledge]\nembedder = "none"\n'
            + ALLOW_ALL,
            "knowledge: needs a folder",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\n[knowledge]\nfolder = "i"\n'
            'embedder = "gpt"\n' + ALLOW_ALL,
            "knowledge: embedder must be one of local, none",
        ),
        (
            '[[mounts]]\nprefix = "/a"\nurl = "memory://"\n[policy]\nrulez = []\n',
            "policy: unknown keys rulez",
        ),
        ("[[mounts]\n", "is not valid TOML"),
    ],
)
def test_bad_files_fail_in_one_line(text: str, expected: str, tmp_path: Path) -> None:
    assert expected in _error(text, tmp_path)


def test_a_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read workspace file"):
        WorkspaceConfig.from_toml(tmp_path / "nope.toml")


def test_scopes_labels_timeouts_and_descriptions(tmp_path: Path) -> None:
    text = (
        '[[mounts]]\nprefix = "/drop"\nurl = "memory://"\nscope = "write_only"\n'
        'description = "Reports in"\ntimeout = "never"\n'
        'labels = { tenant = "acme", classification = "restricted", roles = ["hr"], '
        'tags = ["in", "hr"] }\n' + ALLOW_ALL
    )
    [mount] = WorkspaceConfig.from_toml(_write(tmp_path, text), env={}).mounts
    assert mount.scope is Scope.WRITE_ONLY
    assert mount.description == "Reports in"
    assert mount.timeout == math.inf
    assert mount.labels == Labels(
        tenant="acme",
        classification="restricted",
        roles=frozenset({"hr"}),
        tags=frozenset({"in", "hr"}),
    )
    [opened] = WorkspaceConfig.from_toml(_write(tmp_path, text), env={}).open_mounts()
    assert opened.scope is Scope.WRITE_ONLY
    assert opened.timeout == math.inf


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
async def test_a_policy_file_next_to_the_workspace_file(tmp_path: Path, suffix: str) -> None:
    rules = {
        ".toml": '[[rules]]\neffect = "allow"\nactions = ["read", "list"]\npaths = ["/**"]\n',
        ".yaml": "rules:\n  - {effect: allow, actions: [read, list], paths: ['/**']}\n",
    }
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / f"policy{suffix}").write_text(rules[suffix], encoding="utf-8")
    text = f'policy = "policy{suffix}"\n[[mounts]]\nprefix = "/m"\nurl = "memory://"\n'
    path = _write(tmp_path / "conf", text)
    ws = load_workspace(path, env={})
    assert await ws.list("/m") == []
    with pytest.raises(PolicyDeniedError):
        await ws.write("/m/a.txt", "not allowed by the policy")


async def test_relative_urls_follow_the_file_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "project"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text("A\n")
    text = (
        '[[mounts]]\nprefix = "/docs"\nurl = "file:docs"\nscope = "read_only"\n'
        '[[mounts]]\nprefix = "/db"\nurl = "sqlite:state/ws.db"\n' + ALLOW_ALL
    )
    path = _write(folder, text)
    (folder / "state").mkdir()
    monkeypatch.chdir(tmp_path)
    ws = load_workspace(path, env={})
    try:
        assert await ws.read_text("/docs/a.md") == "A\n"
        await ws.write("/db/b.md", "B")
        assert (folder / "state" / "ws.db").is_file()
    finally:
        await close_mounts(ws.mounts)


def test_a_failed_build_closes_the_stores_it_opened(tmp_path: Path) -> None:
    text = (
        '[[mounts]]\nprefix = "/db"\nurl = "sqlite:ws.db"\n'
        '[[mounts]]\nprefix = "/docs"\nurl = "file:missing-folder"\n' + ALLOW_ALL
    )
    config = WorkspaceConfig.from_toml(_write(tmp_path, text), env={})
    with pytest.raises(ConfigurationError):
        config.build()
    assert (tmp_path / "ws.db").is_file()  # opened, then closed: it can be removed
    (tmp_path / "ws.db").unlink()


async def test_check_mounts_finds_a_missing_bucket(tmp_path: Path, endpoint: str) -> None:
    make_bucket(endpoint, "present")
    text = (
        '[[mounts]]\nprefix = "/ok"\nurl = "s3://present/x"\n'
        '[mounts.options]\nendpoint_url = "${S3}"\nkey = "k"\nsecret = "${SECRET}"\n'
        '[[mounts]]\nprefix = "/lake"\nurl = "s3://absent-bucket/x"\n'
        '[mounts.options]\nendpoint_url = "${S3}"\nkey = "k"\nsecret = "${SECRET}"\n'
        '[[mounts]]\nprefix = "/mem"\nurl = "memory://"\n' + ALLOW_ALL
    )
    env = {"S3": endpoint, "SECRET": SECRET}
    mounts = WorkspaceConfig.from_toml(_write(tmp_path, text), env=env).open_mounts()
    try:
        assert isinstance(mounts[0].store.inner, FsspecStore)  # type: ignore[attr-defined]
        await check_mounts([mounts[0], mounts[2]])
        with pytest.raises(ConfigurationError) as caught:
            await check_mounts(mounts)
        message = str(caught.value)
        assert message.startswith("mount /lake (s3): the bucket of this mount does not exist")
        assert SECRET not in message and "\n" not in message
    finally:
        await close_mounts(mounts)
