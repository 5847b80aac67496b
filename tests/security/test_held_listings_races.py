"""Listings held for one call (``core.listings``: each folder listed once per list, glob or
grep, the next levels read ahead in the same worker trip) against a disk that changes under
them, by real threads on a real folder: a folder swapped for a link out of the root while the
walk reads ahead, a file labelled above the reader renamed in and out of a visible folder and
over a visible file's name, a file whose sidecar hides it replaced while the call runs, and a
hard link of a hidden file under a visible name. No answer of list, glob or grep ever shows a
hidden name or hidden bytes, or anything outside the root."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bastion import LocalStore, Mount, Policy, Principal, Workspace

READER = Principal.of("reader", clearance="internal")
HIDDEN = "---\nclassification: restricted\n---\nneedle TOPSECRET\n"
ROUNDS = 40


@contextmanager
def _running(step: Callable[[int], None]) -> Iterator[list[int]]:
    stop = threading.Event()
    count = [0]
    failed: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                step(count[0])
                count[0] += 1
        except BaseException as exc:  # reported after the body
            failed.append(exc)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield count
    finally:
        stop.set()
        thread.join()
    assert failed == []


def _tree(tmp_path: Path) -> tuple[Path, Workspace]:
    root = tmp_path / "root"
    for sub in ("pub", "pub/deep", "pub/deep/er"):
        (root / sub).mkdir(parents=True)
        for i in range(15):
            (root / sub / f"f{i:02}.md").write_text(f"needle open {sub} {i}\n")
    ws = Workspace([Mount.of("/r", LocalStore(root))], policy=Policy.allow_all(), principal=READER)
    return root, ws


def _answers(ws: Workspace) -> str:
    """Everything list, glob and grep tell, as one text."""
    sync = ws.sync()
    told = [repr(sync.list("/r", recursive=True))]
    told.append(repr(sync.list("/r/pub")))
    told.append(repr(sync.glob("**", path="/r")))
    told.append(repr(sync.glob("/r/pub/**/*.md")))
    found = sync.grep("needle", "/r", context=1)
    told.append(found.format() + repr(found.to_dict()))
    return "\n".join(told)


def _leaks(ws: Workspace, *secrets: str) -> list[str]:
    leaks = []
    for _ in range(ROUNDS):
        text = _answers(ws)
        leaks += [s for s in secrets if s in text]
    return leaks


def test_a_folder_swapped_for_a_link_out_of_the_root_during_read_ahead(tmp_path: Path) -> None:
    root, ws = _tree(tmp_path)
    outside = tmp_path / "outside"
    (outside / "OUTSIDEDIR").mkdir(parents=True)
    (outside / "OUTSIDENAME.md").write_text("needle OUTSIDEBYTES\n")
    aside = tmp_path / "aside"

    def swap(i: int) -> None:
        if i % 2 == 0:
            os.rename(root / "pub" / "deep", aside)
            (root / "pub" / "deep").symlink_to(outside, target_is_directory=True)
        else:
            (root / "pub" / "deep").unlink()
            os.rename(aside, root / "pub" / "deep")

    with _running(swap) as steps:
        assert _leaks(ws, "OUTSIDENAME", "OUTSIDEDIR", "OUTSIDEBYTES") == []
    assert steps[0] > 0


def test_a_hidden_file_renamed_in_and_out_of_a_visible_folder(tmp_path: Path) -> None:
    root, ws = _tree(tmp_path)
    (root / "vault").mkdir()
    (root / "vault" / "HIDDENNAME.md").write_text(HIDDEN)
    spare = tmp_path / "spare.md"

    def move(i: int) -> None:
        if i % 4 == 0:  # into a visible folder, under its own name
            os.rename(root / "vault" / "HIDDENNAME.md", root / "pub" / "deep" / "HIDDENNAME.md")
        elif i % 4 == 1:  # and back
            os.rename(root / "pub" / "deep" / "HIDDENNAME.md", root / "vault" / "HIDDENNAME.md")
        elif i % 4 == 2:  # over a visible file's name (its bytes still hidden)
            os.link(root / "vault" / "HIDDENNAME.md", spare)
            os.replace(spare, root / "pub" / "f03.md")
        else:
            spare.write_text("needle open pub 3\n")
            os.replace(spare, root / "pub" / "f03.md")

    with _running(move) as steps:
        assert _leaks(ws, "HIDDENNAME", "TOPSECRET") == []
    assert steps[0] > 0


def test_a_file_hidden_by_its_sidecar_replaced_while_the_call_runs(tmp_path: Path) -> None:
    root, ws = _tree(tmp_path)
    target = root / "pub" / "deep" / "side.md"
    target.write_text("needle SIDESECRET 0\n")
    (root / "pub" / "deep" / "side.md.labels.yaml").write_text("classification: restricted\n")
    fresh = tmp_path / "fresh.md"

    def replace(i: int) -> None:
        if i % 2:
            fresh.write_text(f"needle SIDESECRET {i}\n")
            os.replace(fresh, target)
        else:
            with open(target, "r+b") as f:  # in place, same size
                f.write(b"needle SIDESECRET 1\n")

    with _running(replace) as steps:
        assert _leaks(ws, "SIDESECRET", "side.md") == []
    assert steps[0] > 0


def test_a_hard_link_of_a_hidden_file_under_a_visible_name_stays_hidden(tmp_path: Path) -> None:
    root, ws = _tree(tmp_path)
    (root / "vault").mkdir()
    (root / "vault" / "secret.md").write_text(HIDDEN)
    os.link(root / "vault" / "secret.md", root / "pub" / "LINKNAME.md")
    assert _leaks(ws, "LINKNAME", "TOPSECRET") == []


def test_a_sidecar_made_and_removed_while_the_call_runs_is_never_shown(tmp_path: Path) -> None:
    root, ws = _tree(tmp_path)
    (root / "pub" / "deep" / "doc.md").write_text("needle doc\n")
    sidecar = root / "pub" / "deep" / "doc.md.labels.yaml"
    fresh = tmp_path / "fresh.yaml"

    def toggle(i: int) -> None:
        if i % 2:
            sidecar.unlink(missing_ok=True)
        else:
            fresh.write_text("classification: restricted\ntags: [SIDETAG]\n")
            os.replace(fresh, sidecar)

    with _running(toggle) as steps:
        assert _leaks(ws, "labels.yaml", "SIDETAG") == []
    assert steps[0] > 0
