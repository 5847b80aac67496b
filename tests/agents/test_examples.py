"""Every example in examples/ runs offline as a script, prints what it promises, and keeps to
twenty lines of code (imports included; the docstring, comments and blank lines not)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WRITE_OK = '{"success":true,"path":"/work/plan.md"'
READ_ONLY = "mount /docs is read-only; write is not allowed there"

EXPECTED: dict[str, list[str]] = {
    "quickstart.py": [
        "- /notes/  read-write (memory): read, list, search, write, delete",
        "Rotate the canary keys every week.",
        "search: ['/notes/canary.md']",
        f"refused: /docs/new.md: {READ_ONLY}",
    ],
    "openai_tools.py": [
        "tools: ['read_file', 'write_file',",
        f"call_0 {WRITE_OK}",
        f'call_1 {{"success":false,"error":"/docs/plan.md: {READ_ONLY}"}}',
    ],
    "mcp_server.py": [
        "- /docs/  read-only (memory): read, list, search",
        "tools: ['read_file', 'write_file',",
        'ok {"success":true,"path":"/work/a.md","size":2,"created":true}',
        f'error {{"success":false,"error":"/docs/a.md: {READ_ONLY}"}}',
    ],
    "langchain_agent.py": [
        "human: Save the plan.",
        f"tool: {WRITE_OK}",
        'tool: {"success":true,"path":"/work/plan.md","content":"     1\\tship it"}',
        "ai: Saved.",
    ],
    "pydantic_ai_agent.py": [
        "tool-return: {'success': True, 'path': '/work/plan.md', 'size': 7, 'created': True}",
        f"tool-return: {{'success': False, 'error': '/docs/plan.md: {READ_ONLY}'}}",
        "text: Saved to /work/plan.md; /docs is read-only.",
    ],
}


def code_lines(path: Path) -> int:
    source = path.read_text(encoding="utf-8")
    first = ast.parse(source).body[0]
    docstring_end = (first.end_lineno or 0) if isinstance(first, ast.Expr) else 0
    return sum(
        1
        for n, line in enumerate(source.splitlines(), 1)
        if n > docstring_end and line.strip() and not line.lstrip().startswith("#")
    )


def test_every_example_is_checked() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_and_prints(name: str, tmp_path: Path) -> None:
    script = EXAMPLES / name
    assert code_lines(script) <= 20
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for expected in EXPECTED[name]:
        assert expected in done.stdout, f"{expected!r} not in:\n{done.stdout}"
    assert list(tmp_path.iterdir()) == []  # nothing written outside the workspace


async def test_the_mcp_example_serves_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(EXAMPLES / "mcp_server.py"), "--stdio"]
    )
    async with Client(params, read_timeout_seconds=120) as client:
        assert "/work/  read-write" in (client.instructions or "")
        result = await client.call_tool("write_file", {"path": "/work/a.md", "content": "hi"})
        assert json.loads(result.content[0].text)["created"] is True
