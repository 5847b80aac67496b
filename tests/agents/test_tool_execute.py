"""The ``execute`` tool: offered only where the policy grants ``execute``, in both styles and
every adapter; a run through an adapter gives the result fields; approval rules on programs
and arguments fail closed; a refused write-back is reported; hostile arguments are one-line
tool errors.

Real bubblewrap, real processes (the runs are skipped only where bubblewrap cannot start, and
the skip says why); the listing tests need no sandbox.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest
from langchain_core.messages import ToolMessage
from mcp import Client

from bastion import MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.langchain import langchain_tools
from bastion.agents.mcp import mcp_server
from bastion.agents.openai import OpenAITools
from bastion.agents.pydantic_ai import BastionToolset
from bastion.agents.tools import Approval, ApprovalRequest, CommandRule, Toolset
from bastion.agents.tools.commands import command_words, needs_approval
from bastion.core.errors import ConfigurationError
from bastion.sandbox import SandboxError
from bastion.sandbox.bwrap import bwrap_binary

RUNNER = Principal.of("runner")
READER = Principal.of("reader")

RULES = (
    Rule.allow("execute", "/**", principals={"runner"}),
    Rule.deny(["write", "delete"], "/out/**", principals={"runner", "reader"}),
    Rule.allow("*", "/**"),
)


async def _workspace(principal: Principal = RUNNER) -> Workspace:
    ws = Workspace(
        [
            Mount.of("/docs", MemoryStore(), "read_only"),
            Mount.of("/scratch", MemoryStore()),
            Mount.of("/out", MemoryStore()),
        ],
        policy=Policy(rules=RULES),
        principal=Principal.of("owner"),
    )
    await ws.write("/scratch/a.txt", "alpha\n")
    await ws.write("/out/report.txt", "quarterly\n")
    return ws.with_principal(principal)


@pytest.fixture
def bwrap() -> None:
    try:
        bwrap_binary()
    except SandboxError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


# -- which principals get it -----------------------------------------------------------------


@pytest.mark.parametrize("style", ["granular", "intent"])
async def test_only_a_principal_granted_execute_gets_the_tool_in_every_adapter(
    style: str,
) -> None:
    for principal, present in ((RUNNER, True), (READER, False)):
        toolset = Toolset(await _workspace(principal), style=style)  # type: ignore[arg-type]
        assert ("execute" in toolset) is present
        openai = [d["function"]["name"] for d in OpenAITools(toolset).definitions()]
        responses = [d["name"] for d in OpenAITools(toolset).definitions("responses")]
        async with Client(mcp_server(toolset)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
        chains = [t.name for t in langchain_tools(toolset)]
        pydantic = list(await BastionToolset(toolset).get_tools(cast(Any, None)))
        for names in (openai, responses, listed, chains, pydantic):
            assert ("execute" in names) is present, (principal.id, names)
            assert ("process" in names) is present, (principal.id, names)
        if not present:  # a call by name is an unknown tool, not a run
            out = await toolset.call("execute", {"command": "true"})
            assert out["success"] is False and "unknown tool 'execute'" in out["error"]


async def test_star_in_a_rule_and_the_permission_list_do_not_grant_it() -> None:
    ws = Workspace([Mount.of("/w", MemoryStore())], policy=Policy(rules=(Rule.allow("*", "/**"),)))
    assert "execute" not in Toolset(ws)
    granted = await _workspace()
    assert "execute" not in Toolset(granted, permissions=["read", "write", "list"])
    assert "execute" in Toolset(granted, permissions=["read", "execute"])


async def test_the_schema_a_model_sees() -> None:
    toolset = Toolset(await _workspace())
    (schema,) = [s for s in toolset.schemas() if s["name"] == "execute"]
    params = schema["parameters"]
    assert params["required"] == ["command"]
    assert set(params["properties"]) == {"command", "cwd", "timeout", "stdin", "background"}
    assert params["properties"]["timeout"]["maximum"] == 3600  # 300 unless background
    assert params["properties"]["stdin"]["maxLength"] == 100_000
    (managing,) = [s for s in toolset.schemas() if s["name"] == "process"]
    props = managing["parameters"]["properties"]
    assert managing["parameters"]["required"] == ["action"]
    assert props["action"]["enum"] == ["list", "read", "send", "kill", "write_back"]
    assert set(props) == {"action", "process_id", "stream", "offset", "input", "close_input"}
    async with Client(mcp_server(toolset)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["execute"].annotations is None  # it changes files: no read-only hint
    assert tools["process"].annotations is None


# -- runs through the adapters ---------------------------------------------------------------


@pytest.mark.usefixtures("bwrap")
async def test_a_run_through_the_openai_adapter_returns_the_result_fields() -> None:
    tools = OpenAITools(Toolset(await _workspace()))
    call = {
        "id": "c1",
        "function": {
            "name": "execute",
            "arguments": json.dumps(
                {
                    "command": "cat a.txt; cat >> a.txt; echo oops >&2; exit 3",
                    "cwd": "/scratch",
                    "stdin": "beta\n",
                }
            ),
        },
    }
    message = await tools.handle(call)
    out = json.loads(message["content"])
    assert message["role"] == "tool" and message["tool_call_id"] == "c1"
    assert next(iter(out)) == "success" and out["success"] is True
    assert out["exit_code"] == 3 and "signal" not in out and "limit" not in out
    assert out["stdout"] == "alpha\n" and out["stderr"] == "oops\n"
    assert out["changed"] == ["/scratch/a.txt"]
    assert isinstance(out["duration"], float)
    ws = tools.toolset.workspace
    assert await ws.read_text("/scratch/a.txt") == "alpha\nbeta\n"


@pytest.mark.usefixtures("bwrap")
async def test_an_argument_list_runs_without_a_shell_through_mcp() -> None:
    toolset = Toolset(await _workspace(), style="intent")
    async with Client(mcp_server(toolset)) as client:
        done = await client.call_tool("execute", {"command": ["echo", "$HOME", ";", "x"]})
    out = json.loads(done.content[0].text)  # type: ignore[union-attr]
    assert done.is_error is False
    assert out["stdout"] == "$HOME ; x\n" and out["exit_code"] == 0 and out["changed"] == []


@pytest.mark.usefixtures("bwrap")
async def test_a_run_through_langchain_and_an_error_as_a_tool_message() -> None:
    (run,) = [t for t in langchain_tools(Toolset(await _workspace())) if t.name == "execute"]
    call = {
        "type": "tool_call",
        "name": "execute",
        "id": "x1",
        "args": {"command": ["wc", "-l", "a.txt"], "cwd": "/scratch"},
    }
    message = await run.ainvoke(call)
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert message.artifact["stdout"] == "1 a.txt\n" and message.artifact["exit_code"] == 0
    refused = await run.ainvoke({**call, "args": {"command": "true", "cwd": "/docs/../.."}})
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert "climbs above" in json.loads(str(refused.content))["error"]


@pytest.mark.usefixtures("bwrap")
async def test_a_refused_write_back_is_reported_per_path() -> None:
    toolset = Toolset(await _workspace())
    out = await toolset.call(
        "execute", {"command": "echo no > /out/report.txt; echo yes > /scratch/b.txt"}
    )
    assert out["success"] is True
    assert out["changed"] == ["/scratch/b.txt"]
    assert set(out["refused"]) == {"/out/report.txt"}
    assert "not allowed by policy" in out["refused"]["/out/report.txt"]
    assert await toolset.workspace.read_text("/out/report.txt") == "quarterly\n"


@pytest.mark.usefixtures("bwrap")
async def test_a_timeout_and_large_output_are_said() -> None:
    toolset = Toolset(await _workspace())
    slow = await toolset.call("execute", {"command": "echo started; sleep 30", "timeout": 1})
    assert slow["success"] is True and slow["limit"] == "timeout"
    assert slow["signal"] == "SIGKILL" and "exit_code" not in slow
    assert slow["stdout"] == "started\n"
    loud = await toolset.call("execute", {"command": "seq 1 20000"})
    assert loud["stdout_truncated"] is True and "stderr_truncated" not in loud
    assert "more characters cut" in loud["stdout"]
    whole = await toolset.call("read_file", {"path": loud["stdout_full"], "offset": 19999})
    assert whole["content"] == " 20000\t20000"


async def test_hostile_arguments_are_one_line_tool_errors() -> None:
    tools = OpenAITools(Toolset(await _workspace()))
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "command: Field required"),
        ({"command": ""}, "empty; give a shell line"),
        ({"command": []}, "empty; give a shell line"),
        ({"command": "   "}, "empty; give a shell line"),
        ({"command": "true", "timeout": 0}, "timeout"),
        ({"command": "true", "timeout": 10**6}, "timeout"),
        ({"command": "true", "timeout": 301}, "timeout over 300 s; start a longer command"),
        ({"command": "true", "stdin": "x" * 100_001}, "stdin"),
        ({"command": ["echo", "a\x00b"]}, "NUL"),
        ({"command": ["x"] * 1001}, "more than 1000 arguments"),
        ({"command": ["echo", *["y" * 60_000] * 2]}, "over 100000 characters in all"),
        ({"command": [1, 2]}, "command"),
        ({"command": {"program": "rm"}}, "command"),
        ({"command": "true", "cwd": "/../../etc"}, ""),
        ({"command": "true", "cwd": "/nowhere"}, ""),
        ({"command": "true", "env": {"LD_PRELOAD": "x"}}, "unknown argument"),
    ]
    for arguments, expected in cases:
        out = json.loads(await tools.call("execute", json.dumps(arguments)))
        assert out["success"] is False, arguments
        assert "\n" not in out["error"] and expected in out["error"], (arguments, out)
        assert "failed unexpectedly" not in out["error"], (arguments, out)
        assert len(out["error"]) <= 400


# -- background processes --------------------------------------------------------------------


async def _until_ended(toolset: Toolset, pid: str) -> dict[str, Any]:
    for _ in range(600):
        listed = await toolset.call("process", {"action": "list"})
        (mine,) = [p for p in listed["processes"] if p["process_id"] == pid]
        if mine["state"] != "running":
            return cast(dict[str, Any], mine)
        await asyncio.sleep(0.05)
    raise AssertionError("the process did not end")


@pytest.mark.usefixtures("bwrap")
async def test_a_background_process_through_the_tools() -> None:
    toolset = Toolset(await _workspace())
    started = await toolset.call(
        "execute",
        {
            "command": "seq 1 5; read word; echo $word > got.txt; echo done",
            "cwd": "/scratch",
            "background": True,
        },
    )
    assert started["success"] is True and started["state"] == "running"
    pid = started["process_id"]
    sent = await toolset.call("process", {"action": "send", "process_id": pid, "input": "hi\n"})
    assert sent["sent"] == 3 and sent["of"] == 3
    ended = await _until_ended(toolset, pid)
    assert ended["state"] == "exited" and ended["exit_code"] == 0
    assert ended["changed"] == ["/scratch/got.txt"]
    assert await toolset.workspace.read_text("/scratch/got.txt") == "hi\n"
    first = await toolset.call("process", {"action": "read", "process_id": pid})
    assert first["text"] == "1\n2\n3\n4\n5\ndone\n" and first["running"] is False
    assert first["next_offset"] == first["total"] == 15
    rest = await toolset.call("process", {"action": "read", "process_id": pid, "offset": 10})
    assert rest["text"] == "done\n" and rest["offset"] == 10


@pytest.mark.usefixtures("bwrap")
async def test_another_principals_tools_do_not_find_the_process() -> None:
    ws = await _workspace()
    mine = Toolset(ws)
    started = await mine.call(
        "execute", {"command": ["sleep", "30"], "background": True, "timeout": 1000}
    )
    pid = started["process_id"]
    other = Toolset(ws.with_principal(Principal.of("runner", tenant="other")))
    assert (await other.call("process", {"action": "list"}))["processes"] == []
    for action in ("read", "send", "kill", "write_back"):
        out = await other.call("process", {"action": action, "process_id": pid})
        assert out["success"] is False and f"no background process '{pid}'" in out["error"]
    killed = await mine.call("process", {"action": "kill", "process_id": pid})
    assert killed["state"] == "killed" and killed["signal"] == "SIGKILL"
    missing = await mine.call("process", {"action": "read"})
    assert missing["success"] is False and "needs a process_id" in missing["error"]


@pytest.mark.usefixtures("bwrap")
async def test_input_sent_to_a_process_is_approved_like_a_command() -> None:
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    toolset = Toolset(await _workspace(), approval=Approval(deny, commands=["rm"]))
    started = await toolset.call("execute", {"command": "sh", "background": True})
    pid = started["process_id"]
    assert asked == []  # sh matches no rule
    out = await toolset.call(
        "process", {"action": "send", "process_id": pid, "input": "rm /scratch/a.txt\n"}
    )
    assert out["success"] is False and "not approved" in out["error"]
    assert asked[-1].tool == "execute"
    assert asked[-1].arguments == {"command": "rm /scratch/a.txt\n"}
    listed = await toolset.call("process", {"action": "list"})
    assert listed["success"] is True and len(asked) == 1  # listing asks nobody
    await toolset.call("process", {"action": "kill", "process_id": pid})
    assert await toolset.workspace.read_text("/scratch/a.txt") == "alpha\n"


# -- approval --------------------------------------------------------------------------------


@pytest.mark.usefixtures("bwrap")
async def test_a_command_rule_asks_and_a_refusal_runs_nothing() -> None:
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    toolset = Toolset(await _workspace(), approval=Approval(deny, commands=["rm"]))
    refused = await toolset.call("execute", {"command": "rm /scratch/a.txt", "cwd": "/scratch"})
    assert refused == {
        "success": False,
        "error": "execute was not approved; do not retry it, ask the user instead",
    }
    assert await toolset.workspace.read_text("/scratch/a.txt") == "alpha\n"
    assert [r.arguments["command"] for r in asked] == ["rm /scratch/a.txt"]
    assert asked[0].principal == "runner" and asked[0].paths == ("/scratch",)
    ran = await toolset.call("execute", {"command": "ls /scratch"})
    assert ran["success"] is True and ran["stdout"] == "a.txt\n"
    assert len(asked) == 1  # no rule matched: nobody was asked


@pytest.mark.usefixtures("bwrap")
async def test_an_approved_command_runs_and_a_failing_approver_refuses() -> None:
    toolset = Toolset(await _workspace(), approval=Approval(lambda r: True, commands=["* --force"]))
    out = await toolset.call("execute", {"command": ["rm", "--force", "/scratch/a.txt"]})
    assert out["success"] is True and out["deleted"] == ["/scratch/a.txt"]

    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("approver down")

    failing = Toolset(await _workspace(), approval=Approval(broken, commands=["rm"]))
    out = await failing.call("execute", {"command": "rm -f /scratch/a.txt"})
    assert out["success"] is False and "the approval check failed" in out["error"]
    assert "approver down" not in out["error"]
    assert await failing.workspace.exists("/scratch/a.txt")


async def test_path_rules_and_tool_rules_cover_execute() -> None:
    """A path rule asks before a command runs in a folder it reaches (the root reaches every
    rule); elsewhere the command runs and its changes are asked about per path
    (tests/agents/test_approval_effects.py)."""
    toolset = Toolset(await _workspace(), approval=Approval(lambda r: False, paths=["/out/x/**"]))
    out = await toolset.call("execute", {"command": "true"})
    assert out["success"] is False and "not approved" in out["error"]
    out = await toolset.call("execute", {"command": "true", "cwd": "/out/x"})
    assert out["success"] is False and "not approved" in out["error"]
    out = await toolset.call("execute", {"command": "true", "cwd": "/scratch"})
    assert out["success"] is True
    asked: list[ApprovalRequest] = []
    named = Toolset(await _workspace(), approval=Approval(asked.append, tools={"execute"}))
    out = await named.call("execute", {"command": ["true"], "cwd": "/scratch"})
    assert out["success"] is False and "not approved" in out["error"]  # None is not True
    assert asked[0].tool == "execute" and asked[0].trees == ("/scratch",)
    with pytest.raises(ConfigurationError, match="no hook to ask"):
        Toolset(await _workspace(), approval=Approval(None, commands=["rm"]))


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "/bin/rm x",
        "true; rm x",
        "true&&rm x",
        "echo hi | xargs rm",
        "sh -c 'rm x'",
        "r''m x",
        "\\rm x",
        "env rm x",
        ["rm", "x"],
        ["/usr/bin/rm", "x"],
        ["env", "rm", "x"],
        ["find", ".", "-exec", "rm", "{}", ";"],
        ["sh", "-c", "true;rm x"],
        # what only the shell resolves: asked whatever it turns out to be
        "$(echo rm) x",
        "`echo rm` x",
        "x=rm; $x file",
        "/bin/r? x",
        "echo 'open quote",
        ["bash", "-c", "${X}m x"],
    ],
)
def test_rules_match_the_program_however_it_is_written(command: str | list[str]) -> None:
    assert needs_approval([CommandRule.parse("rm")], command)


@pytest.mark.parametrize(
    ("rule", "command", "needed"),
    [
        ("git push", "git status", False),
        ("git push", "git push origin main", True),
        ("git push", ["git", "-C", "/scratch", "push"], True),
        ("* --force", "cp --force a b", True),
        ("* --force", "cp a b", False),
        ("curl http*://*", "curl https://example.com", True),
        ("curl http*://*", "curl -V", False),
        ("rm", "ls -la /scratch", False),
        ("rm", "cat /docs/rm-notes.md", False),
        ("rm", ["grep", "-r", "$HOME*", "/docs"], False),  # no shell: nothing is expanded
    ],
)
def test_rule_syntax(rule: str, command: str | list[str], needed: bool) -> None:
    assert needs_approval([CommandRule.parse(rule)], command) is needed


def test_rules_that_cannot_be_read_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="empty"):
        CommandRule.parse("   ")
    with pytest.raises(ConfigurationError, match="open quote"):
        CommandRule.parse("rm 'x")
    assert CommandRule.parse("git 'push --all'") == CommandRule("git", ("push --all",))
    assert command_words("a 'b c'") == (["a", "b c"], True)
    assert not needs_approval([], "rm -rf /")
