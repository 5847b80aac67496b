"""A write to a name the local store has not looked up yet (issue 31).

The guard does not stat a name the kernel cannot answer from memory (a new file: looking
would cost a hop to a worker thread of its own); it writes it as a creation, which changes
nothing when something is there, and only then looks at what it found. These tests force that
path for names that *are* there (a file another program made, not yet in the kernel's cache,
is the real case) and hold it to the answers of the path that looks first: a file labelled
above the writer, or its sidecar, is refused in the same words and left as it was; a visible
file is replaced; a creation over anything fails; and a new file is made once, whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import (
    AlreadyExistsError,
    BastionError,
    LocalStore,
    Mount,
    Policy,
    Principal,
    Workspace,
)

OWNER = Principal.of("owner", clearance="restricted")
WRITER = Principal.of("writer", clearance="internal")
SECRET = "---\nclassification: restricted\n---\nthe classified body\n"


def _setup(root: Path) -> Workspace:
    root.mkdir(exist_ok=True)
    (root / "secret.md").write_text(SECRET, encoding="utf-8")
    (root / "side.md").write_text("plain\n", encoding="utf-8")
    (root / "side.md.labels.yaml").write_text("classification: restricted\n", encoding="utf-8")
    (root / "open.md").write_text("open\n", encoding="utf-8")
    return Workspace(
        [Mount.of("/d", LocalStore(root), scope="read_write")],
        policy=Policy.allow_all(),
        principal=WRITER,
    )


def _unseen(monkeypatch: pytest.MonkeyPatch, how: bool | None) -> None:
    """Every name is one the kernel cannot answer for (``None``) or says is not there."""
    monkeypatch.setattr(LocalStore, "cached_presence", lambda self, path: how)


async def _answer(ws: Workspace, path: str, mode: str) -> str:
    try:
        info = await ws.write(path, "mine\n", mode=mode)
    except BastionError as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"written {info.size}"


CASES = [
    ("/d/secret.md", "overwrite"),
    ("/d/secret.md", "create"),
    ("/d/side.md", "overwrite"),
    ("/d/side.md.labels.yaml", "overwrite"),
    ("/d/secret.md.labels.yaml", "overwrite"),
    ("/d/open.md", "create"),
]


@pytest.mark.parametrize(("path", "mode"), CASES)
@pytest.mark.parametrize("how", [None, False])
async def test_the_same_answer_as_a_write_that_looks_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, mode: str, how: bool | None
) -> None:
    looked = _setup(tmp_path / "looked")
    expected = await _answer(looked, path, mode)
    _unseen(monkeypatch, how)  # before the workspace is made: its guard asks once
    ws = _setup(tmp_path / "unseen")
    before = {p.name: p.read_bytes() for p in (tmp_path / "unseen").iterdir()}
    assert await _answer(ws, path, mode) == expected
    after = {p.name: p.read_bytes() for p in (tmp_path / "unseen").iterdir()}
    if not expected.startswith("written"):
        assert after == before  # refused: nothing changed, no temporary file left
    assert "classified" not in expected and "restricted" not in expected


async def test_a_hidden_file_is_refused_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _unseen(monkeypatch, None)
    ws = _setup(tmp_path)
    with pytest.raises(BastionError) as refused:
        await ws.write("/d/secret.md", "clobbered\n")
    assert not isinstance(refused.value, AlreadyExistsError)
    assert (tmp_path / "secret.md").read_text() == SECRET


async def test_a_visible_file_is_replaced_with_its_new_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _unseen(monkeypatch, None)
    ws = _setup(tmp_path)
    old = await ws.stat("/d/open.md")
    info = await ws.write("/d/open.md", "---\nclassification: internal\n---\nnew\n")
    assert info.version != old.version
    assert info.labels is not None and info.labels.classification == "internal"
    assert (tmp_path / "open.md").read_text().endswith("new\n")
    with pytest.raises(AlreadyExistsError):
        await ws.write("/d/open.md", "again\n", mode="create")


async def test_a_new_file_is_made_whole_with_its_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _unseen(monkeypatch, None)
    ws = _setup(tmp_path)
    info = await ws.write("/d/new.md", "---\nclassification: internal\n---\nbody\n")
    assert info.labels is not None and info.labels.classification == "internal"
    assert (await ws.read_text("/d/new.md")).endswith("body\n")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    owner = Workspace(ws.mounts, policy=Policy.allow_all(), principal=OWNER)
    written = await owner.write("/d/top.md", SECRET)
    assert written.labels is not None and written.labels.classification == "restricted"
    assert [e.path.name for e in await ws.list("/d")].count("top.md") == 0


HEADS = [
    b"plain text, no front matter\n",
    b"---\nclassification: confidential\ntags: [a]\n---\nbody\n",
    b"\xef\xbb\xbf---\nclassification: internal\n---\nbody\n",
    "---\nclassification: confidential\n---\nbody\n".encode("utf-16"),
    b"---\nnot: closed\n" + b"x" * 20,
    b"--",
]


@pytest.mark.parametrize("head", HEADS)
async def test_the_labels_a_write_tells_are_those_read_back(tmp_path: Path, head: bytes) -> None:
    # the labels of a written file are worked out from the bytes written, not read back:
    # they must be the labels a fresh reader works out from the file
    ws = Workspace(
        [Mount.of("/d", LocalStore(tmp_path), scope="read_write")],
        policy=Policy.allow_all(),
        principal=OWNER,
    )
    try:
        written = await ws.write("/d/f.md", head)
    except BastionError as exc:
        assert "labels could not be read" in str(exc)
        assert not (tmp_path / "f.md").exists()
        return
    fresh = Workspace(
        [Mount.of("/d", LocalStore(tmp_path))], policy=Policy.allow_all(), principal=OWNER
    )
    assert written.labels == (await fresh.stat("/d/f.md")).labels
