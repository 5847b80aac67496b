"""Tool-call overhead of each agent adapter against a direct workspace call, and token sizes of
tool schemas and typical outputs (issue 5).

.venv/bin/python bench/tool_overhead.py [--quick] [--rounds N] [--ops N] [--out FILE]

1. **Overhead.** Median µs per call of ``read_file`` on a small file (20 lines, ~1 KiB, on a
   read-only local-disk mount), through each path an agent can take:

   - ``await Workspace.read_text`` (no tool at all: the baseline);
   - ``await Toolset.call("read_file", ...)`` (validation, the session's read tracking, the
     numbered-lines output);
   - ``await OpenAITools.call(...)`` (JSON arguments in, compact JSON out);
   - LangChain: ``await tool.ainvoke(tool_call)`` of the converted tool (a ``ToolMessage``
     out, through LangChain's callback manager, as ``ToolNode`` calls it);
   - Pydantic AI: the toolset's argument validator, then ``await toolset.call_tool(...)``
     (the toolset's share of a call; the agent graph around it is not counted);
   - MCP in-process: ``await client.call_tool(...)`` of the official client connected to
     ``mcp_server(toolset)`` over in-memory streams (JSON-RPC both ways);
   - MCP stdio: the same client against ``bastion mcp --mount /docs=DIR`` as a subprocess
     (pipes, one JSON-RPC round trip per call; start-up not counted).

   Every in-process case runs on one event loop with the workspace the stdio server builds
   (same mount, policy and principal). Each case is warmed up, then timed for ``--rounds``
   rounds of ``--ops`` calls (``time.perf_counter_ns``); rounds of the cases are interleaved.
   The table gives the median over rounds of µs per call (wall clock, and this process's CPU
   time, which a busy machine disturbs less; the stdio server's CPU is not in it), and
   ``x direct``.

2. **Token sizes.** Characters of the compact JSON of each tool's schema (name, description,
   parameters: what every request carries) and of typical outputs, with tokens estimated as
   characters / 4 (tiktoken is not installed; the ratio is the usual one for English and JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from bastion import FileLimits, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.langchain import langchain_tools
from bastion.agents.mcp import mcp_server
from bastion.agents.openai import OpenAITools, dumps
from bastion.agents.pydantic_ai import BastionToolset
from bastion.agents.tools import Toolset
from bastion.knowledge.engine import Knowledge
from bastion.stores.local import LocalStore

SMALL = "".join(f"line {n:02d}: a small file read through every adapter\n" for n in range(1, 21))
PATH = "/docs/small.md"
ARGS = {"path": PATH}


@dataclass(frozen=True)
class Config:
    rounds: int = 7
    ops: int = 2000
    stdio_ops: int = 500


FULL = Config()
QUICK = Config(rounds=3, ops=200, stdio_ops=50)


@dataclass
class Case:
    id: str
    label: str
    call: Callable[[], Awaitable[Any]]
    ops: int
    per_op_ns: list[float] = field(default_factory=list)
    """Wall-clock nanoseconds per call, one value per timed round."""
    cpu_ns: list[float] = field(default_factory=list)
    """This process's CPU nanoseconds per call (all threads; not the stdio server's)."""

    @property
    def median_us(self) -> float:
        return statistics.median(self.per_op_ns) / 1000.0

    @property
    def cpu_us(self) -> float:
        return statistics.median(self.cpu_ns) / 1000.0


# -- the cases -----------------------------------------------------------------------------------


def _workspace(docs: Path) -> Workspace:
    """What ``bastion mcp --mount /docs=DIR`` builds (cli_mcp): one read-only folder, every
    action the scope allows, ``.git`` and ``.bastion`` blocked, principal ``agent``."""
    policy = Policy.allow_all(limits=FileLimits(blocked_segments=frozenset({".git", ".bastion"})))
    mounts = [Mount.of("/docs", LocalStore(docs), "read_only")]
    return Workspace(mounts, policy=policy, principal=Principal.of("agent", tenant="default"))


def _checked(out: Any) -> None:
    text = out if isinstance(out, str) else json.dumps(out)
    if "line 20" not in text:
        raise RuntimeError(f"unexpected tool output: {text[:200]}")


async def _cases(docs: Path, cfg: Config, stack: list[Any]) -> list[Case]:
    ws = _workspace(docs)
    toolset = Toolset(ws)
    openai = OpenAITools(toolset)
    (lc_read,) = [t for t in langchain_tools(toolset) if t.name == "read_file"]
    pai = BastionToolset(toolset)
    pai_tool = (await pai.get_tools(_pydantic_ctx()))["read_file"]
    pai_ctx = _pydantic_ctx()
    inproc = Client(mcp_server(toolset))
    await inproc.__aenter__()
    stack.append(inproc)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bastion.cli", "mcp", "--mount", f"/docs={docs}"],
    )
    stdio = Client(params, read_timeout_seconds=120)
    await stdio.__aenter__()
    stack.append(stdio)
    raw_args = json.dumps(ARGS)
    call_n = iter(range(1 << 62))

    async def direct() -> str:
        return await ws.read_text(PATH)

    async def via_toolset() -> Any:
        return await toolset.call("read_file", ARGS)

    async def via_openai() -> str:
        return await openai.call("read_file", raw_args)

    async def via_langchain() -> Any:
        call = {"type": "tool_call", "name": "read_file", "args": ARGS, "id": f"c{next(call_n)}"}
        return (await lc_read.ainvoke(call)).content

    async def via_pydantic_ai() -> Any:
        args = pai_tool.args_validator.validate_python(ARGS)
        return await pai.call_tool("read_file", args, pai_ctx, pai_tool)

    async def via_mcp_inproc() -> str:
        return str((await inproc.call_tool("read_file", ARGS)).content[0].text)  # type: ignore[union-attr]

    async def via_mcp_stdio() -> str:
        return str((await stdio.call_tool("read_file", ARGS)).content[0].text)  # type: ignore[union-attr]

    rows: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("direct", "await Workspace.read_text (no tool)", direct),
        ("toolset", "await Toolset.call('read_file')", via_toolset),
        ("openai", "OpenAI dispatcher: OpenAITools.call (JSON in/out)", via_openai),
        ("langchain", "LangChain: tool.ainvoke(tool_call) -> ToolMessage", via_langchain),
        ("pydantic_ai", "Pydantic AI: validate args + toolset.call_tool", via_pydantic_ai),
        ("mcp_inproc", "MCP in-process: client.call_tool (memory streams)", via_mcp_inproc),
        ("mcp_stdio", "MCP stdio: client.call_tool (subprocess, pipes)", via_mcp_stdio),
    ]
    return [
        Case(id_, label, fn, cfg.stdio_ops if id_ == "mcp_stdio" else cfg.ops)
        for id_, label, fn in rows
    ]


def _pydantic_ctx() -> Any:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    return RunContext(deps=None, model=TestModel(), usage=RunUsage())


async def _time(case: Case) -> None:
    cpu, start = time.process_time_ns(), time.perf_counter_ns()
    for _ in range(case.ops):
        await case.call()
    case.per_op_ns.append((time.perf_counter_ns() - start) / case.ops)
    case.cpu_ns.append((time.process_time_ns() - cpu) / case.ops)


async def measure(docs: Path, cfg: Config) -> list[Case]:
    stack: list[Any] = []
    try:
        cases = await _cases(docs, cfg, stack)
        for case in cases:  # warm up, and check each path reads the file
            _checked(await case.call())
            for _ in range(min(case.ops, 50)):
                await case.call()
        for _ in range(cfg.rounds):
            for case in cases:
                await _time(case)
        return cases
    finally:
        for client in reversed(stack):
            await client.__aexit__(None, None, None)


# -- sizes ---------------------------------------------------------------------------------------


def _tokens(chars: int) -> int:
    return round(chars / 4)


async def sizes() -> tuple[list[tuple[str, str, int]], list[tuple[str, int]]]:
    """(style, tool, chars) of every schema, and (output, chars) of typical outputs."""
    mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=Knowledge())
    schemas = []
    for style, toolset in (("granular", Toolset(ws)), ("intent", Toolset(ws, style="intent"))):
        for schema in toolset.schemas():
            schemas.append((style, schema["name"], len(dumps(schema))))
    tools = Toolset(ws)
    await ws.write("/work/small.md", SMALL)
    for n in range(5):
        await ws.write(f"/work/notes/note{n}.md", f"# Note {n}\nThe canary rotates weekly.\n")
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("read_file, 20 lines", "read_file", {"path": "/work/small.md"}),
        ("write_file", "write_file", {"path": "/work/new.md", "content": "hello\n"}),
        (
            "edit_file",
            "edit_file",
            {"path": "/work/small.md", "old_string": "line 01", "new_string": "line 1"},
        ),
        ("stat", "stat", {"path": "/work/small.md"}),
        ("list_files (7 entries)", "list_files", {"path": "/work"}),
        ("grep, 5 matches", "grep", {"pattern": "canary"}),
        ("search bm25, k=5", "search", {"query": "canary rotates", "mode": "bm25", "k": 5}),
        ("refusal (read-only mount)", "write_file", {"path": "/docs/x.md", "content": "x"}),
        ("not found", "read_file", {"path": "/work/none.md"}),
    ]
    outputs = [("system prompt addition: filesystem map, 2 mounts", len(tools.filesystem_map()))]
    for label, name, args in calls:
        out = await tools.call(name, args)
        outputs.append((label, len(dumps(out))))
    return schemas, outputs


# -- report --------------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"cpu: {cpu}; cores: {os.cpu_count()}; python: {platform.python_implementation()} "
        f"{platform.python_version()}; os: {platform.system()} {platform.release()}; "
        f"load average at start: {load}"
    )


def render(
    cases: list[Case],
    schemas: list[tuple[str, str, int]],
    outputs: list[tuple[str, int]],
    cfg: Config,
    command: str,
    where: str,
) -> str:
    base = cases[0].median_us
    lines = [
        f"Command: `{command}`",
        "",
        f"Machine: {where}",
        "",
        f"**read_file of a 20-line file (local disk, read-only mount)**, {cfg.rounds} rounds "
        f"x {cfg.ops} calls ({cfg.stdio_ops} for stdio); medians of µs per call",
        "",
        "| path | wall µs/call | min - max | x direct | + µs over direct | CPU µs/call |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        lo, hi = min(case.per_op_ns) / 1000, max(case.per_op_ns) / 1000
        lines.append(
            f"| {case.label} | {case.median_us:,.1f} | {lo:,.1f} - {hi:,.1f} | "
            f"{case.median_us / base:.2f}x | {case.median_us - base:,.1f} | {case.cpu_us:,.1f} |"
        )
    lines += [
        "",
        "**Tool schemas** (compact JSON of name, description, parameters; tokens ~ chars / 4)",
        "",
        "| style | tool | chars | ~tokens |",
        "|---|---|---:|---:|",
    ]
    for style, name, chars in schemas:
        lines.append(f"| {style} | {name} | {chars:,} | {_tokens(chars):,} |")
    for style in ("granular", "intent"):
        mine = [c for s, _, c in schemas if s == style]
        total = sum(mine)
        lines.append(f"| {style} | **all {len(mine)}** | **{total:,}** | **{_tokens(total):,}** |")
    lines += [
        "",
        "**Typical outputs** (compact JSON as the model reads it; tokens ~ chars / 4)"
        " and the instructions the adapters add to the system prompt",
        "",
        "| output | chars | ~tokens |",
        "|---|---:|---:|",
    ]
    lines += [f"| {label} | {chars:,} | {_tokens(chars):,} |" for label, chars in outputs]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> tuple[list[Case], str]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--rounds", type=int, help="timed rounds (overrides the preset)")
    parser.add_argument("--ops", type=int, help="calls per round (overrides; stdio gets 1/4)")
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.rounds is not None:
        cfg = Config(args.rounds, cfg.ops, cfg.stdio_ops)
    if args.ops is not None:
        cfg = Config(cfg.rounds, args.ops, max(1, args.ops // 4))
    command = ".venv/bin/python " + " ".join(
        ["bench/tool_overhead.py", *(argv if argv is not None else sys.argv[1:])]
    )
    where = machine()
    with tempfile.TemporaryDirectory(prefix="bastion-tools-") as tmp:
        docs = Path(tmp)
        (docs / "small.md").write_text(SMALL, encoding="utf-8")
        cases = asyncio.run(measure(docs, cfg))
    schemas, outputs = asyncio.run(sizes())
    report = render(cases, schemas, outputs, cfg, command, where)
    print(report)
    if args.out is not None:
        args.out.write_text("# Tool-call overhead benchmark\n\n" + report + "\n", encoding="utf-8")
    return cases, report


if __name__ == "__main__":
    main()
