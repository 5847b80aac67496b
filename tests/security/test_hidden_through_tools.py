"""The agent tools, both styles, answer exactly as if hidden entries did not exist (red-team
variants of "hidden documents on every read path" and "existence oracles", docs/security.md):
each tool call runs in a world with hidden entries (a hidden file, a folder of hidden files, a
large and a binary hidden file; hidden by their labels or by policy rules) and in the same world
without them, and the tool's whole output must be the same (grep counts and skipped files,
listings, globs with braces, ``**`` and character classes, search with relations, errors word
for word).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import FileLimits, Labels, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.tools import Toolset
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.workspace.blocking import run_blocking

OWNER = Principal.of("owner", clearance="restricted")
READER = Principal.of("reader", clearance="internal")
SECRET = "---\nclassification: restricted\n---\nzebra secret\n"
HIDDEN = ("/docs/a.md", "/docs/d/**", "/docs/big.txt", "/docs/bin.dat")


def _reader(hidden: bool, how: str) -> Workspace:
    rules = tuple(Rule.deny("*", p, principals=["reader"]) for p in HIDDEN) if how == "rule" else ()
    policy = Policy(
        rules=(Rule.allow("reindex", "/**", principals=["owner"]), *rules, Rule.allow("*", "/**")),
        limits=FileLimits(max_file_bytes=2000),
    )
    store = MemoryStore()
    ws = Workspace(
        [Mount.of("/docs", store, labels=Labels(classification="internal"))],
        policy=policy,
        principal=OWNER,
        knowledge=Knowledge(MemoryIndex()),
    ).sync()
    ws.write("/docs/open.md", "zebra open\n[link](a.md)\n")
    if hidden:
        head = SECRET if how == "labels" else "zebra secret\n"
        for path in ("/a.md", "/d/x.md", "/d/sub/y.md"):
            run_blocking(store.makedirs(VPath.parse(path).parent))
            run_blocking(store.write(VPath.parse(path), head.encode()))
        run_blocking(store.write(VPath.parse("/big.txt"), (head + "zebra\n" * 1000).encode()))
        run_blocking(store.write(VPath.parse("/bin.dat"), head.encode() + b"\x00\x01zebra"))
    ws.reindex()
    return ws.aio.with_principal(READER)


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("grep", {"pattern": "zebra"}),
    ("grep", {"pattern": "zebra", "glob": "*.md"}),
    ("grep", {"pattern": "zebra", "glob": "**/*.txt"}),
    ("grep", {"pattern": "z.bra", "regex": True, "path": "/docs/d"}),
    ("list_files", {"path": "/docs", "depth": 5}),
    ("list_files", {"path": "/docs/d"}),
    ("glob", {"pattern": "**"}),
    ("glob", {"pattern": "/docs/{a,b}.md"}),
    ("glob", {"pattern": "/docs/[a-z].md"}),
    ("glob", {"pattern": "**/*.md", "path": "/docs/d"}),
    ("read_file", {"path": "/docs/a.md", "offset": 2, "limit": 1}),
    ("read_file", {"path": "/docs/d"}),
    ("read_file", {"path": "/docs/big.txt"}),
    ("read_file", {"path": "/docs/a.md.labels.yaml"}),
    ("stat", {"path": "/docs/bin.dat"}),
    ("stat", {"path": "/docs/d"}),
    ("edit_file", {"path": "/docs/a.md", "old_string": "zebra", "new_string": "x"}),
    ("delete", {"path": "/docs/d", "recursive": True}),
    ("move", {"src": "/docs/a.md", "dst": "/docs/c.md"}),
    ("copy", {"src": "/docs/d", "dst": "/docs/c"}),
    ("search", {"query": "zebra", "related": True}),
    ("search", {"query": "zebra", "path": "/docs/d"}),
    ("access", {"path": "/docs/a.md", "operation": "read"}),
    ("discover", {"operation": "tree", "path": "/docs"}),
    ("discover", {"operation": "grep", "query": "zebra"}),
    ("discover", {"operation": "search", "query": "zebra", "follow_relations": True}),
    ("update", {"path": "/docs/d/new.md", "operation": "write", "content": "x"}),
]


@pytest.mark.parametrize("how", ["labels", "rule"])
@pytest.mark.parametrize(
    ("name", "args"), CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)]
)
def test_a_tool_call_answers_as_if_the_hidden_entries_were_not_there(
    how: str, name: str, args: dict[str, Any]
) -> None:
    outputs = []
    for hidden in (True, False):
        reader = _reader(hidden, how)
        style = "granular" if name in Toolset(reader).names else "intent"
        output = run_blocking(Toolset(reader, style=style).call(name, args))
        outputs.append(json.dumps(output, sort_keys=True, default=str))
    assert outputs[0] == outputs[1]
