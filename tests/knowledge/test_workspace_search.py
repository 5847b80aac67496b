"""Workspace.search: the index follows the files, and nothing leaves that the asker may not read.

Fakes for our own ports only (the hashing embedder); the index is the real in-memory one, and
the LanceDB-backed one in the persistence tests.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bastion import (
    ConfigurationError,
    FileLimits,
    InvalidPathError,
    Labels,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Rule,
    SyncWorkspace,
    Workspace,
)
from bastion.knowledge.embedders import HashingEmbedder
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

DOCS = {
    "/docs/deploy.md": "# Deploys\n\nWe deploy the billing service on Tuesdays with a canary.\n",
    "/docs/oncall.md": "# On-call\n\nThe pager rotates weekly; billing alerts page the owner.\n",
    "/docs/hr/salaries.md": "---\nclassification: confidential\n---\n# Salaries\n\nBilling "
    "team salaries are reviewed in March.\n",
    "/docs/eng.md": "---\nroles: [engineer]\n---\n# Engineering\n\nBilling migrations run at night.\n",
}


def _ws(policy: Policy | None = None, *, dense: bool = True) -> SyncWorkspace:
    knowledge = Knowledge(MemoryIndex(), embedder=HashingEmbedder() if dense else None)
    ws = Workspace(
        [
            Mount.of("/docs", MemoryStore(), "read_write"),
            Mount.of("/drop", MemoryStore(), "write_only"),
        ],
        policy=policy or Policy.allow_all(),
        knowledge=knowledge,
        principal=Principal.of("admin", roles={"engineer"}, clearance="restricted"),
    ).sync()
    for path, text in DOCS.items():
        ws.write(path, text)
    return ws


def _paths(result) -> list[str]:
    return [h.path for h in result.hits]


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_every_mode_finds_a_written_file(mode: str) -> None:
    ws = _ws()
    result = ws.search("canary deploy Tuesdays", mode=mode, k=2)
    assert _paths(result)[0] == "/docs/deploy.md"
    hit = result.hits[0]
    assert (hit.start_line, hit.end_line) == (1, 3)
    assert "canary" in hit.snippet
    assert hit.labels.classification == "public"


def test_hits_point_at_file_lines_after_front_matter() -> None:
    ws = _ws()
    [hit] = ws.search("salaries March", mode="bm25", k=1).hits
    assert hit.path == "/docs/hr/salaries.md"
    assert (hit.start_line, hit.end_line) == (4, 6)
    assert ws.read_text(hit.path, offset=hit.start_line - 1, limit=1) == "# Salaries\n"


def test_index_follows_edit_append_move_copy_and_delete() -> None:
    ws = _ws()
    ws.edit("/docs/deploy.md", "canary", "blue-green rollout")
    assert ws.search("canary", mode="bm25").hits == ()
    assert _paths(ws.search("rollout", mode="bm25")) == ["/docs/deploy.md"]
    ws.append("/docs/oncall.md", "\nEscalate to the duty manager.\n")
    assert _paths(ws.search("escalate duty manager", mode="bm25")) == ["/docs/oncall.md"]
    ws.move("/docs/oncall.md", "/docs/team/oncall.md")
    assert _paths(ws.search("escalate duty manager", mode="bm25")) == ["/docs/team/oncall.md"]
    ws.copy("/docs/team", "/docs/copy")
    found = set(_paths(ws.search("escalate duty manager", mode="bm25")))
    assert found == {"/docs/team/oncall.md", "/docs/copy/oncall.md"}
    ws.delete("/docs/team", recursive=True)
    assert _paths(ws.search("escalate duty manager", mode="bm25")) == ["/docs/copy/oncall.md"]
    ws.delete("/docs/deploy.md")
    assert ws.search("rollout", mode="bm25").hits == ()


def test_a_file_that_cannot_be_parsed_is_not_searchable_and_the_reason_is_kept() -> None:
    ws = _ws()
    ws.write("/docs/broken.md", "# Broken\n\nfine words here\n")
    assert _paths(ws.search("fine words", mode="bm25")) == ["/docs/broken.md"]
    ws.write("/docs/broken.md", b"%PDF-1.7 garbage that is not a pdf")
    assert ws.search("fine words", mode="bm25").hits == ()
    assert "/docs/broken.md" in ws.aio._knowledge.failures  # type: ignore[union-attr]


def test_binary_files_are_not_indexed_and_write_only_mounts_never_are() -> None:
    ws = _ws()
    ws.write("/docs/logo.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    ws.write("/drop/secret.md", "# Drop\n\nbilling drop box content\n")
    summary = ws.index_directory("/docs")
    assert "/docs/logo.png" in summary.skipped
    assert all(not p.startswith("/drop") for p in _paths(ws.search("billing", k=50)))


def test_clearance_roles_and_policy_filter_before_ranking() -> None:
    policy = Policy(rules=(Rule.deny("read", "/docs/oncall.md"), Rule.allow("*", "/**")))
    ws = _ws(policy)
    viewer = ws.with_principal(Principal.of("viewer", clearance="internal"))
    for mode in ("bm25", "vector", "hybrid"):
        paths = _paths(viewer.search("billing", mode=mode, k=10))
        assert paths == ["/docs/deploy.md"], mode  # hr: confidential; eng: role; oncall: policy
    admin = _paths(ws.search("billing", mode="bm25", k=10))
    assert set(admin) == {"/docs/deploy.md", "/docs/hr/salaries.md", "/docs/eng.md"}


def test_k_results_are_k_authorized_results() -> None:
    ws = _ws()
    for i in range(30):
        secret = "---\nclassification: restricted\n---\n" if i % 3 else ""
        ws.write(f"/docs/bulk/{i}.md", f"{secret}# Note {i}\n\nbilling ledger entry {i}\n")
    viewer = ws.with_principal(Principal.of("viewer", clearance="internal"))
    hits = viewer.search("billing ledger entry", mode="bm25", k=10, path="/docs/bulk").hits
    assert (
        len(hits) == 10
    )  # ten public notes exist; the twenty restricted ones never crowd them out
    assert all(h.labels.classification == "public" for h in hits)


def test_other_tenants_documents_are_invisible() -> None:
    knowledge = Knowledge(MemoryIndex())
    acme = Mount.of("/acme", MemoryStore(), labels=Labels(tenant="acme"))
    globex = Mount.of("/globex", MemoryStore(), labels=Labels(tenant="globex"))
    ws = Workspace([acme, globex], policy=Policy.allow_all(), knowledge=knowledge).sync()
    for tenant in ("acme", "globex"):
        writer = ws.with_principal(Principal.of("w", tenant=tenant))
        writer.write(f"/{tenant}/plan.md", "# Plan\n\nquarterly merger plan\n")
    for tenant in ("acme", "globex"):
        view = ws.with_principal(Principal.of("u", tenant=tenant))
        assert _paths(view.search("merger plan", mode="bm25")) == [f"/{tenant}/plan.md"]


def test_front_matter_cannot_declassify_below_the_mount() -> None:
    knowledge = Knowledge(MemoryIndex())
    vault = Mount.of("/vault", MemoryStore(), labels=Labels(classification="confidential"))
    ws = Workspace([vault], policy=Policy.allow_all(), knowledge=knowledge).sync()
    writer = ws.with_principal(Principal.of("w", clearance="confidential"))
    writer.write("/vault/leak.md", "---\nclassification: public\n---\n# Leak\n\nthe launch codes\n")
    public = ws.with_principal(Principal.of("p", clearance="public"))
    assert public.search("launch codes", mode="bm25").hits == ()


def test_blocked_segments_are_never_searchable() -> None:
    policy = Policy.allow_all(limits=FileLimits(blocked_segments=frozenset({".git"})))
    knowledge = Knowledge(MemoryIndex())
    store = MemoryStore()
    raw = Workspace([Mount.of("/repo", store)], policy=Policy.allow_all()).sync()
    raw.write("/repo/.git/config.txt", "token ghp_secret remote origin\n")
    raw.write("/repo/readme.md", "# Readme\n\nremote origin is documented here\n")
    ws = Workspace([Mount.of("/repo", store)], policy=policy, knowledge=knowledge).sync()
    ws.rebuild_index()
    assert _paths(ws.search("remote origin", mode="bm25")) == ["/repo/readme.md"]


def test_filters_path_tags_section_and_dates() -> None:
    ws = _ws()
    ws.write(
        "/docs/a.md",
        "---\ntags: [ops]\ndate: 2024-03-05\n---\n# Runbook\n\n## Restart\n\nrestart billing\n",
    )
    ws.write("/docs/b.md", "---\ndate: 2025-01-01\n---\n# Other\n\n## Restart\n\nrestart billing\n")
    assert _paths(ws.search("restart billing", mode="bm25", filter={"tags": ["ops"]})) == [
        "/docs/a.md"
    ]
    dated = ws.search("restart", mode="bm25", filter={"date_from": "2025-01-01"})
    assert _paths(dated) == ["/docs/b.md"]
    assert _paths(ws.search("restart", mode="bm25", filter={"section": "runbook"})) == [
        "/docs/a.md"
    ]
    assert ws.search("billing", mode="bm25", path="/docs/hr").hits[0].path == "/docs/hr/salaries.md"
    with pytest.raises(ConfigurationError, match="unknown search filter"):
        ws.search("x", filter={"owner": "me"})


def test_related_documents_are_added_flagged_and_still_guarded() -> None:
    ws = _ws()
    ws.write(
        "/docs/index.md", "# Index\n\nsee [deploys](deploy.md) and [pay](hr/salaries.md)\nzebra\n"
    )
    viewer = ws.with_principal(Principal.of("viewer", clearance="internal"))
    hits = viewer.search("zebra", mode="bm25", related=True).hits
    assert [h.path for h in hits] == ["/docs/index.md", "/docs/deploy.md"]
    assert hits[1].related_to == "/docs/index.md"


def test_keyword_only_index_refuses_vector_modes_plainly() -> None:
    ws = _ws(dense=False)
    with pytest.raises(ConfigurationError, match="needs an embedder"):
        ws.search("billing", mode="vector")
    with pytest.raises(ConfigurationError, match="unknown search mode"):
        ws.search("billing", mode="fuzzy")


def test_search_without_an_index_says_what_to_do() -> None:
    ws = Workspace([Mount.of("/x", MemoryStore())], policy=Policy.allow_all()).sync()
    with pytest.raises(ConfigurationError, match="no knowledge index"):
        ws.search("anything")


def test_randomized_principals_never_see_an_unauthorized_hit() -> None:
    rng = random.Random(7)
    levels = ["public", "internal", "confidential", "restricted"]
    roles = ["eng", "fin", "hr"]
    ws = _ws()
    truth: dict[str, tuple[str, frozenset[str]]] = {}
    for i in range(60):
        level = rng.choice(levels)
        allowed = frozenset(rng.sample(roles, rng.randint(0, 2)))
        fm = f"---\nclassification: {level}\nroles: [{', '.join(sorted(allowed))}]\n---\n"
        ws.write(f"/docs/r/{i}.md", f"{fm}# Doc {i}\n\nshared words alpha beta gamma {i}\n")
        truth[f"/docs/r/{i}.md"] = (level, allowed)
    for _ in range(40):
        clearance = rng.choice(levels)
        mine = frozenset(rng.sample(roles, rng.randint(0, 2)))
        view = ws.with_principal(Principal.of("p", roles=mine, clearance=clearance))
        for mode in ("bm25", "vector", "hybrid"):
            hits = view.search("shared words alpha", mode=mode, k=60, path="/docs/r").hits
            expected = {
                p
                for p, (lvl, allowed) in truth.items()
                if levels.index(lvl) <= levels.index(clearance) and (not allowed or allowed & mine)
            }
            got = {h.path for h in hits}
            assert got <= expected, (clearance, mine, mode)
            if mode == "bm25":
                assert got == expected


def test_persistent_index_survives_a_restart_and_rebuild_recovers_a_lost_one(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    mounts = [Mount.of("/docs", store)]
    first = Knowledge.open(tmp_path / "idx", embedder=HashingEmbedder())
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=first).sync()
    ws.write("/docs/a.md", "# A\n\npersistent kiwi notes\n")
    first.close()
    second = Knowledge.open(tmp_path / "idx", embedder=HashingEmbedder())
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=second).sync()
    assert _paths(ws.search("kiwi", mode="hybrid")) == ["/docs/a.md"]
    lost = Knowledge.open(tmp_path / "other", embedder=HashingEmbedder())
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=lost).sync()
    assert ws.search("kiwi", mode="bm25").hits == ()
    summary = ws.rebuild_index()
    assert summary.indexed == 1
    assert _paths(ws.search("kiwi", mode="bm25")) == ["/docs/a.md"]
    with pytest.raises(ConfigurationError, match="built differently"):
        Knowledge.open(tmp_path / "idx", embedder=HashingEmbedder(dim=64))


def test_a_malformed_search_path_is_refused_and_audited() -> None:
    ws = _ws()
    with pytest.raises(InvalidPathError):
        ws.search("billing", path="/docs/../../etc")
    last = ws.audit.records[-1]  # type: ignore[attr-defined]
    assert (last.operation, last.allowed) == ("search", False)


def test_search_modes_say_what_the_index_offers() -> None:
    assert _ws().search_modes == ("bm25", "vector", "hybrid")
    assert _ws(dense=False).search_modes == ("bm25",)
    bare = Workspace([Mount.of("/docs", MemoryStore())], policy=Policy.allow_all())
    assert bare.search_modes == () and not bare.has_index
