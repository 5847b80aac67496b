"""Labels from front matter and sidecars hold however they are spelt, and a refused relabelling
changes nothing. Issue 10, tried again as an attacker would: more variants of each leak class
than the issue lists (front-matter encodings, sidecars of sidecars, sidecar names made folders,
refused relabellings that leave files behind), each through the workspace, the way an agent
reaches it.

Every test builds a real workspace (memory stores, the in-memory index) with an owner who writes
the documents and a principal with fewer rights who tries to learn or change what it may not.
"""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path

import pytest

from bastion import (
    LabelError,
    Labels,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    SyncWorkspace,
    Workspace,
)
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.labels.frontmatter import HEAD_BYTES
from bastion.stores.local import LocalStore

OWNER = Principal.of("owner", roles={"hr"}, clearance="restricted")
WRITER = Principal.of("writer", clearance="confidential")
"""May see and write confidential documents; holds no ``label`` permission."""
READER = Principal.of("reader", clearance="internal")
SECRET = "---\nclassification: confidential\n---\nzebra secret\n"


@pytest.fixture
def ws() -> SyncWorkspace:
    policy = Policy(
        rules=(
            Rule.allow(("label", "reindex"), "/**", principals=["owner"]),
            Rule.allow("*", "/**"),
        )
    )
    return Workspace(
        [Mount.of("/docs", MemoryStore(), labels=Labels(classification="internal"))],
        policy=policy,
        knowledge=Knowledge(MemoryIndex()),
        principal=OWNER,
    ).sync()


def _as(ws: SyncWorkspace, who: Principal) -> SyncWorkspace:
    return ws.aio.with_principal(who).sync()


def _plant(ws: SyncWorkspace, path: str, data: bytes) -> None:
    """Put bytes in the mount's store as another program would (not through the workspace)."""
    store = ws.aio.mounts[0].store
    while not isinstance(store, MemoryStore):
        store = store.inner
    asyncio.run(store.write(VPath.parse(path), data))


def _everything(ws: SyncWorkspace) -> list[str]:
    return sorted(str(e.path) for e in ws.glob("/docs/**"))


def _reader_sees(ws: SyncWorkspace) -> dict[str, list[str]]:
    reader = _as(ws, READER)
    return {
        "list": sorted(str(e.path) for e in reader.list("/docs")),
        "glob": sorted(str(e.path) for e in reader.glob("/docs/**")),
        "grep": sorted({m.path for m in reader.grep("zebra", "/docs").matches}),
        "search": sorted({h.path for h in reader.search("zebra", mode="bm25").hits}),
    }


NOTHING: dict[str, list[str]] = {"list": [], "glob": [], "grep": [], "search": []}


# -- front matter in encodings without a byte-order mark ---------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_front_matter_in_utf16_or_utf32_without_a_bom_still_labels_the_file(
    ws: SyncWorkspace, encoding: str
) -> None:
    # The index used to clean the NULs out of such a file and serve "zebra" to the reader,
    # while the labels resolver saw no front matter at all.
    _plant(ws, "/memo.md", SECRET.encode(encoding))
    ws.reindex()
    assert ws.stat("/docs/memo.md").labels.classification == "confidential"
    assert _reader_sees(ws) == NOTHING
    with pytest.raises(NotFoundError):
        _as(ws, READER).read_bytes("/docs/memo.md")


# -- sidecars of sidecars ----------------------------------------------------------------------


@pytest.mark.parametrize("labelled_by", ["sidecar", "front matter"])
def test_the_sidecar_of_a_sidecar_is_hidden_with_the_file(
    ws: SyncWorkspace, labelled_by: str
) -> None:
    if labelled_by == "sidecar":
        ws.write("/docs/x.txt", "zebra x\n")
        ws.write("/docs/x.txt.labels.yaml", "classification: confidential\n")
    else:
        ws.write("/docs/x.txt", SECRET)
        ws.write("/docs/x.txt.labels.yaml", "tags: [a]\n")
    ws.write("/docs/x.txt.labels.yaml.labels.yaml", "tags: [zebra]\n")
    # the name alone says that x.txt exists: it is as hidden as x.txt
    assert _reader_sees(ws) == NOTHING
    with pytest.raises(NotFoundError):
        _as(ws, READER).read_text("/docs/x.txt.labels.yaml.labels.yaml")
    assert ws.read_text("/docs/x.txt.labels.yaml.labels.yaml") == "tags: [zebra]\n"


# -- a refused relabelling changes nothing ------------------------------------------------------


@pytest.mark.parametrize("target", ["/docs/y.txt.labels.yaml", "/docs/other.yaml"])
def test_a_refused_move_of_a_sidecar_leaves_no_file_behind(ws: SyncWorkspace, target: str) -> None:
    ws.write("/docs/x.txt", "zebra x\n")
    ws.write("/docs/x.txt.labels.yaml", "classification: confidential\n")
    ws.write("/docs/y.txt", "zebra y\n")
    before = _everything(ws)
    with pytest.raises(PolicyDeniedError, match="label permission"):
        _as(ws, WRITER).move("/docs/x.txt.labels.yaml", target)
    # a sidecar carrying x.txt's labels used to be written at the target before the refusal,
    # readable by whoever may read the target's folder
    assert _everything(ws) == before
    assert _reader_sees(ws)["list"] == ["/docs/y.txt"]


def test_a_refused_copy_onto_a_sidecar_leaves_no_file_behind(ws: SyncWorkspace) -> None:
    ws.write("/docs/x.txt", "zebra x\n")
    ws.write("/docs/x.txt.labels.yaml", "classification: confidential\n")
    ws.write("/docs/loose.txt", "classification: internal\n")
    ws.write("/docs/loose.txt.labels.yaml", "tags: [s]\n")
    before = _everything(ws)
    with pytest.raises(PolicyDeniedError, match="label permission"):
        _as(ws, WRITER).copy("/docs/loose.txt", "/docs/x.txt.labels.yaml", overwrite=True)
    assert _everything(ws) == before
    assert ws.read_text("/docs/x.txt.labels.yaml") == "classification: confidential\n"


# -- a folder at a sidecar's name ---------------------------------------------------------------


def test_a_folder_at_a_sidecar_name_cannot_hide_a_file_from_everybody(ws: SyncWorkspace) -> None:
    # A folder where a sidecar belongs leaves the file's labels undetermined: it would vanish
    # for everybody. Anyone with write access to the folder could do it, even to a file they
    # may not see.
    ws.write("/docs/open.txt", "zebra open\n")
    ws.write("/docs/x.md", SECRET)
    reader = _as(ws, READER)
    with pytest.raises(LabelError, match="labels"):
        reader.mkdir("/docs/open.txt.labels.yaml")
    with pytest.raises(LabelError, match="labels"):
        reader.write("/docs/open.txt.labels.yaml/inner.txt", "a\n")
    # for a file the caller may not see: a folder there is not found, a write of its sidecar
    # is refused as a write of the file's own name is (docs/labels.md)
    with pytest.raises(NotFoundError, match=r"^/docs/x.md.labels.yaml not found$"):
        reader.mkdir("/docs/x.md.labels.yaml")
    with pytest.raises(PolicyDeniedError, match=r"^write on /docs/x.md.labels.yaml is not allowed"):
        reader.write("/docs/x.md.labels.yaml", "classification: restricted\n")
    assert _everything(ws) == ["/docs/open.txt", "/docs/x.md"]
    assert ws.stat("/docs/x.md").labels.classification == "confidential"
    assert _reader_sees(ws)["list"] == ["/docs/open.txt"]


def test_a_folder_planted_at_a_sidecar_name_is_hidden_with_its_file(tmp_path: Path) -> None:
    # made by another program: the file's labels cannot be determined (hidden from everybody),
    # and the folder's name, which tells that the file is there, is hidden the same way
    (tmp_path / "x.txt").write_text("zebra x\n")
    (tmp_path / "ok.txt").write_text("zebra ok\n")
    (tmp_path / "x.txt.labels.yaml").mkdir()
    ws = Workspace(
        [Mount.of("/docs", LocalStore(tmp_path), labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=OWNER,
    ).sync()
    ws.reindex()
    for who in (OWNER, READER):
        view = _as(ws, who)
        assert [str(e.path) for e in view.list("/docs")] == ["/docs/ok.txt"]
        assert [str(e.path) for e in view.glob("/docs/**")] == ["/docs/ok.txt"]
        for path in ("/docs/x.txt", "/docs/x.txt.labels.yaml"):
            with pytest.raises(NotFoundError):
                view.stat(path)


# -- label keys in other spellings --------------------------------------------------------------


@pytest.mark.parametrize(
    "front_matter",
    [
        "Classification: confidential\n",
        "CLASSIFICATION: confidential\n",
        "classification: confidential\nclassification: internal\n",
        "classification: confidential\nClassification: internal\n",
        "roles: [hr]\nroles: []\n",
        "<<: {Classification: confidential}\nclassification: internal\n",
    ],
    ids=[
        "capitalised",
        "upper",
        "duplicate",
        "duplicate-in-two-cases",
        "duplicate-roles",
        "merged-in-another-case",
    ],
)
def test_label_keys_in_other_spellings_never_loosen(ws: SyncWorkspace, front_matter: str) -> None:
    # YAML keeps the last of two equal keys and tells nobody; a reader of the file (or another
    # tool) may take the first. Either way the document is no easier to read than its
    # tightest spelling says.
    _plant(ws, "/memo.md", f"---\n{front_matter}---\nzebra memo\n".encode())
    ws.reindex()
    assert _reader_sees(ws) == NOTHING


def test_a_file_with_a_bom_and_crlf_at_the_64k_boundary_agrees_on_every_path(
    ws: SyncWorkspace,
) -> None:
    block = "classification: confidential\n# " + "a" * (64 * 1024 - 40) + "\n"
    text = "---\n" + block + "---\nzebra\n"
    _plant(ws, "/big.md", codecs.BOM_UTF8 + text.replace("\n", "\r\n").encode())
    ws.reindex()
    assert _reader_sees(ws) == NOTHING


# -- changes onto and below a hidden file --------------------------------------------------------

BELOW = {
    "mkdir the hidden name": lambda ws: ws.mkdir("/docs/b.md", exist_ok=False),
    "mkdir below it": lambda ws: ws.mkdir("/docs/b.md/sub"),
    "mkdir below it without parents": lambda ws: ws.mkdir("/docs/b.md/sub", parents=False),
    "write below it": lambda ws: ws.write("/docs/b.md/x.txt", "a\n"),
    "copy below it": lambda ws: ws.copy("/docs/open.md", "/docs/b.md/o.md"),
    "move below it": lambda ws: ws.move("/docs/open.md", "/docs/b.md/o.md"),
}


@pytest.mark.parametrize("call", sorted(BELOW))
def test_a_change_onto_or_below_a_hidden_file_is_refused_in_the_words_of_the_policy(
    ws: SyncWorkspace, call: str
) -> None:
    # "not found" for a mkdir or a write to a new path, or "already exists", says a hidden
    # file is there; the documented answer is the refusal a rule reserving the name would give
    ws.write("/docs/open.md", "zebra open\n")
    ws.write("/docs/b.md", SECRET)
    reader = _as(ws, READER)
    with pytest.raises(PolicyDeniedError) as caught:
        BELOW[call](reader)
    told = str(caught.value)
    assert told.startswith("write on /docs/b.md") and told.endswith("is not allowed by policy")
    assert _everything(ws) == ["/docs/b.md", "/docs/open.md"]
    assert ws.read_text("/docs/b.md") == SECRET


# -- the size boundary of the head ---------------------------------------------------------------


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_a_write_and_a_read_agree_on_the_labels_at_the_head_boundary(
    ws: SyncWorkspace, extra: int
) -> None:
    # A file of exactly HEAD_BYTES opening with a "---" line it never closes (a thematic break)
    # was accepted by the write (the whole file: no front matter) and then hidden from
    # everybody by the read path (only the head: front matter that does not close).
    data = b"---\n" + b"a" * (HEAD_BYTES + extra - 4)
    try:
        ws.write("/docs/f.txt", data)
    except LabelError:
        written = False
    else:
        written = True
    assert written is (extra <= 0)
    assert ws.exists("/docs/f.txt") is written


@pytest.mark.parametrize(
    "target", ["/pub/other.yaml", "/pub/y.txt.labels.yaml", "/pub/x.txt.labels.yaml"]
)
def test_a_refused_move_of_a_sidecar_to_another_mount_copies_nothing(target: str) -> None:
    # across mounts a move is a copy then a delete; the delete (a relabelling of x.txt that
    # loosens it) was refused only after the copy, which stayed, and could tighten y.txt
    owner = Workspace(
        [
            Mount.of("/docs", MemoryStore(), labels=Labels(classification="internal")),
            Mount.of("/pub", MemoryStore(), labels=Labels(classification="internal")),
        ],
        policy=Policy(
            rules=(Rule.allow("label", "/**", principals=["owner"]), Rule.allow("*", "/**"))
        ),
        principal=OWNER,
    ).sync()
    owner.write("/docs/x.txt", "zebra x\n")
    owner.write("/docs/x.txt.labels.yaml", "classification: confidential\n")
    owner.write("/pub/y.txt", "zebra y\n")
    with pytest.raises(PolicyDeniedError, match="label permission"):
        _as(owner, WRITER).move("/docs/x.txt.labels.yaml", target)
    files = sorted(str(e.path) for e in owner.glob("/**") if e.is_file)
    assert files == ["/docs/x.txt", "/docs/x.txt.labels.yaml", "/pub/y.txt"]
    assert [str(e.path) for e in _as(owner, READER).glob("/pub/**")] == ["/pub/y.txt"]


def test_a_write_does_not_tell_the_labels_of_a_file_it_made_invisible() -> None:
    # an orphan sidecar the writer may not read (a policy rule) labels the file it writes; the
    # write used to answer with those labels (here: restricted), then the file was not found
    policy = Policy(
        rules=(
            Rule.deny("*", "/**/*.labels.yaml", principals=["reader"]),
            Rule.allow("*", "/**"),
        )
    )
    owner = Workspace(
        [Mount.of("/docs", MemoryStore(), labels=Labels(classification="internal"))],
        policy=policy,
        principal=OWNER,
    ).sync()
    owner.write("/docs/y.txt.labels.yaml", "classification: restricted\n")
    reader = _as(owner, READER)
    written = reader.write("/docs/y.txt", "hello\n")
    assert written.labels is None
    with pytest.raises(NotFoundError):
        reader.stat("/docs/y.txt")
    assert owner.stat("/docs/y.txt").labels.classification == "restricted"
    # a file the writer still sees answers with its labels, as before
    assert reader.write("/docs/open.txt", "hi\n").labels == Labels(classification="internal")
