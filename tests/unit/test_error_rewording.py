"""Store errors re-worded at the guard: every store path of the mount that a message names
becomes its workspace path, so the store's cause and advice reach the caller; a message naming
a path the caller may not see (or one the guard does not know) becomes the plain form.

The pure function first (``errors.reworded``), then through a workspace whose store fails
with the messages a real store gives (a fake store: a ``MemoryStore`` whose calls raise).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.core.errors import (
    AlreadyExistsError,
    NotADirectoryError_,
    OperationError,
    StoreError,
    StoreUnavailableError,
    reworded,
)
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.policy import Rule
from bastion.core.ports import ReadCheck

NO_PERMISSION = (
    "the store has no permission for this file on disk; fix its permissions (ask an operator)"
)
READ_ONLY = "the disk is read-only; writes need it mounted read-write (ask an operator)"
PLAIN = "the storage of this mount failed; try again later, and ask an operator if it persists"

# -- the pure function ---------------------------------------------------------------------


def test_the_path_asked_for_is_mapped_and_the_cause_kept() -> None:
    out = reworded(StoreError(f"/a.md: {READ_ONLY}"), "/a.md", "/vault/a.md")
    assert type(out) is StoreError
    assert str(out) == f"/vault/a.md: {READ_ONLY}"


def test_several_store_paths_in_one_message_are_all_mapped() -> None:
    also = {"/plan.md": "/vault/plan.md", "/sub": "/vault/sub", "/": "/vault"}
    out = reworded(
        StoreError("/plan.md: cannot move it to /sub/moved.md, since /sub is full; free space"),
        "/sub/moved.md",
        "/vault/sub/moved.md",
        also=also,
    )
    assert str(out) == (
        "/vault/plan.md: cannot move it to /vault/sub/moved.md, since /vault/sub is full; "
        "free space"
    )


def test_a_message_naming_only_a_folder_above_keeps_its_cause() -> None:
    out = reworded(
        StoreError(f"/sub: {NO_PERMISSION}"),
        "/sub/b.md",
        "/share/sub/b.md",
        also={"/sub": "/share/sub", "/": "/share"},
    )
    assert str(out) == f"/share/sub: {NO_PERMISSION}"


def test_the_longest_known_path_wins_and_a_longer_name_is_not_cut() -> None:
    also = {"/a": "/m/a", "/a b": "/m/a b"}
    out = reworded(StoreError("/a b: gone; /a: here"), "/a", "/m/a", also=also)
    assert str(out) == "/m/a b: gone; /m/a: here"
    # "/ab" is not "/a": a path the edge does not know, so the plain form.
    out = reworded(StoreError("/ab: the disk is read-only"), "/a", "/m/a")
    assert str(out) == f"/m/a: {PLAIN}"


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("/secret/plan.txt: the store has no permission for this file on disk", StoreError),
        ("could not write /a.md because /secret/plan.txt is locked", StoreError),
        ("/a.md: blocked by (/secret/plan.txt)", StoreError),
        ("/a.md: blocked by '/secret/plan.txt'", StoreError),
        ("SQLite store '/var/lib/secret.db' stayed locked", StoreError),
        ("/secret/plan.txt already exists", AlreadyExistsError),
        ("/secret/plan.txt is a file, not a directory", NotADirectoryError_),
    ],
)
def test_a_message_naming_an_unknown_path_becomes_the_plain_form(
    message: str, kind: type[OperationError]
) -> None:
    out = reworded(kind(message), "/a.md", "/vault/a.md", also={"/": "/vault"})
    assert type(out) is kind
    assert "secret" not in str(out) and "plan" not in str(out)
    assert str(out).startswith("/vault/a.md")
    assert "\n" not in str(out)


def test_a_quoted_path_is_mapped() -> None:
    out = reworded(StoreError("cannot replace '/a.md' now; retry"), "/a.md", "/vault/a.md")
    assert str(out) == "cannot replace '/vault/a.md' now; retry"


def test_a_message_naming_no_path_is_told_about_the_path_asked_for() -> None:
    out = reworded(StoreError("the local store is closed"), "/a.md", "/vault/a.md")
    assert str(out) == "/vault/a.md: the local store is closed"


def test_a_mount_named_by_its_prefix_is_not_taken_for_a_store_path() -> None:
    text = "filesystem unresponsive: mount /vault (local) did not answer within 5 s; try later"
    out = reworded(StoreUnavailableError(text), "/a.md", "/vault/a.md")
    assert type(out) is StoreUnavailableError
    assert str(out) == f"/vault/a.md: {text}"


def test_an_unavailable_store_naming_an_unknown_path_keeps_its_type() -> None:
    out = reworded(StoreUnavailableError("/other.md: no answer"), "/a.md", "/vault/a.md")
    assert type(out) is StoreUnavailableError
    assert str(out) == "/vault/a.md: the storage of this mount did not answer; try again later"


# -- through the guard ---------------------------------------------------------------------


class FailingStore(MemoryStore):
    """A memory store whose reads and moves fail with a message naming store paths, as a
    real store's do (``message`` gets the store path asked for: the source of a move)."""

    def __init__(self, message: Callable[[VPath], str]) -> None:
        super().__init__()
        self.message = message
        self.failing = False

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        if self.failing:
            raise StoreError(self.message(path))
        return await super().read_file(path, offset, length, check=check)

    async def rename(self, src: VPath, dst: VPath) -> None:
        if self.failing:
            raise StoreError(self.message(src))
        await super().rename(src, dst)


async def _failure(store: FailingStore, call: Callable[[], Awaitable[object]]) -> str:
    store.failing = True
    try:
        with pytest.raises(StoreError) as caught:
            await call()
    finally:
        store.failing = False
    message = str(caught.value)
    assert "\n" not in message
    return message


async def test_a_move_tells_the_cause_the_store_gives_for_its_source() -> None:
    store = FailingStore(lambda path: f"{path}: {READ_ONLY}")
    ws = Workspace([Mount.of("/vault", store)], policy=Policy.allow_all())
    await ws.write("/vault/plan.md", "plan\n")
    message = await _failure(store, lambda: ws.move("/vault/plan.md", "/vault/moved.md"))
    assert message == f"/vault/plan.md: {READ_ONLY}"
    assert await ws.read_text("/vault/plan.md") == "plan\n"
    await ws.move("/vault/plan.md", "/vault/moved.md")  # the next one works
    assert await ws.read_text("/vault/moved.md") == "plan\n"


async def test_a_read_tells_the_cause_the_store_gives_for_the_folder_above() -> None:
    store = FailingStore(lambda path: f"{path.parent}: {NO_PERMISSION}")
    ws = Workspace([Mount.of("/share", store)], policy=Policy.allow_all())
    await ws.write("/share/sub/b.md", "tern\n")
    message = await _failure(store, lambda: ws.read_text("/share/sub/b.md"))
    assert message == f"/share/sub: {NO_PERMISSION}"


async def test_a_folder_the_principal_may_not_see_is_not_named() -> None:
    # The file may be read by its full name, its folder may not be listed: a message about
    # the folder is told in the plain form.
    store = FailingStore(lambda path: f"{path.parent}: {NO_PERMISSION}")
    policy = Policy(rules=(Rule.deny("list", "/share/private"), Rule.allow("*", "/**")))
    ws = Workspace([Mount.of("/share", store)], policy=policy)
    await ws.write("/share/private/a.md", "auk\n")
    assert await ws.read_text("/share/private/a.md") == "auk\n"
    message = await _failure(store, lambda: ws.read_text("/share/private/a.md"))
    assert message == f"/share/private/a.md: {PLAIN}"


async def test_a_hidden_file_named_by_the_store_is_never_told() -> None:
    store = FailingStore(lambda path: f"{path.parent}/secret.key: {NO_PERMISSION}")
    policy = Policy(rules=(Rule.deny("*", "/vault/*.key"), Rule.allow("*", "/**")))
    ws = Workspace([Mount.of("/vault", store)], policy=policy)
    await ws.write("/vault/notes.md", "notes\n")
    message = await _failure(store, lambda: ws.read_text("/vault/notes.md"))
    assert message == f"/vault/notes.md: {PLAIN}"
    assert "secret" not in message


@pytest.mark.parametrize("value", ["a\nb", "x\r\ny", "/etc/passwd\nERROR forged line"])
def test_every_bastion_error_is_one_line_whatever_value_it_quotes(value: str) -> None:
    from bastion.core.errors import ConfigurationError, NotFoundError

    for error in (ConfigurationError(f"policy file {value} is bad"), NotFoundError(value)):
        text = str(error)
        assert "\n" not in text and "\r" not in text
        assert value.replace("\r", "\\r").replace("\n", "\\n") in text
