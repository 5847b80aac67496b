"""``reindex``: a write that reached the store but not the index (a crash between the two, a
process writing without this index) is found and repaired; nothing unchanged is redone."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.cli import main
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge

P = VPath.parse
READER = Principal.of("reader", clearance="internal")


def _paths(result) -> list[str]:
    return sorted(h.path for h in result.hits)


async def test_writes_behind_the_index_are_repaired() -> None:
    store = MemoryStore()
    ws = Workspace([Mount.of("/docs", store)], policy=Policy.allow_all(), knowledge=Knowledge())
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    await ws.write("/docs/b.md", "# B\n\nbravo notes\n")
    # Another writer goes straight to the store: the index does not know.
    await store.write(P("/c.md"), b"# C\n\ncharlie notes\n")
    await store.write(P("/a.md"), b"# A\n\nalpha rewritten with delta\n")
    await store.delete(P("/b.md"))
    assert _paths(await ws.search("charlie", mode="bm25")) == []  # not indexed yet
    # A hit is checked against its file: a gone file is dropped, a changed one indexed again.
    assert _paths(await ws.search("bravo", mode="bm25")) == []
    assert _paths(await ws.search("notes", mode="bm25")) == []
    assert _paths(await ws.search("delta", mode="bm25")) == ["/docs/a.md"]

    summary = await ws.reindex()
    assert (summary.indexed, summary.removed, summary.unchanged) == (1, 0, 1)
    assert _paths(await ws.search("charlie", mode="bm25")) == ["/docs/c.md"]
    assert _paths(await ws.search("delta", mode="bm25")) == ["/docs/a.md"]
    assert _paths(await ws.search("bravo", mode="bm25")) == []

    again = await ws.reindex()
    assert (again.indexed, again.removed, again.unchanged) == (0, 0, 2)


async def test_a_sidecar_written_behind_the_index_relabels_on_reindex() -> None:
    store = MemoryStore()
    admin = Principal.of("admin", clearance="restricted")
    ws = Workspace(
        [Mount.of("/docs", store)],
        policy=Policy.allow_all(),
        knowledge=Knowledge(),
        principal=admin,
    )
    await ws.write("/docs/plan.txt", "launch plan for orbit\n")
    reader = ws.with_principal(READER)
    assert _paths(await reader.search("orbit", mode="bm25")) == ["/docs/plan.txt"]
    await store.write(P("/plan.txt.labels.yaml"), b"classification: confidential\n")
    summary = await ws.reindex()
    assert summary.indexed == 1
    assert _paths(await reader.search("orbit", mode="bm25")) == []
    assert _paths(await ws.search("orbit", mode="bm25")) == ["/docs/plan.txt"]


async def test_a_new_process_repairs_a_persistent_index(tmp_path: Path) -> None:
    root, index = tmp_path / "files", tmp_path / "index"
    root.mkdir()

    def open_ws() -> Workspace:
        knowledge = Knowledge.open(index, embedder=None)
        return Workspace(
            [Mount.of("/", LocalStore(root))], policy=Policy.allow_all(), knowledge=knowledge
        )

    first = open_ws()
    for name in ("one", "two", "three"):
        await first.write(f"/{name}.md", f"# {name}\n\n{name} quarterly figures\n")
    first._link().knowledge.close()
    # The process "crashed" after these reached the disk but before the index heard of them.
    (root / "two.md").write_text("# two\n\ntwo revised figures with zulu\n", encoding="utf-8")
    (root / "four.md").write_text("# four\n\nfour new figures\n", encoding="utf-8")
    (root / "three.md").unlink()

    second = open_ws()
    summary = await second.reindex()
    assert (summary.indexed, summary.removed, summary.unchanged) == (2, 1, 1)
    assert _paths(await second.search("zulu", mode="bm25")) == ["/two.md"]
    assert _paths(await second.search("figures", mode="bm25", k=10)) == [
        "/four.md",
        "/one.md",
        "/two.md",
    ]


def test_cli_index_is_incremental_and_reindex_repairs(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nbravo\n", encoding="utf-8")
    runner = CliRunner()
    args = ["--index", str(index), "--keyword-only"]
    first = runner.invoke(main, ["index", str(docs), *args])
    assert first.exit_code == 0, first.output
    assert "indexed 2 files" in first.output
    second = runner.invoke(main, ["index", str(docs), *args])
    assert "indexed 0 files" in second.output and "unchanged 2" in second.output
    (docs / "b.md").unlink()
    repaired = runner.invoke(main, ["reindex", "--index", str(index)])
    assert repaired.exit_code == 0, repaired.output
    assert "removed 1" in repaired.output
    missing = runner.invoke(main, ["reindex", "--index", str(tmp_path / "none")])
    assert missing.exit_code != 0 and "run `bastion index PATH` first" in missing.output


async def test_the_owner_hears_of_every_file_a_principal_only_of_what_it_may_read() -> None:
    store = MemoryStore()
    owner = Workspace(
        [Mount.of("/docs", store)],
        policy=Policy(rules=[Rule.allow(["read", "search", "reindex"], "/**")]),
        knowledge=Knowledge(),
    )
    await store.write(P("/open.md"), b"# Open\n\nnotes for everyone\n")
    await store.write(P("/secret.md"), b"---\nclassification: restricted\n---\n# S\n\nplans\n")
    reader = owner.with_principal(READER)
    told = await reader.reindex()
    assert (told.indexed, sorted(told.outcomes)) == (1, ["/docs/open.md"])
    await store.write(P("/secret.md"), b"---\nclassification: restricted\n---\n# S\n\nnew plans\n")
    whole = await owner.reindex()
    assert (whole.indexed, sorted(whole.outcomes)) == (1, ["/docs/open.md", "/docs/secret.md"])


async def test_an_operators_run_tells_its_progress_to_the_owner_only() -> None:
    store = MemoryStore()
    owner = Workspace(
        [Mount.of("/docs", store)],
        policy=Policy(rules=[Rule.allow(["read", "search", "reindex"], "/**")]),
        knowledge=Knowledge(),
    )
    await store.write(P("/open.md"), b"# Open\n\nnotes\n")
    await store.write(P("/secret.md"), b"---\nclassification: restricted\n---\n# S\n\nplans\n")
    heard: list[tuple[int, int, str]] = []
    await owner.with_principal(READER).rebuild_index(progress=lambda *a: heard.append(a))
    assert heard == [(100, 100, "")]  # a share: the walk counted a file the reader may not see
    heard.clear()
    await owner.rebuild_index(progress=lambda *a: heard.append(a))
    assert heard[-1][:2] == (2, 2) and heard[-1][2].startswith("/docs/")
