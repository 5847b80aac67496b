"""A glob's files that cannot match are skipped by their names alone (issue 31): the local store
tells a file from a folder by its directory entry and looks up only the folders, the files
whose names the pattern matches and the names that may be sidecars (``Store.list_sought``).
What is skipped must change no answer: a matching file's labels still come from its sidecar
whatever the sidecar's name looks like to the pattern (another case, a link, a folder), a
link or a name in another normalization form is never returned, and a tree with hidden
entries answers as the same tree without them."""

from __future__ import annotations

import os
import unicodedata
from contextlib import nullcontext
from pathlib import Path

import pytest

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import NotADirectoryError_, NotFoundError, ScopeError
from bastion.core.globs import Glob
from bastion.core.listings import Sought, held_listings
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.timeouts import TimedStore
from bastion.stores import _listing
from bastion.stores._fd import TEMP_PREFIX
from bastion.stores.folder import FolderStore

USER = Principal.of("user", clearance="internal")
ADMIN = Principal.of("admin", clearance="restricted")
RESTRICTED = "classification: restricted\n"
SEEN = {
    "/d/a.md": "a\n",
    "/d/sub/b.md": "b\n",
    "/d/sub/notes.txt": "n\n",
    "/d/sub/deeper/c.md": "c\n",
    "/d/labelled.md": "l\n",
    "/d/labelled.md.labels.yaml": "tags: [x]\n",
    # in another case: the sidecar where the disk folds case; here governed as one only
    "/d/sub/upper.md": "u\n",
    "/d/sub/upper.md.LABELS.YAML": RESTRICTED,
}
HIDDEN = {
    "/d/secret.md": "s\n",
    "/d/secret.md.labels.yaml": RESTRICTED,
    "/d/sub/deeper/front.md": "---\nclassification: restricted\n---\nf\n",
    "/d/only/s.md": "s\n",
    "/d/only/s.md.labels.yaml": RESTRICTED,  # /d/only: hidden entries only
}
PATTERNS = ("**/*.md", "**/*.yaml", "**/*", "*/*.md", "sub/**/[bc]*", "**/*.LABELS.YAML")


def _odd_layout(root: Path, outside: Path) -> None:
    """Names no glob may return, beside the files: links (to a file and a folder outside),
    a special file, a name in another normalization form, a store's temporary file, and a
    file whose sidecar is a link (its labels cannot be read: hidden)."""
    outside.mkdir(exist_ok=True)
    (outside / "leak.md").write_text("leak\n")
    os.symlink(outside / "leak.md", root / "link.md")
    os.symlink(outside, root / "linkdir.md")
    os.mkfifo(root / "fifo.md")
    (root / unicodedata.normalize("NFD", "café.md")).write_text("nfd\n")
    (root / f"{TEMP_PREFIX}x.md").write_text("tmp\n")
    (root / "sub" / "linked.md").write_text("linked\n")
    os.symlink(outside / "leak.md", root / "sub" / "linked.md.labels.yaml")


async def _world(tmp_path: Path, files: dict[str, str], name: str) -> Workspace:
    root = tmp_path / name
    root.mkdir()
    admin = Workspace(
        [Mount.of("/d", LocalStore(root))], policy=Policy.allow_all(), principal=ADMIN
    )
    for path, text in files.items():
        await admin.write(path, text)
    _odd_layout(root, tmp_path / "outside")
    return Workspace(admin.mounts, policy=Policy.allow_all(), principal=USER)


async def _walked(ws: Workspace, pattern: str) -> list[str]:
    """The walk through the guard (``Router.children``, whole listings), kept when it matches."""
    compiled = Glob.compile(f"/d/{pattern}")
    found: list[FileInfo] = []
    with ws._ctx.operation("glob", VPath.parse("/d")):
        stack = [compiled.literal_prefix]
        while stack:
            try:
                kids = await ws._router.children(stack.pop())
            except (ScopeError, NotFoundError, NotADirectoryError_):
                continue
            for kid in kids:
                if compiled.matches(kid.path):
                    found.append(kid)
                if kid.is_dir and compiled.could_match_below(kid.path):
                    stack.append(kid.path)
    return sorted(str(i.path) for i in found)


@pytest.mark.parametrize("pattern", PATTERNS)
async def test_glob_answers_as_whole_listings_do(tmp_path: Path, pattern: str) -> None:
    ws = await _world(tmp_path, SEEN | HIDDEN, "both")
    got = [str(i.path) for i in await ws.glob(pattern, path="/d")]
    assert got == await _walked(ws, pattern)
    for path in HIDDEN:
        assert path not in got
    for leaked in ("/d/link.md", "/d/linkdir.md", "/d/fifo.md", "/d/sub/linked.md"):
        assert leaked not in got
    assert not any("caf" in p or TEMP_PREFIX in p for p in got)


@pytest.mark.parametrize("pattern", PATTERNS)
async def test_hidden_matches_answer_as_absent_ones(tmp_path: Path, pattern: str) -> None:
    with_hidden = await _world(tmp_path, SEEN | HIDDEN, "with")
    without = await _world(tmp_path, SEEN, "without")
    got = [(str(i.path), i.kind, i.size) for i in await with_hidden.glob(pattern, path="/d")]
    want = [(str(i.path), i.kind, i.size) for i in await without.glob(pattern, path="/d")]
    assert got == want


async def test_the_store_looks_up_only_what_the_walk_may_want(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files whose names the pattern refuses get no lookup and no entry; folders, matches and
    the names that may be sidecars do; the odd names are all there."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    for name in ("a.md", "b.txt", "c.txt", "a.md.labels.yaml", "x.TXT.LABELS.YAML"):
        (root / name).write_text("x\n")
    _odd_layout(root, tmp_path / "outside")
    built: list[str] = []
    info_of = _listing.info_of

    def counted(path: VPath, st: os.stat_result) -> FileInfo:
        built.append(path.name)
        return info_of(path, st)

    monkeypatch.setattr(_listing, "info_of", counted)
    store = LocalStore(root)
    sought = Sought((Glob.compile("/*.md").name_pattern,), lambda _: True)  # type: ignore[arg-type]
    got = await store.list_sought(VPath.ROOT, sought)
    assert sorted(e.path.name for e in got) == ["a.md", "sub"]
    assert sorted(built) == ["a.md", "sub"]
    whole = await store.odd_names(VPath.ROOT)
    with held_listings():
        await store.list_sought(VPath.ROOT, sought)
        built.clear()
        assert await store.odd_names(VPath.ROOT) == whole  # from the same pass
        assert built == []
    assert whole == frozenset({"link.md", "linkdir.md", "fifo.md", "café.md"})


@pytest.mark.parametrize("kind", ["local", "memory"])
async def test_every_store_gives_the_folders_and_the_matches(tmp_path: Path, kind: str) -> None:
    """``list_sought`` through a folder view and the time limit: at least the folders and the
    files the wish keeps, each as ``list`` gives it (a store may give more)."""
    backing = LocalStore(tmp_path) if kind == "local" else MemoryStore()
    for name in ("v/a.md", "v/b.txt", "v/sub/c.md"):
        await backing.makedirs(VPath.parse("/" + name).parent)
        await backing.write(VPath.parse("/" + name), b"x\n")
    store = TimedStore(FolderStore(backing, VPath.parse("/v")), 30.0, "/v")
    sought = Sought((Glob.compile("/*.md").name_pattern,), lambda _: True)  # type: ignore[arg-type]
    whole = {e.path: e for e in await store.list(VPath.ROOT)}
    for held in (False, True):
        with held_listings() if held else nullcontext():
            got = await store.list_sought(VPath.ROOT, sought)
        assert {e.path for e in got} >= {VPath.parse("/a.md"), VPath.parse("/sub")}
        assert all(whole[e.path] == e for e in got)
