"""A file changed in place behind the workspace is never read under its old, looser labels
(red-team variants of "labels computed twice" and stale labels, docs/security.md): a document's
labels are cached per file version, so whatever tells one version of its bytes from another must
change when its labels can. Another program writing a local folder in place can keep a file's
size, inode and mtime (the local store's version) and still change its front matter or its
sidecar; the read must never serve the new bytes under the old, looser labels.

Each test writes through a real workspace on a real local folder, reads once as a reader (so
the labels are cached), changes the file or its sidecar in place behind the workspace's back,
puts the mtime back, and tries every read path again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bastion import (
    Labels,
    Mount,
    NotFoundError,
    Policy,
    PolicyDeniedError,
    Principal,
    SyncWorkspace,
    Workspace,
)
from bastion.agents.openai import OpenAITools
from bastion.agents.tools import Toolset
from bastion.stores.local import LocalStore
from bastion.workspace.blocking import run_blocking

OWNER = Principal.of("owner", clearance="restricted")
READER = Principal.of("reader", clearance="internal")
OPEN = "---\nclassification: internal\n---\nzebra open\n"


def _workspace(root: Path) -> SyncWorkspace:
    return Workspace(
        [Mount.of("/docs", LocalStore(root), labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        principal=OWNER,
    ).sync()


def _same_size(text: str, like: str) -> bytes:
    assert len(text) <= len(like)
    return (text + "x" * (len(like) - len(text) - 1) + "\n").encode()


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite ``path``'s bytes without a new inode and put its mtime back (another program;
    size kept by the caller), so the local store's version does not change."""
    before = os.stat(path)
    assert len(data) == before.st_size
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def _tool_read(ws: SyncWorkspace, path: str) -> str:
    return str(run_blocking(OpenAITools(Toolset(ws.aio)).call("read_file", {"path": path})))


READS: dict[str, Callable[[SyncWorkspace], Any]] = {
    "read_text": lambda r: r.read_text("/docs/a.md"),
    "read_bytes range": lambda r: r.read_bytes("/docs/a.md", start=4, end=12),
    "read_lines": lambda r: r.read_lines("/docs/a.md", offset=2, limit=2),
    "stat": lambda r: r.stat("/docs/a.md"),
}


def _reader_sees_nothing(reader: SyncWorkspace) -> None:
    for name, call in READS.items():
        with pytest.raises(NotFoundError, match=r"^/docs/a.md not found$"):
            call(reader)
        assert name
    assert reader.list("/docs") == []
    assert reader.glob("/docs/*.md") == []
    assert reader.grep("zebra|secret", "/docs", regex=True).matches == ()
    told = _tool_read(reader, "/docs/a.md")
    assert "secret" not in told and "not found" in told


@pytest.mark.parametrize("first_read", sorted(READS))
def test_front_matter_tightened_in_place_is_not_read_under_the_cached_labels(
    tmp_path: Path, first_read: str
) -> None:
    ws = _workspace(tmp_path)
    ws.write("/docs/a.md", OPEN)
    reader = ws.aio.with_principal(READER).sync()
    READS[first_read](reader)  # the labels (internal) are now cached for this version
    _rewrite_in_place(
        tmp_path / "a.md", _same_size("---\nclassification: restricted\n---\nsecret\n", OPEN)
    )
    _reader_sees_nothing(reader)
    assert ws.stat("/docs/a.md").labels.classification == "restricted"


def test_a_sidecar_tightened_in_place_is_not_read_under_the_cached_labels(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.write("/docs/a.md", "zebra open, later secret\n")
    loose = "classification: internal\n"
    ws.write("/docs/a.md.labels.yaml", loose)
    reader = ws.aio.with_principal(READER).sync()
    assert reader.read_text("/docs/a.md").startswith("zebra")
    assert [str(e.path) for e in reader.list("/docs")] == ["/docs/a.md", "/docs/a.md.labels.yaml"]
    _rewrite_in_place(tmp_path / "a.md.labels.yaml", _same_size("classification: secret", loose))
    _reader_sees_nothing(reader)
    assert ws.stat("/docs/a.md").labels.classification == "restricted"


# -- a sidecar's suffix in another case --------------------------------------------------------


@pytest.mark.parametrize("suffix", [".LABELS.YAML", ".Labels.yaml", ".label\u017f.yaml"])
def test_a_sidecar_name_in_another_case_is_governed_as_the_sidecar(
    tmp_path: Path, suffix: str
) -> None:
    # On a disk that folds case that name *is* the sidecar (the store finds it when asked for
    # a.md.labels.yaml); it was an ordinary file to the guard and the index: listed, read and
    # searched by anybody, telling that a.md exists and how it is labelled.
    from bastion import Knowledge, Rule
    from bastion.knowledge.index.memory import MemoryIndex

    ws = Workspace(
        [Mount.of("/docs", LocalStore(tmp_path), labels=Labels(classification="internal"))],
        policy=Policy(
            rules=(
                Rule.allow(("reindex", "label"), "/**", principals=["owner"]),
                Rule.allow("*", "/**"),
            )
        ),
        principal=OWNER,
        knowledge=Knowledge(MemoryIndex()),
    ).sync()
    ws.write("/docs/a.md", "---\nclassification: restricted\n---\nsecret\n")
    (tmp_path / f"a.md{suffix}").write_text("classification: restricted\ntags: [zebra]\n")
    ws.write("/docs/open.md", "zebra open\n")
    ws.reindex()
    reader = ws.aio.with_principal(READER).sync()
    assert [str(e.path) for e in reader.list("/docs")] == ["/docs/open.md"]
    assert [h.path for h in reader.search("zebra", mode="bm25").hits] == ["/docs/open.md"]
    with pytest.raises(NotFoundError, match=r"not found$"):
        reader.read_text(f"/docs/a.md{suffix}")
    # writing it is a relabelling of a.md: refused for whoever may not see a.md, in the words
    # a write of a.md itself gets (a change onto a hidden name)
    with pytest.raises(PolicyDeniedError, match=r"is not allowed by policy$"):
        reader.write(f"/docs/a.md{suffix}", "classification: public\n")
    assert (tmp_path / f"a.md{suffix}").read_text().startswith("classification: restricted")
