"""What an index run tells a principal (its summary, its progress) is the same whether or not
files hidden from it exist, changed or went.

Red-team variants (area A) of the class *hidden documents on every read path* and *excessive
agency* (``docs/security.md``): ``rebuild_index`` and ``reindex`` read every file as the system,
for a principal granted ``reindex``; ``index_directory`` indexes what the principal sees. Two
worlds hold the same visible files; one also holds hidden files (classification, roles, a policy
rule, a blocked segment, undetermined labels, a file too odd to index), some of which change or
go between runs. The summaries (counts, outcomes, skipped files, the text) and the progress told
must match.
"""

from __future__ import annotations

from typing import Any

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Rule
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

OPERATOR = Principal.of("op", clearance="internal", roles=["ops"])

VISIBLE = {
    "/a.md": "# A\n\nalpha notes\n",
    "/sub/b.md": "# B\n\nbravo notes\n",
    "/sub/c.bin": "\x00\x01\x02 binary",
}
HIDDEN = {
    "/h1.md": "---\nclassification: restricted\n---\n# H1\n\nsecret one\n",
    "/sub/h2.md": "---\nroles: [hr]\n---\n# H2\n\nsecret two\n",
    "/denied/h3.md": "# H3\n\nsecret three\n",
    "/.git/h4.md": "# H4\n\nsecret four\n",
    "/sub/h5.md": "---\nroles: {a: 1}\n---\n# H5\n\nundetermined labels\n",
    "/sub/h6.bin": "---\nclassification: restricted\n---\n\x00\x01 hidden binary",
}
POLICY = Policy(
    rules=(
        Rule.deny(["read", "search", "list"], "/docs/denied/**", principals=["op"]),
        Rule.allow(["read", "write", "search", "list", "reindex"], "/**"),
    ),
    limits=FileLimits(blocked_segments=frozenset({".git"})),
)


async def _world(files: dict[str, str]) -> tuple[MemoryStore, Workspace]:
    store = MemoryStore()
    for raw, text in files.items():
        path = VPath.parse(raw)
        await store.makedirs(path.parent)
        await store.write(path, text.encode())
    owner = Workspace([Mount.of("/docs", store)], policy=POLICY, knowledge=Knowledge(MemoryIndex()))
    return store, owner.with_principal(OPERATOR)


def _said(summary: Any) -> tuple[Any, ...]:
    text = summary.format().rsplit(" in ", 1)[0]  # the seconds are the machine's
    return (
        summary.indexed,
        summary.chunks,
        dict(summary.skipped),
        summary.unchanged,
        summary.removed,
        dict(summary.outcomes),
        text,
    )


async def _run(ws: Workspace, task: str) -> tuple[tuple[Any, ...], list[tuple[int, int, str]]]:
    told: list[tuple[int, int, str]] = []

    def progress(done: int, total: int, path: str) -> None:
        told.append((done, total, path))

    if task == "rebuild":
        summary = await ws.rebuild_index(progress=progress)
    elif task == "reindex":
        summary = await ws.reindex(progress=progress)
    else:
        summary = await ws.index_directory("/docs", progress=progress)
    return _said(summary), told


async def test_index_runs_tell_a_principal_nothing_of_hidden_files() -> None:
    _, alone = await _world(VISIBLE)
    store, crowded = await _world({**VISIBLE, **HIDDEN})
    first = await _run(crowded, "rebuild")
    assert first[0][0] == 2 and first[1] == [(100, 100, "")]  # a.md and b.md, told as percent
    assert first == await _run(alone, "rebuild")
    for task in ("rebuild", "reindex", "directory", "reindex"):
        assert await _run(crowded, task) == await _run(alone, task), task
    # hidden files change and go behind the index; a visible one changes in both worlds
    await store.write(VPath.parse("/h1.md"), HIDDEN["/h1.md"].replace("one", "uno").encode())
    await store.delete(VPath.parse("/sub/h2.md"))
    await store.write(VPath.parse("/.git/h7.md"), b"# H7\n\nnew secret\n")
    for ws in (alone, crowded):
        await ws.write("/docs/a.md", "# A\n\nalpha notes, edited\n")
    assert await _run(crowded, "reindex") == await _run(alone, "reindex")
    assert await _run(crowded, "rebuild") == await _run(alone, "rebuild")
