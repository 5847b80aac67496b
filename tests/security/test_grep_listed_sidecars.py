"""grep takes each file's sidecar from its folder's listing, made earlier in the same call
(``bastion.labels.store.listings_reused``), instead of a lookup per file. A change between the
listing and the read must never let bytes out under labels they do not carry: a file rewritten
after the listing is decided afresh; the listing lives for one grep call only; hidden and
absent files answer alike. The races are made real: a local store whose listing lets another
writer act the moment a folder has been listed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import NotFoundError
from bastion.core.models import FileInfo
from bastion.core.paths import VPath

READER = Principal.of("reader", clearance="internal")
RESTRICTED = "---\nclassification: restricted\n---\nneedle TOPSECRET\n"
TIGHT = "classification: restricted\n"


class RacingStore(LocalStore):
    """A local store that runs ``after_list`` once a folder has been listed: another writer
    acting between grep's listing and its reads."""

    after_list: Callable[[VPath], None] | None = None

    async def list(self, path: VPath) -> list[FileInfo]:
        found = await super().list(path)
        if self.after_list is not None:
            self.after_list(path)
        return found


def _world(tmp_path: Path) -> tuple[Workspace, Workspace, RacingStore]:
    root = tmp_path / "docs"
    root.mkdir()
    store = RacingStore(root)
    admin = Workspace([Mount.of("/docs", store)], policy=Policy.allow_all())
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        admin.sync().write(f"/docs/{name}", f"needle open {name}\n")
    reader = Workspace(admin.mounts, policy=Policy.allow_all(), principal=READER)
    return admin, reader, store


def _once(action: Callable[[], None]) -> Callable[[VPath], None]:
    done: list[bool] = []

    def hook(path: VPath) -> None:
        if not done:
            done.append(True)
            action()

    return hook


def _shown(reader: Workspace, pattern: str = "needle") -> list[str]:
    found = reader.sync().grep(pattern, "/docs")
    assert "TOPSECRET" not in found.format()
    return [f"{m.path}:{m.text}" for m in found.matches]


def test_a_file_tightened_after_its_listing_is_decided_again(tmp_path: Path) -> None:
    _, reader, store = _world(tmp_path)
    assert len(_shown(reader)) == 3  # its labels are cached for the version listed
    store.after_list = _once(lambda: (tmp_path / "docs" / "a.txt").write_text(RESTRICTED))
    shown = _shown(reader)
    assert not any(line.startswith("/docs/a.txt") for line in shown)
    assert "/docs/b.txt:needle open b.txt" in shown


@pytest.mark.parametrize("same_size", [False, True])
def test_a_file_rewritten_with_a_sidecar_after_its_listing_is_not_read(
    tmp_path: Path, same_size: bool
) -> None:
    _, reader, store = _world(tmp_path)
    assert len(_shown(reader)) == 3
    folder = tmp_path / "docs"
    old = (folder / "b.txt").read_text()

    def tighten() -> None:
        (folder / "b.txt.labels.yaml").write_text(TIGHT)
        text = "needle TOPSECRET b\n"
        if same_size:  # in place, keeping size and inode: only the ctime moves
            text = text[: len(old)].ljust(len(old) - 1, "x") + "\n"
            with open(folder / "b.txt", "r+b") as f:
                f.write(text.encode())
        else:
            (folder / "b.txt").write_text(text)

    store.after_list = _once(tighten)
    shown = _shown(reader)
    assert not any(line.startswith("/docs/b.txt") for line in shown)


def test_the_listing_lives_for_one_grep_call(tmp_path: Path) -> None:
    admin, reader, _ = _world(tmp_path)
    assert len(_shown(reader)) == 3
    admin.sync().write("/docs/a.txt.labels.yaml", TIGHT)
    assert not any(line.startswith("/docs/a.txt") for line in _shown(reader))
    with pytest.raises(NotFoundError) as err:
        reader.sync().read_text("/docs/a.txt")
    with pytest.raises(NotFoundError) as absent:
        reader.sync().read_text("/docs/nothing.txt")
    assert type(err.value) is type(absent.value)
    assert str(err.value).replace("a.txt", "X") == str(absent.value).replace("nothing.txt", "X")


def test_a_sidecar_removed_after_the_listing_never_opens_a_folder_of_hidden_files(
    tmp_path: Path,
) -> None:
    admin, reader, store = _world(tmp_path)
    admin.sync().write("/docs/sub/c.txt.labels.yaml", TIGHT)
    assert [line.split(":")[0] for line in _shown(reader)] == ["/docs/a.txt", "/docs/b.txt"]
    # loosened while grep runs: the answer is the one at the listing, or the one after it
    store.after_list = _once(lambda: os.unlink(tmp_path / "docs" / "sub" / "c.txt.labels.yaml"))
    shown = [line.split(":")[0] for line in _shown(reader)]
    assert shown in (
        ["/docs/a.txt", "/docs/b.txt"],
        ["/docs/a.txt", "/docs/b.txt", "/docs/sub/c.txt"],
    )
    assert len(_shown(reader)) == 3


def test_grep_on_one_hidden_file_answers_as_on_an_absent_one(tmp_path: Path) -> None:
    admin, reader, _ = _world(tmp_path)
    admin.sync().write("/docs/a.txt.labels.yaml", TIGHT)
    with pytest.raises(NotFoundError) as hidden:
        reader.sync().grep("needle", "/docs/a.txt")
    with pytest.raises(NotFoundError) as absent:
        reader.sync().grep("needle", "/docs/zz.txt")
    assert type(hidden.value) is type(absent.value)
    assert str(hidden.value).replace("a.txt", "X") == str(absent.value).replace("zz.txt", "X")
