"""A write to a name the local store has not looked up (issue 31: written as a creation, looked
at only when something is there) racing another program that puts a file labelled above the
writer at the same name. The write goes only over the very file it looked at: a file swapped in
between its look and its write is looked at in turn and refused, and is left as it was; the
refusal tells nothing of it. A real disk, a real thread racing, and a store whose write lets
the other program in at the worst moment."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

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
from bastion.core.models import WriteMode

WRITER = Principal.of("writer", clearance="internal")
SECRET = "---\nclassification: restricted\n---\nthe classified body\n"


class _SwapBeforeOverwrite(LocalStore):
    """A local store whose next overwrite of ``n.md`` is preceded by another program putting a
    hidden file there (what a thread could do between the guard's look and the write)."""

    armed = True

    async def write(self, path: Any, data: bytes, **kwargs: Any) -> Any:
        if self.armed and path.name == "n.md" and kwargs.get("mode") is not WriteMode.CREATE:
            self.armed = False
            src = self.host / "n.hidden"
            src.write_text(SECRET, encoding="utf-8")
            os.replace(src, self.host / "n.md")
        return await super().write(path, data, **kwargs)


def _unseen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LocalStore, "cached_presence", lambda self, path: None)


@pytest.mark.parametrize("mode", ["overwrite", "append"])
async def test_a_hidden_file_swapped_in_after_the_look_is_refused_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _unseen(monkeypatch)
    root = tmp_path / "root"
    root.mkdir()
    (root / "n.md").write_text("visible\n", encoding="utf-8")
    store = _SwapBeforeOverwrite(root)
    store.host = root  # type: ignore[attr-defined]
    ws = Workspace(
        [Mount.of("/d", store, scope="read_write")], policy=Policy.allow_all(), principal=WRITER
    )
    with pytest.raises(BastionError) as refused:
        await ws.write("/d/n.md", "mine\n", mode=mode)
    assert not isinstance(refused.value, AlreadyExistsError)
    assert "classified" not in str(refused.value) and "restricted" not in str(refused.value)
    assert (root / "n.md").read_text(encoding="utf-8") == SECRET
    assert sorted(p.name for p in root.iterdir()) == ["n.md"]  # no temporary file left


@pytest.mark.parametrize("look_first", [True, False])
async def test_writes_racing_a_creator_of_a_hidden_file_leak_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, look_first: bool
) -> None:
    if not look_first:
        _unseen(monkeypatch)
    root = tmp_path / "root"
    root.mkdir()
    source = tmp_path / "secret.md"  # linked in and out: its bytes must never change
    source.write_text(SECRET, encoding="utf-8")
    name = root / "n.md"
    stop = threading.Event()

    def creator() -> None:
        while not stop.is_set():
            with contextlib.suppress(FileExistsError):
                os.link(source, name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)

    ws = Workspace(
        [Mount.of("/d", LocalStore(root), scope="read_write")],
        policy=Policy.allow_all(),
        principal=WRITER,
    )
    thread = threading.Thread(target=creator)
    thread.start()
    answers: set[str] = set()
    try:
        for _ in range(400):
            try:
                info = await ws.write("/d/n.md", "mine\n")
            except BastionError as exc:
                answers.add(f"{type(exc).__name__}: {exc}")
            else:
                assert info.labels is None or info.labels.classification != "restricted"
    finally:
        stop.set()
        thread.join()
    assert source.read_text(encoding="utf-8") == SECRET
    for answer in answers:
        assert "classified" not in answer and "restricted" not in answer, answer
        assert not answer.startswith("AlreadyExistsError"), answer
