"""Which tools exist for a principal: generated from mounts, scopes, policy, labels, the index
and the permission list (a decision table), and one registration for a new tool."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from bastion import (
    ConfigurationError,
    InvalidPathError,
    Labels,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    RateLimit,
    RateLimitError,
    Rule,
    Workspace,
)
from bastion.agents.tools import Capability, Output, ToolSession, Toolset, capabilities, ok, tool
from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge

READS = ["read_file", "list_files", "glob", "grep", "stat"]
WRITES = ["write_file", "edit_file", "mkdir", "delete", "move", "copy"]


def _ws(
    *scopes: str,
    policy: Policy | None = None,
    knowledge: Knowledge | None = None,
    principal: Principal | None = None,
    labels: Labels | None = None,
) -> Workspace:
    mounts = [
        Mount.of(f"/m{i}", MemoryStore(), scope, labels=labels) for i, scope in enumerate(scopes)
    ]
    # "*" is every file action: the operator action execute (and its tool) is tested in
    # test_tool_execute.py
    every_file_action = Policy(rules=(Rule.allow("*", "/**"),))
    return Workspace(
        mounts, policy=policy or every_file_action, knowledge=knowledge, principal=principal
    )


def _names(ws: Workspace, **kw: object) -> set[str]:
    return set(Toolset(ws, **kw).names)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("scopes", "policy", "expected"),
    [
        (("read_only",), None, READS),
        (("read_write",), None, READS + WRITES),
        (("write_only",), None, ["write_file", "mkdir"]),
        # edit_file needs reading and writing on one mount; copy may read here, write there
        (("read_only", "write_only"), None, [*READS, "write_file", "mkdir", "copy"]),
        # the policy allows reading and listing only: no write tools on a read-write mount
        (("read_write",), Policy(rules=(Rule.allow(["read", "list"], "/**"),)), READS),
        # a deny of the whole tree before the allow: nothing is writable
        (
            ("read_write",),
            Policy(rules=(Rule.deny("write", "/**"), Rule.allow("*", "/**"))),
            [*READS, "delete"],
        ),
        # writing allowed under one folder only: the write tools exist (the guard narrows)
        (
            ("read_write",),
            Policy(
                rules=(Rule.allow(["read", "list"], "/**"), Rule.allow("write", "/m0/notes/**"))
            ),
            [*READS, "write_file", "edit_file", "mkdir", "copy"],
        ),
        # rules for another role give this principal nothing
        (("read_write",), Policy(rules=(Rule.allow("*", "/**", roles={"admin"}),)), []),
        # the default policy denies everything
        (("read_write",), Policy(), []),
    ],
    ids=[
        "ro",
        "rw",
        "wo",
        "ro+wo",
        "policy-read-list",
        "deny-write",
        "narrow-write",
        "other-role",
        "deny-all",
    ],
)
def test_tools_follow_scopes_and_policy(
    scopes: tuple[str, ...], policy: Policy | None, expected: list[str]
) -> None:
    assert _names(_ws(*scopes, policy=policy)) == set(expected)


def test_no_search_or_ask_without_an_index_and_both_with_one() -> None:
    assert not {"search", "ask"} & _names(_ws("read_only"))
    knowledge = Knowledge()
    assert {"search", "ask"} <= _names(_ws("read_only", knowledge=knowledge))
    no_search = Policy(rules=(Rule.allow(["read", "list"], "/**"),))
    assert not {"search", "ask"} & _names(_ws("read_only", policy=no_search, knowledge=knowledge))
    knowledge.close()


def test_a_mount_the_principal_may_not_see_gives_no_tools() -> None:
    secret = Labels(classification="restricted")
    intern = Principal.of("intern", clearance="public")
    assert _names(_ws("read_write", labels=secret, principal=intern)) == set()
    boss = Principal.of("boss", clearance="restricted")
    assert _names(_ws("read_write", labels=secret, principal=boss)) == set(READS + WRITES)


def test_the_permission_list_narrows_the_set() -> None:
    ws = _ws("read_write", knowledge=Knowledge())
    assert _names(ws, permissions=["read", "list"]) == set(READS)
    assert _names(ws, permissions=["search"]) == {"search", "ask"}
    assert _names(ws, permissions=["write"]) == {"write_file", "mkdir", "delete"}
    with pytest.raises(ConfigurationError):
        Toolset(ws, permissions=["sudo"])


def test_intent_tools_offer_only_the_operations_the_principal_can_use() -> None:
    ro = Toolset(_ws("read_only"), style="intent")
    assert ro.names == ["access", "discover"]
    discover = ro.get("discover")
    assert discover is not None
    ops = discover.schema()["properties"]["operation"]
    assert ops["enum"] == ["list", "search_content"] and ops["default"] == "list"

    indexed = Toolset(_ws("read_write", knowledge=Knowledge()), style="intent")
    assert indexed.names == ["access", "discover", "update"]
    enum = indexed.get("discover").schema()["properties"]["operation"]["enum"]  # type: ignore[union-attr]
    assert enum == ["list", "search_content", "search_semantic"]

    drop_box = Toolset(_ws("write_only"), style="intent")
    assert drop_box.names == ["update"]
    update = drop_box.get("update").schema()  # type: ignore[union-attr]
    assert update["properties"]["operation"]["enum"] == ["create", "update", "append"]
    assert "operation" in update["required"]

    assert Toolset(_ws("read_write"), style="intent", permissions=["read"]).names == ["access"]


async def test_an_operation_left_out_of_the_schema_is_refused_when_called() -> None:
    tools = Toolset(_ws("write_only"), style="intent")
    out = await tools.call("update", {"path": "/m0/a.md", "operation": "delete"})
    assert out["success"] is False and "operation" in out["error"]


@tool(needs={Capability.READ})
async def word_count(
    s: ToolSession, path: Annotated[str, Field(description="A text file")]
) -> Output:
    """Count the words of a text file."""
    text = await s.workspace.read_text(path)
    return ok(path=path, words=len(text.split()))


@tool(needs={Capability.WRITE})
async def explode(s: ToolSession) -> Output:
    """Fail in a way no tool should."""
    raise RuntimeError("secret detail: /hidden/payroll.xlsx")


async def test_a_new_tool_is_one_function_and_one_registration() -> None:
    ws = _ws("read_write")
    await ws.write("/m0/a.txt", "three little words")
    tools = Toolset(ws, extra=[word_count])
    assert tools.names[-1] == "word_count"
    assert word_count.description == "Count the words of a text file."
    assert word_count.schema() == {
        "additionalProperties": False,
        "properties": {"path": {"description": "A text file", "type": "string"}},
        "required": ["path"],
        "type": "object",
    }
    assert await tools.call("word_count", {"path": "/m0/a.txt"}) == {
        "success": True,
        "path": "/m0/a.txt",
        "words": 3,
    }
    # it exists only where its needs are met
    assert "word_count" not in Toolset(_ws("write_only"), extra=[word_count])


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        Toolset(_ws("read_only"), extra=[word_count, word_count])


async def test_an_unexpected_failure_is_a_flat_error_without_its_detail() -> None:
    tools = Toolset(_ws("read_write"), extra=[explode])
    out = await tools.call("explode", {})
    assert out == {
        "success": False,
        "error": "explode failed unexpectedly; try again, or another way",
    }


async def test_an_unknown_tool_names_the_ones_there_are() -> None:
    out = await Toolset(_ws("read_only")).call("rm_rf", {})
    assert out["success"] is False
    assert out["error"].startswith("unknown tool 'rm_rf'; use one of: read_file, list_files")


async def test_a_malformed_path_in_a_tool_call_is_refused_and_audited_once() -> None:
    ws = _ws("read_write")
    tools = Toolset(ws)
    for name, args in (
        ("read_file", {"path": "/m0/../../etc/passwd"}),
        ("read_file", {"path": "/m0/a\x00b"}),
        ("write_file", {"path": "\\m0\\a", "content": "x"}),
        ("stat", {"path": "//server/share"}),
        ("move", {"src": "/m0/a", "dst": "C:/x"}),
        ("delete", {"path": "/m0/\u202ea"}),
        ("list_files", {"path": "/m0/../.."}),
    ):
        count = len(ws.audit.records)
        out = await tools.call(name, args)
        assert out["success"] is False and "path" in out["error"], out
        (record,) = ws.audit.records[count:]
        assert record.allowed is False and record.reason.startswith("InvalidPathError"), record
        assert record.operation == name


async def test_a_layer_parsing_paths_first_gets_them_audited_and_rate_limited() -> None:
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(rate_limit=RateLimit(requests=2, window_seconds=3600)),
        principal=Principal.of("agent"),
    )
    assert ws.parse_path("docs/./a.md", operation="mine") == VPath.parse("/docs/a.md")
    assert ws.audit.records == ()  # a well-formed path is not a request of its own
    with pytest.raises(InvalidPathError):
        ws.parse_path("/docs/../../x", operation="mine")
    (record,) = ws.audit.records
    assert (record.operation, record.allowed) == ("mine", False)
    with pytest.raises(InvalidPathError):
        ws.parse_path("/docs/a\x00", operation="mine")
    with pytest.raises(RateLimitError):  # the third request in the window
        ws.parse_path("C:/x", operation="mine")


def test_capabilities_decision_table() -> None:
    ws = _ws("read_only", "write_only")
    assert capabilities(ws) == {Capability.READ, Capability.LIST, Capability.WRITE}
    policy = Policy(
        rules=(
            Rule.deny("*", "/m0/**"),
            Rule.allow("*", "/m0/public/**"),  # shadowed by the deny of the whole mount
            Rule.allow("write", "/m1/**"),
        )
    )
    assert capabilities(_ws("read_only", "write_only", policy=policy)) == {Capability.WRITE}


def test_may_allow_respects_order_and_coverage() -> None:
    from bastion.agents.tools.toolset import may_allow

    who = Principal.of("p", roles={"dev"})
    roles = frozenset({"dev"})
    at = VPath.parse("/docs")
    narrow_deny = Policy(rules=(Rule.deny("read", "/docs/hr/**"), Rule.allow("read", "/**")))
    assert may_allow(narrow_deny, who, roles, Action.READ, at)
    whole_deny = Policy(rules=(Rule.deny("read", "/**"), Rule.allow("read", "/docs/**")))
    assert not may_allow(whole_deny, who, roles, Action.READ, at)
    other_tenant = Policy(rules=(Rule.allow("read", "/**", tenants={"acme"}),))
    assert not may_allow(other_tenant, who, roles, Action.READ, at)
    elsewhere = Policy(rules=(Rule.allow("read", "/other/**"),))
    assert not may_allow(elsewhere, who, roles, Action.READ, at)
    single_file = Policy(rules=(Rule.allow("read", "/docs/readme.md"),))
    assert may_allow(single_file, who, roles, Action.READ, at)
