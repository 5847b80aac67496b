"""Each bounded command-line option takes exactly what the operation it calls declares
(``bastion.workspace.operations``), so the CLI, the HTTP API and the agent tools agree on
``k``, ``context``, ``max_total``, ``limit`` and ``depth``: the bound itself is taken, one
past it is a usage error (exit 2) naming the option. ``cat --lines A:B`` asks for B-A+1
lines of the read operation's ``limit``; ``audit --limit`` is ``GET /v1/audit``'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Run

from bastion.workspace.operations import operation

CASES = [
    ("search", "k", lambda n: ["search", "guide", "-k", str(n)], "-k"),
    ("ask", "k", lambda n: ["ask", "What is the guide?", "-k", str(n)], "-k"),
    ("grep", "context", lambda n: ["grep", "line", "/docs", "-C", str(n)], "--context"),
    ("grep", "max_total", lambda n: ["grep", "line", "/docs", "--max", str(n)], "--max"),
    ("glob", "limit", lambda n: ["glob", "**/*.md", "--limit", str(n)], "--limit"),
    ("list", "depth", lambda n: ["tree", "/docs", "--depth", str(n)], "--depth"),
    ("read", "limit", lambda n: ["cat", "/docs/guide.md", "--lines", f"1:{n}"], "--lines"),
    ("audit", "limit", lambda n: ["audit", "--limit", str(n)], "--limit"),
]


@pytest.mark.parametrize(
    ("op", "name", "line", "flag"), CASES, ids=[f"{c[0]}.{c[1]}" for c in CASES]
)
def test_the_cli_bound_is_the_declared_one(
    starter: Path, run: Run, op: str, name: str, line: object, flag: str
) -> None:
    low, high = operation(op).bounds(name)
    assert high is not None
    args = line(high)  # type: ignore[operator]
    taken = run(*args, "--json", "--as", "alice")
    assert taken.exit_code == 0, taken.output
    refused = run(*line(high + 1), "--json", "--as", "alice")  # type: ignore[operator]
    assert refused.exit_code == 2, refused.output
    error = json.loads(refused.stderr)
    assert error["error"] == "usage" and flag in error["message"], error
    if low is not None and op != "read":
        below = run(*line(low - 1), "--json", "--as", "alice")  # type: ignore[operator]
        assert below.exit_code == 2, below.output
