"""Listing and glob with each folder listed once per call (issue 31): ``glob`` labels and keeps
only the entries its pattern may return, ``list`` and ``glob`` hold each folder's listing for
the call. The answers are those of the walk through the guard, entry for entry and in walk
order (so a ``limit`` keeps the same entries): hidden files (labels, policy, blocked segments,
sidecars) are never returned, a folder of hidden entries only is not returned even when its
name matches, an empty one is; and a tree with hidden entries answers as the same tree
without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import (
    FileLimits,
    Labels,
    LocalStore,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Rule,
    Workspace,
)
from bastion.core.errors import NotADirectoryError_, NotFoundError, ScopeError
from bastion.core.globs import Glob
from bastion.core.paths import VPath

SECRET = "---\nclassification: restricted\n---\nsecret\n"
USER = Principal.of("user", clearance="internal")
ADMIN = Principal.of("admin", roles={"board"}, clearance="restricted")
POLICY = Policy(
    rules=(Rule.deny("*", "/docs/**/vault/**"), Rule.allow("*", "/**")),
    limits=FileLimits(blocked_segments=frozenset({".git"})),
)
SEEN = {
    "/docs/open/a.txt": "a\n",
    "/docs/open/sub/b.md": "b\n",
    "/docs/open/sub/conf.yaml": "k: v\n",
    "/docs/mixed/c.txt": "c\n",
    "/docs/alone/deep2/x.yaml": "x: 1\n",
    "/docs/side.md": "side\n",
    "/docs/inner/i.yaml": "i: 1\n",
    "/deep/a/b/z.md": "z\n",
    "/docs/conf/real.yaml": "r: 1\n",
}
HIDDEN = {
    "/docs/mixed/secret.md": SECRET,
    "/docs/alone/deep/secret.md": SECRET,  # /docs/alone/deep: hidden entries only
    "/docs/vault/plan.yaml": "p: 1\n",
    "/docs/.git/config.yaml": "g: 1\n",
    "/docs/hid.yaml": "h: 1\n",
    "/docs/hid.yaml.labels.yaml": "classification: restricted\n",
    "/docs/inner/only/secret.md": SECRET,
    "/docs/conf.d/secret.yaml": SECRET,  # a folder whose name matches "conf*": hidden
    "/board/minutes.md": "board\n",
    "/drop/in.yaml": "drop\n",
}
PATTERNS = (
    "**/*.yaml",
    "**/*.md",
    "**/*",
    "**/conf*",
    "**/deep*",
    "docs/**",
    "**/sub/*",
    "*/*",
    "docs/*/*.yaml",
    "**/[a-c]*",
)


async def world(kind: str, tmp_path: Path, files: dict[str, str]) -> Workspace:
    made: list[Path] = []

    def store() -> MemoryStore | LocalStore:
        if kind == "memory":
            return MemoryStore()
        root = tmp_path / f"s{len(made)}"
        root.mkdir(parents=True)
        made.append(root)
        return LocalStore(root)

    mounts = [
        Mount.of("/docs", store()),
        Mount.of("/docs/inner", store()),
        Mount.of("/deep/a/b", store()),
        Mount.of("/board", store(), labels=Labels(roles=frozenset({"board"}))),
        Mount.of("/drop", store(), scope="write_only"),
    ]
    admin = Workspace(mounts, policy=Policy.allow_all(), principal=ADMIN)
    for path, text in files.items():
        await admin.write(path, text)
    await admin.mkdir("/docs/empty")
    await admin.mkdir("/docs/conf.empty")
    return Workspace(admin.mounts, policy=POLICY, principal=USER)


def shown(infos: list) -> list[tuple[object, ...]]:  # type: ignore[type-arg]
    return [(str(i.path), i.kind, i.size, i.is_dir or i.version is not None) for i in infos]


async def walked_and_matched(
    ws: Workspace, pattern: str, root: str, limit: int | None = None
) -> list[tuple[object, ...]]:
    """What the walk through the guard gives for ``pattern``: every entry under the pattern's
    start, one folder at a time through ``Router.children``, kept when it matches (the first
    ``limit`` met), in name order."""
    full = pattern if pattern.startswith("/") else f"{root.rstrip('/')}/{pattern}"
    compiled = Glob.compile(full)
    start = compiled.literal_prefix
    router = ws._router
    found = []
    with ws._ctx.operation("glob", VPath.parse(root)):
        stack = [start]
        while stack:
            try:
                kids = await router.children(stack.pop())
            except (ScopeError, NotFoundError, NotADirectoryError_):  # the walk skips it
                continue
            for kid in kids:
                if compiled.matches(kid.path):
                    found.append(kid)
                if kid.is_dir and compiled.could_match_below(kid.path):
                    stack.append(kid.path)
    return shown(sorted(found[:limit], key=lambda i: i.path.parts))


@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_glob_answers_as_the_walk_through_the_guard(kind: str, tmp_path: Path) -> None:
    ws = await world(kind, tmp_path, SEEN | HIDDEN)
    for root in ("/", "/docs"):
        for pattern in PATTERNS:
            got = shown(await ws.glob(pattern, path=root))
            assert got == await walked_and_matched(ws, pattern, root), (root, pattern)
    everything = {str(e.path) for e in await ws.glob("**/*")}
    assert {"/docs/empty", "/docs/conf.empty", "/docs/alone"} <= everything
    assert not {"/docs/conf.d", "/docs/alone/deep", "/docs/inner/only"} & everything
    assert not any(n in p for p in everything for n in ("secret", "vault", ".git", "hid", "board"))
    assert [str(e.path) for e in await ws.glob("**/conf*")] == [
        "/docs/conf",
        "/docs/conf.empty",
        "/docs/open/sub/conf.yaml",
    ]


@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_hidden_entries_answer_as_absent_ones(kind: str, tmp_path: Path) -> None:
    with_hidden = await world(kind, tmp_path / "a", SEEN | HIDDEN)
    without = await world(kind, tmp_path / "b", SEEN)
    for pattern in PATTERNS:
        for limit in (None, 1, 3):
            a = await with_hidden.glob(pattern, limit=limit)
            b = await without.glob(pattern, limit=limit)
            assert [(str(e.path), e.kind, e.size) for e in a] == [
                (str(e.path), e.kind, e.size) for e in b
            ], (pattern, limit)
        a_list = await with_hidden.list("/docs", recursive=True)
        b_list = await without.list("/docs", recursive=True)
        assert [str(e.path) for e in a_list] == [str(e.path) for e in b_list]


@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_a_limit_keeps_the_entries_the_walk_finds_first(kind: str, tmp_path: Path) -> None:
    ws = await world(kind, tmp_path, SEEN | HIDDEN)
    for pattern in PATTERNS:
        every = await ws.glob(pattern)
        for limit in range(1, len(every) + 1):
            got = shown(await ws.glob(pattern, limit=limit))
            assert got == await walked_and_matched(ws, pattern, "/", limit), (pattern, limit)
    # depth first, the folder listed last gone into first: the first two .yaml files it meets
    first = await ws.glob("**/*.yaml", limit=2)
    assert [str(e.path) for e in first] == ["/docs/inner/i.yaml", "/docs/open/sub/conf.yaml"]


async def test_each_call_lists_afresh(tmp_path: Path) -> None:
    """Listings are held for one call only: a file made between two calls is in the second."""
    ws = Workspace(
        [Mount.of("/d", LocalStore(tmp_path))], policy=Policy.allow_all(), principal=ADMIN
    )
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a.yaml").write_text("a: 1\n")
    assert [str(e.path) for e in await ws.list("/d/f")] == ["/d/f/a.yaml"]
    assert [str(e.path) for e in await ws.glob("**/*.yaml", path="/d")] == ["/d/f/a.yaml"]
    (tmp_path / "f" / "b.yaml").write_text("b: 1\n")
    (tmp_path / "f" / "b.yaml.labels.yaml").write_text("classification: restricted\n")
    reader = Workspace(ws.mounts, policy=Policy.allow_all(), principal=USER)
    assert [str(e.path) for e in await reader.list("/d/f")] == ["/d/f/a.yaml"]
    assert [str(e.path) for e in await ws.list("/d/f")] == [
        "/d/f/a.yaml",
        "/d/f/b.yaml",
        "/d/f/b.yaml.labels.yaml",
    ]
    assert [str(e.path) for e in await reader.glob("**/*.yaml", path="/d")] == ["/d/f/a.yaml"]
