"""Variants the parity table does not drive, tried at the HTTP API and the command line in
the two worlds (``parity_world``): caps and counts (``max_total``, ``limit``, ``depth``,
``k``: a hidden match must not push a visible one out, flip ``truncated`` or change a
count), byte ranges, paths below or inside what is hidden, search filters and paths, the
response's header names, and the command line's human-readable text and exit codes (the
table drives ``--json`` only). Every answer is the same in both worlds and holds no hidden
word."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from parity_edges import serving
from parity_world import SECRET, USER, WORD, Tokens, World, make_world

LANE = "v"

HTTP: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/v1/files/grep", {"pattern": WORD, "path": "/docs/mixed", "max_total": "1"}),
    ("GET", "/v1/files/grep", {"pattern": WORD, "path": "/", "max_total": "1"}),
    ("GET", "/v1/files/grep", {"pattern": WORD, "path": "/", "max_total": "2", "context": "3"}),
    ("GET", "/v1/files/grep", {"pattern": "k", "path": "/docs", "glob": "*.md"}),
    ("GET", "/v1/files/grep", {"pattern": SECRET, "path": "/docs"}),
    ("GET", "/v1/files/grep", {"pattern": "(?i)topsecret", "path": "/", "regex": "true"}),
    ("GET", "/v1/files/grep", {"pattern": ".", "path": "/docs/team", "regex": "true"}),
    ("GET", "/v1/files/grep", {"pattern": "x", "path": "/docs/mixed/secret.md"}),
    ("GET", "/v1/files/grep", {"pattern": "x", "path": "/docs/vault"}),
    ("GET", "/v1/files/grep", {"pattern": "x", "path": "/drop"}),
    ("GET", "/v1/files/glob", {"pattern": "*", "path": "/docs/mixed", "limit": "1"}),
    ("GET", "/v1/files/glob", {"pattern": "/*"}),
    ("GET", "/v1/files/glob", {"pattern": "/*/*"}),
    ("GET", "/v1/files/glob", {"pattern": "**", "path": "/docs/team"}),
    ("GET", "/v1/files/glob", {"pattern": "*", "path": "/docs/vault"}),
    ("GET", "/v1/files/glob", {"pattern": "/docs/mixed/secret.md"}),
    ("GET", "/v1/files/glob", {"pattern": "/docs/mixed/s*"}),
    ("GET", "/v1/files/glob", {"pattern": "/b*/*"}),
    ("GET", "/v1/files/glob", {"pattern": "*", "path": "/board"}),
    ("GET", "/v1/files/glob", {"pattern": "*", "path": "/drop"}),
    ("GET", "/v1/files", {"path": "/"}),
    ("GET", "/v1/files", {"path": "/docs", "recursive": "true", "depth": "1"}),
    ("GET", "/v1/files", {"path": "/docs/team"}),
    ("GET", "/v1/files", {"path": "/docs/vault"}),
    ("GET", "/v1/files", {"path": "/board"}),
    ("GET", "/v1/files/read", {"path": "/docs/mixed/secret.md", "format": "bytes", "end": "1"}),
    ("GET", "/v1/files/read", {"path": "/board/minutes.md"}),
    ("GET", "/v1/files/read", {"path": "/drop/v-left.md", "format": "bytes"}),
    ("GET", "/v1/files/read", {"path": "/docs/team", "offset": "-1"}),
    ("GET", "/v1/files/read", {"path": "/docs/mixed/secret.md/x"}),
    ("GET", "/v1/files/stat", {"path": "/docs/team/deep"}),
    ("GET", "/v1/files/stat", {"path": "/drop/v-left.md"}),
    ("GET", "/v1/files/stat", {"path": "/board"}),
    ("POST", "/v1/search", {"query": f"{WORD} {SECRET}", "k": 50}),
    ("POST", "/v1/search", {"query": WORD, "k": 1}),
    ("POST", "/v1/search", {"query": WORD, "related": True}),
    ("POST", "/v1/search", {"query": WORD, "filter": {"classification": "restricted"}}),
    ("POST", "/v1/search", {"query": WORD, "path": "/docs/mixed/secret.md"}),
    ("POST", "/v1/search", {"query": WORD, "path": "/board"}),
    ("POST", "/v1/ask", {"question": f"what is the {SECRET} code", "k": 1}),
    ("POST", "/v1/ask", {"question": WORD, "path": "/docs/team"}),
    ("GET", "/v1/me", {}),
    ("GET", "/v1/index/status", {}),
    ("POST", "/v1/files/edit", {"path": "/docs/mixed/secret.md", "old": WORD, "new": "x"}),
    ("POST", "/v1/files/delete", {"path": "/docs/team", "recursive": True}),
    ("POST", "/v1/files/delete", {"path": "/board", "recursive": True}),
]

CLI: list[list[str]] = [
    ["ls", "/"],
    ["ls", "-l", "/docs/mixed"],
    ["tree", "/"],
    ["glob", "/*"],
    ["glob", "/docs/mixed/*", "--limit", "1"],
    ["grep", WORD, "/"],
    ["grep", SECRET, "/docs"],
    ["grep", WORD, "/board"],
    ["search", WORD, "-k", "1"],
    ["search", f"{SECRET} code", "-k", "50"],
    ["ask", f"What is the {WORD} code?"],
    ["cat", "/board/minutes.md"],
    ["cat", "/docs/mixed/secret.md"],
    ["cat", "/docs/mixed/secret.md", "--bytes", "0:1"],
    ["stat", "/docs/team"],
    ["stat", "/board"],
    ["audit"],
    ["audit", "--limit", "2"],
    ["audit", "--path", "/docs/mixed"],
    ["audit", "--outcome", "refused"],
]

_TIMES = (
    (re.compile(r'"(mtime|modified|time|duration_ms|score)": ?[0-9.eE+-]+'), r'"\1": 0'),
    (re.compile(r'"version": ?"[^"]*"'), '"version": "v"'),
    (re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\d+\.\d+"), "<n.n>"),
)


def _same(text: str, root: Path) -> str:
    text = text.replace(str(root), "<root>")
    for pattern, into in _TIMES:
        text = pattern.sub(into, text)
    return text


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, World]:
    base = tmp_path_factory.mktemp("variants")
    return {n: make_world(base / n, full=n == "full", lanes=[LANE]) for n in ("full", "bare")}


@pytest.fixture(scope="module")
def servers(worlds: dict[str, World]) -> Iterator[dict[str, httpx.Client]]:
    tokens = Tokens()
    headers = {"Authorization": f"Bearer {tokens.token()}"}
    with serving(worlds["full"], tokens) as full, serving(worlds["bare"], tokens) as bare:
        clients = {
            n: httpx.Client(base_url=u, headers=headers, timeout=60)
            for n, u in (("full", full), ("bare", bare))
        }
        try:
            yield clients
        finally:
            for client in clients.values():
                client.close()


def _asked(method: str, path: str, args: dict[str, Any]) -> str:
    return f"{method} {path} {sorted(args.items())!r}"


@pytest.mark.parametrize(("method", "path", "args"), HTTP, ids=[_asked(*case) for case in HTTP])
def test_http_variants_answer_alike(
    servers: dict[str, httpx.Client],
    worlds: dict[str, World],
    method: str,
    path: str,
    args: dict[str, Any],
) -> None:
    seen = {}
    for name, client in servers.items():
        r = client.get(path, params=args) if method == "GET" else client.post(path, json=args)
        names = sorted(k.lower() for k in r.headers if k.lower() not in ("date",))
        seen[name] = (
            r.status_code,
            names,
            r.headers.get("content-type"),
            _same(r.text, worlds[name].root),
        )
    assert seen["full"] == seen["bare"]
    body = seen["full"][3]
    for given in args.values():
        body = body.replace(str(given), "") if isinstance(given, str) else body
    assert SECRET not in body, body


@pytest.mark.parametrize("json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("args", CLI, ids=[" ".join(a) for a in CLI])
def test_cli_variants_answer_alike(worlds: dict[str, World], args: list[str], json: bool) -> None:
    from bastion.cli import main

    seen = {}
    for name, world in worlds.items():
        line = [*args, *(["--json"] if json else []), "--config", str(world.config), "--as", USER]
        result = CliRunner().invoke(main, line)
        seen[name] = (
            result.exit_code,
            _same(result.stdout, world.root),
            _same(result.stderr, world.root),
        )
    assert seen["full"] == seen["bare"]
    shown = seen["full"][1] + seen["full"][2]
    for given in args:
        shown = shown.replace(given, "")
    assert SECRET not in shown, shown


def test_the_variants_reach_the_workspace(
    servers: dict[str, httpx.Client], worlds: dict[str, World]
) -> None:
    """Two equal failures would pass for parity: the full world's answers show what the
    principal may see."""
    from bastion.cli import main

    client = servers["full"]
    capped = client.get("/v1/files/grep", params={"pattern": WORD, "path": "/", "max_total": 1})
    assert capped.json()["matches"][0]["path"] == "/docs/handbook.md"
    assert capped.json()["truncated"] is True
    one = client.get("/v1/files/glob", params={"pattern": "*", "path": "/docs/mixed", "limit": 1})
    assert [e["path"] for e in one.json()["entries"]] == ["/docs/mixed/visible.md"]
    line = ["grep", WORD, "/", "--config", str(worlds["full"].config), "--as", USER]
    assert "/docs/mixed/visible.md:3:" in CliRunner().invoke(main, line).stdout


def test_hidden_entries_spend_none_of_the_principal_rate(tmp_path: Path) -> None:
    """Checks made on the principal's behalf (each search hit, each listed entry, each grep
    file) are not its requests: the number of calls before the policy's rate limit refuses
    one is the same in both worlds (else counting calls to the refusal is an oracle)."""
    from parity_world import CLEARANCE, ROLES, TENANT

    from bastion import Principal
    from bastion.config import WorkspaceConfig
    from bastion.core.errors import RateLimitError

    ana = Principal.of(USER, tenant=TENANT, roles=set(ROLES), clearance=CLEARANCE)
    calls = (
        lambda s: s.search(WORD),
        lambda s: s.grep(WORD, "/"),
        lambda s: s.ask(f"When does the {WORD} rota start?"),
        lambda s: s.glob("**/*.md"),
        lambda s: s.list("/docs", recursive=True),
        lambda s: s.exists("/docs/mixed/secret.md"),
    )
    made = {}
    for name in ("full", "bare"):
        world = make_world(tmp_path / name, full=name == "full", lanes=[LANE])
        text = world.config.read_text()
        limited = "[policy]\nrate_limit = { requests = 30, window_seconds = 3600 }\n"
        world.config.write_text(text.replace("[policy]\n", limited))
        config = WorkspaceConfig.from_file(world.config)
        with config.opened(principal=ana, index_on_open=False) as ws:
            sync = ws.sync()
            done = 0
            with pytest.raises(RateLimitError):
                for turn in range(100):
                    calls[turn % len(calls)](sync)
                    done += 1
            made[name] = done
    assert made["full"] == made["bare"] == 30
