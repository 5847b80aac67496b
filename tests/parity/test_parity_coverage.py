"""The parity table covers every front end and everything each one exposes: a new tool, route,
command, workspace method or agent adapter fails here until a driver calls it in some
scenario (or it is listed below as exempt, with the reason)."""

from __future__ import annotations

import inspect
import pkgutil
from collections.abc import Mapping

import pytest
from parity_edges import Cli, HttpApi, WebPage
from parity_fronts import FRONTS
from parity_library import PythonAsync, ToolDriver
from parity_ops import OPERATIONS, SCENARIOS
from starlette.routing import Mount as StarletteMount
from starlette.routing import Route

import bastion.agents
from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.tools import EXECUTE_TOOLS, GRANULAR_TOOLS, INTENT_TOOLS
from bastion.cli import main
from bastion.server import create_app

ROUTES_EXEMPT: Mapping[str, str] = {
    "GET /healthz": "no token, no workspace: the same answer for every world",
    "GET /readyz": "no token; counts mounts that do not answer, never what they hold",
    "GET /openapi.json": "the API's description, the same for every caller",
    "GET /": "the page itself (static); its calls are the web-page front end",
    "GET /v1/auth/demo/users": "the demo login (off here); the demo's fixed list of people",
    "POST /v1/auth/demo": "the demo login (off here): a token for a demo user",
    "POST /v1/auth/login": "a session cookie for a local account; reads no workspace",
    "POST /v1/auth/logout": "ends the caller's own session; reads no workspace",
    "GET /v1/auth/methods": "how people sign in here; the same for every caller",
    "GET /metrics": "counts by route template and status; no principal, path or query",
    "GET /v1/auth/oidc/start": "a redirect to the identity provider; reads no workspace",
    "GET /v1/auth/oidc/callback": "a session cookie from the provider's code; reads no workspace",
    "/static": "the page's static files",
    "POST /v1/chat": "the page's ask within a conversation: its answer is Workspace.ask's (the "
    "ask is driven through POST /v1/ask); the turn is kept in the caller's own area, whose id "
    "is random; tests/web/test_chat_governed.py asks in two views",
    "GET /v1/conversations": "the caller's own conversations (its own area only)",
    "GET /v1/conversations/read": "one of the caller's own conversations (its own area only)",
    "POST /v1/conversations/delete": "deletes one of the caller's own conversations",
    "POST /v1/feedback": "a rating of the caller's own answer, kept in its own area",
    "GET /v1/explain": "operators only (refused to others, audited): why a named user may or "
    "may not act on a path; tested in tests/web/test_admin_explain.py",
    **{
        route: "the change journal: two worlds of their own (a journal, a hidden change) in "
        "tests/parity/test_parity_changes.py, at the library, the CLI and HTTP; the web page's "
        "Changes tab calls these routes (tests/web/test_changes_browser.py)"
        for route in (
            "GET /v1/changes",
            "GET /v1/changes/diff",
            "POST /v1/changes/undo",
            "POST /v1/changes/revert",
        )
    },
    **{
        route: "the change journal: governed by ChangeReview, tested over HTTP in "
        "tests/server/test_api_changes.py; not in the parity worlds yet"
        for route in (
            "POST /v1/changes/undo-last",
            "GET /v1/checkpoints",
            "POST /v1/checkpoints",
            "POST /v1/checkpoints/restore",
        )
    },
}

COMMANDS_EXEMPT: Mapping[str, str] = {
    "init": "writes a new workspace file; reads no workspace",
    "config": "checks the workspace file itself (the operator's configuration)",
    "demo": "the scripted tour over its own demo workspace",
    "serve": "starts the server: the http-api, web-page and mcp-http front ends",
    "eval": "scores an index on a dataset folder given on the command line",
    "eval-answers": "scores ask on the packaged answer set in a workspace of its own; reads "
    "no workspace of the caller's",
    "explain": "operators only (refused to others, audited): why a named user may or may not "
    "act on a path; tested in tests/cli/test_cli_explain.py",
    **{
        name: "the change journal: two worlds of their own in tests/parity/test_parity_changes.py"
        for name in ("changes", "diff", "undo", "revert")
    },
    **{
        name: "the change journal: governed by ChangeReview, tested in "
        "tests/security/test_journal_governance.py and tests/cli; not in the parity worlds yet"
        for name in ("checkpoint", "restore")
    },
    "token": "revokes tokens in the servers' shared state (the operator's); reads no workspace",
    "user": "local accounts in the servers' shared state (the operator's); reads no workspace",
}

METHODS_EXEMPT: Mapping[str, str] = {
    "with_principal": "makes the view of another principal (the caller's own choice)",
    "parse_path": "parses a path string; reads nothing",
    "mounts": "the mount table the caller built",
    "policy": "the policy the caller built",
    "reconfigured": "a server's reload: a new owner workspace with the caller's new policy",
    "view": "the mounts as the principal sees them: what every front end asks; reads nothing",
    "rebuild_index": "the operator check of reindex (driven), then a rebuild",
    "start_process": "background processes: driven through the process tool's list",
    "read_output": "background processes: output of the caller's own process id",
    "send_input": "background processes: input to the caller's own process id",
    "kill_process": "background processes: the caller's own process id",
    "close_processes": "background processes: the caller's own",
    "write_back": "background processes: changes of the caller's own process",
    "with_thread": "makes the view of the same principal in another thread (the caller's choice)",
    **{
        name: "the change journal: two worlds of their own in tests/parity/test_parity_changes.py"
        for name in ("changes", "diff", "undo", "revert")
    },
    **{
        name: "the change journal: governed by ChangeReview, tested in "
        "tests/security/test_journal_governance.py; not in the parity worlds yet"
        for name in (
            "undo_last",
            "checkpoint",
            "checkpoints",
            "restore",
        )
    },
}

ADAPTERS_NOT_FRONT_ENDS = frozenset({"scopes", "skills", "skills_model", "skills_tools", "tools"})
"""Modules of ``bastion.agents`` that are no front end of their own (they shape tool sets)."""

ADAPTER_FRONTS: Mapping[str, tuple[str, ...]] = {
    "langchain": ("langchain",),
    "pydantic_ai": ("pydantic-ai",),
    "openai": ("openai",),
    "mcp": ("mcp-inprocess", "mcp-http", "mcp-cli-http"),
    "mcp_stdio": ("mcp-stdio",),
}


def test_every_operation_has_scenarios_and_every_driver_speaks_operations() -> None:
    assert {s.op for s in SCENARIOS} == set(OPERATIONS)
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    for front, driver in FRONTS.items():
        assert driver.offers() <= set(OPERATIONS), front
        assert driver.offers(), front


def test_every_agent_tool_is_driven() -> None:
    tools = {t.name for t in (*GRANULAR_TOOLS, *EXECUTE_TOOLS, *INTENT_TOOLS)}
    driven = set(ToolDriver.entry.values()) | set(FRONTS["intent-tools"].entry.values())
    assert tools - driven == set()


def test_every_route_is_driven() -> None:
    app = create_app(Workspace([Mount.of("/x", MemoryStore())], policy=Policy.allow_all()))
    exposed = set()
    for route in app.routes:
        if isinstance(route, Route):
            exposed |= {f"{m} {route.path}" for m in route.methods or () if m != "HEAD"}
        elif isinstance(route, StarletteMount):
            exposed.add(route.path)
    driven = set(ROUTES_EXEMPT) | HttpApi.drives() | WebPage.drives()
    driven |= set(FRONTS["mcp-http"].aliases)  # the MCP endpoint: every tool
    assert exposed - driven == set()
    assert driven - exposed == set(), "a driver names a route the app does not have"


def test_every_command_is_driven() -> None:
    exposed = set(main.commands)
    driven = set(COMMANDS_EXEMPT) | Cli.drives() | set(FRONTS["mcp-stdio"].aliases)
    assert exposed - driven == set()
    assert driven - exposed == set()


def test_every_workspace_method_is_driven() -> None:
    exposed = {name for name, _ in inspect.getmembers(Workspace) if not name.startswith("_")}
    driven = set(METHODS_EXEMPT) | PythonAsync.drives()
    assert exposed - driven == set()
    assert driven - exposed == set()


@pytest.mark.parametrize("module", [m.name for m in pkgutil.iter_modules(bastion.agents.__path__)])
def test_every_agent_adapter_is_a_front_end(module: str) -> None:
    if module in ADAPTERS_NOT_FRONT_ENDS:
        return
    assert module in ADAPTER_FRONTS, f"bastion.agents.{module}: add its driver to FRONTS"
    assert set(ADAPTER_FRONTS[module]) <= set(FRONTS)
    source = inspect.getsource(inspect.getmodule(FRONTS[ADAPTER_FRONTS[module][0]]) or bastion)
    assert f"bastion.agents.{module}" in source
