"""The tree grep and glob walk (``bastion.workspace.visible``), worked out once per call from
the store's listings, is the walk through the guard entry for entry: hidden files (labels,
policy, blocked segments, sidecars), folders of hidden entries only, a hidden mount and
mounts nested below a folder; and grep and glob answer as they did over that walk."""

from __future__ import annotations

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
from bastion.core.paths import VPath
from bastion.workspace.visible import visible_tree

SECRET = "---\nclassification: restricted\n---\nneedle TOPSECRET\n"
USER = Principal.of("user", clearance="internal")


async def world(store_kind: str, tmp_path: object) -> Workspace:
    def store() -> MemoryStore | LocalStore:
        if store_kind == "memory":
            return MemoryStore()
        root = tmp_path / f"s{len(made)}"  # type: ignore[operator]
        root.mkdir()
        made.append(root)
        return LocalStore(root)

    made: list[object] = []
    mounts = [
        Mount.of("/docs", store()),
        Mount.of("/docs/inner", store()),
        Mount.of("/deep/a/b", store()),
        Mount.of("/board", store(), labels=Labels(roles=frozenset({"board"}))),
        Mount.of("/drop", store(), scope="write_only"),
    ]
    policy = Policy(
        rules=(Rule.deny("*", "/docs/**/vault/**"), Rule.allow("*", "/**")),
        limits=FileLimits(blocked_segments=frozenset({".git"})),
    )
    admin = Workspace(
        mounts,
        policy=Policy.allow_all(),
        principal=Principal.of("admin", roles={"board"}, clearance="restricted"),
    )
    for path, text in {
        "/docs/open/a.txt": "needle a\n",
        "/docs/open/sub/b.md": "needle b\n",
        "/docs/mixed/c.txt": "needle c\n",
        "/docs/mixed/secret.md": SECRET,
        "/docs/alone/deep/secret.md": SECRET,
        "/docs/alone/deep2/x.txt": "needle x\n",
        "/docs/vault/plan.txt": "needle vault\n",
        "/docs/.git/config": "needle git\n",
        "/docs/side.txt": "needle side\n",
        "/docs/side.txt.labels.yaml": "classification: restricted\n",
        "/docs/inner/i.txt": "needle inner\n",
        "/docs/inner/only/secret.md": SECRET,
        "/deep/a/b/z.txt": "needle z\n",
        "/board/minutes.md": "needle board\n",
        "/drop/in.txt": "needle drop\n",
    }.items():
        await admin.write(path, text)
    await admin.mkdir("/docs/empty")
    return Workspace(admin.mounts, policy=policy, principal=USER)


@pytest.mark.parametrize("store_kind", ["memory", "local"])
@pytest.mark.parametrize("root", ["/", "/docs", "/docs/alone", "/deep", "/docs/inner"])
async def test_the_visible_tree_is_the_guarded_walk(
    store_kind: str, root: str, tmp_path: object
) -> None:
    ws = await world(store_kind, tmp_path)
    router = ws._router
    vp = VPath.parse(root)
    with ws._ctx.operation("grep", vp):
        through_guard = [e async for e in router.walk(vp, None)]
        tree = await visible_tree(router, vp)
    assert list(tree.walk(vp)) == through_guard
    names = {str(e.path) for e in through_guard}
    assert "/docs/open/sub/b.md" in names or not "/docs/open".startswith(root.rstrip("/"))
    assert not any("secret" in n or "vault" in n or ".git" in n or "board" in n for n in names)
    assert "/docs/alone/deep" not in names  # a folder of hidden entries only is not shown


@pytest.mark.parametrize("store_kind", ["memory", "local"])
async def test_grep_and_glob_see_only_what_the_principal_may(
    store_kind: str, tmp_path: object
) -> None:
    ws = await world(store_kind, tmp_path)
    found = await ws.grep("needle", "/")
    paths = [m.path for m in found.matches]
    assert paths == [
        "/deep/a/b/z.txt",
        "/docs/alone/deep2/x.txt",
        "/docs/inner/i.txt",
        "/docs/mixed/c.txt",
        "/docs/open/a.txt",
        "/docs/open/sub/b.md",
    ]
    assert found.skipped == ()
    globbed = [str(e.path) for e in await ws.glob("**/*")]
    assert "/docs/alone" in globbed and "/docs/empty" in globbed
    assert "/docs/alone/deep" not in globbed and "/docs/inner/only" not in globbed
    assert not any("secret" in g or "vault" in g or ".git" in g or "board" in g for g in globbed)
    assert [str(e.path) for e in await ws.glob("**/*.md")] == ["/docs/open/sub/b.md"]
