"""Errors carry their path, mount and reason as attributes, and the message is composed from
them: a store raises with its own path, the guard sets the workspace path and the mount (a
field assignment that re-renders the message); the regular-expression re-wording is only the
fallback for plain messages."""

from __future__ import annotations

import pickle

import pytest

from bastion import (
    AlreadyExistsError,
    BastionError,
    ConfigurationError,
    ConflictError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    MemoryStore,
    Mount,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    Policy,
    RemoteError,
    RemoteUnavailableError,
    Rule,
    StoreError,
    StoreUnavailableError,
    VPath,
    Workspace,
)
from bastion.core.errors import translated
from bastion.core.models import FileInfo
from bastion.core.ports import ReadCheck
from bastion.stores.mount_checks import check_mounts

NO_PERMISSION = (
    "the store has no permission for this file on disk; fix its permissions (ask an operator)"
)
PLAIN = "the storage of this mount failed; try again later, and ask an operator if it persists"


# -- composing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (NotFoundError(path="/a.md"), "/a.md not found"),
        (AlreadyExistsError(path="/a.md"), "/a.md already exists"),
        (IsADirectoryError_(path="/"), "/ is a directory"),
        (NotADirectoryError_(path="/a"), "/a is a file, not a directory"),
        (DirectoryNotEmptyError(path="/d"), "/d is not empty"),
        (
            ConflictError(path="/c"),
            "/c changed since the version you expected; read it again and retry",
        ),
        (StoreError(path="/a.md", reason="the disk is full"), "/a.md: the disk is full"),
        (StoreError(path="/a.md"), f"/a.md: {PLAIN}"),
        (
            StoreUnavailableError(path="/x"),
            "/x: the storage of this mount did not answer; try again later",
        ),
        (
            NotFoundError("parent directory /a does not exist", path="/a"),
            "parent directory /a does not exist",
        ),
        (StoreError("the local store is closed"), "the local store is closed"),
        (StoreError(reason="the local store is closed"), "the local store is closed"),
    ],
)
def test_the_message_is_composed_from_the_attributes(error: BastionError, text: str) -> None:
    assert str(error) == text
    assert error.args == (text,)


def test_a_path_is_kept_as_its_text_and_vpaths_are_accepted() -> None:
    error = NotFoundError(path=VPath.parse("/a/b.md"))
    assert error.path == "/a/b.md"
    assert str(error) == "/a/b.md not found"
    assert error.mount is None and error.reason is None


def test_setting_the_path_re_renders_the_message() -> None:
    error = NotFoundError("parent directory /a does not exist", path="/a")
    error.path = "/vault/a"
    assert str(error) == "parent directory /vault/a does not exist"
    stored = StoreError(path="/a.md", reason=NO_PERMISSION)
    stored.path = "/vault/a.md"
    assert str(stored) == f"/vault/a.md: {NO_PERMISSION}"
    assert stored.reason == NO_PERMISSION


def test_a_message_that_does_not_name_its_path_is_kept_and_not_re_rendered() -> None:
    error = StoreError("the local store is closed", path="/a.md")
    assert not error.renders_path
    error.path = "/vault/a.md"
    assert str(error) == "the local store is closed"


def test_the_reason_of_a_path_colon_message_is_its_tail() -> None:
    error = StoreError("/: the bucket of this mount does not exist; fix the URL", path="/")
    assert error.reason == "the bucket of this mount does not exist; fix the URL"
    assert NotFoundError(path="/a").reason is None  # said by the class, not by the raiser


def test_a_line_break_in_a_path_is_shown_escaped() -> None:
    error = NotFoundError(path="/a\nFAKE: granted")
    assert str(error) == "/a\\nFAKE: granted not found"
    error.path = "/vault/b\r\nx"
    assert "\n" not in str(error) and "\r" not in str(error)


def test_an_error_survives_pickling_with_its_attributes() -> None:
    error = DirectoryNotEmptyError(
        "/d is not empty; pass recursive=True", path="/d", mount="/m"
    ).needing("recursive", True)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is DirectoryNotEmptyError
    assert (str(back), back.path, back.mount, back.remedy) == (
        str(error),
        "/d",
        "/m",
        ("recursive", True),
    )
    back.path = "/m/d"
    assert str(back) == "/m/d is not empty; pass recursive=True"


def test_remote_errors_are_one_family_with_the_status() -> None:
    from bastion import ChatUnavailableError, EmbeddingError, EmbeddingUnavailableError

    error = RemoteUnavailableError("embedding service did not answer; retry later", status=503)
    assert error.status == 503
    assert isinstance(error, RemoteError) and isinstance(error, OperationError)
    assert EmbeddingUnavailableError is ChatUnavailableError is RemoteUnavailableError
    assert EmbeddingError is RemoteError


# -- translating at the edge ---------------------------------------------------------------


def test_translation_is_a_field_assignment_of_a_known_path() -> None:
    error = StoreError(path="/sub", reason=NO_PERMISSION)
    out = translated(
        error, "/sub/b.md", "/share/sub/b.md", also={"/sub": "/share/sub"}, mount="/share"
    )
    assert type(out) is StoreError
    assert (str(out), out.path, out.mount, out.reason) == (
        f"/share/sub: {NO_PERMISSION}",
        "/share/sub",
        "/share",
        NO_PERMISSION,
    )
    assert error.path == "/sub"  # the store's own error is left as it was


def test_translation_keeps_the_remedy() -> None:
    error = DirectoryNotEmptyError("/d is not empty; pass recursive=True", path="/d").needing(
        "recursive", True
    )
    out = translated(error, "/d", "/m/d", mount="/m")
    assert str(out) == "/m/d is not empty; pass recursive=True"
    assert out.remedy == ("recursive", True)


@pytest.mark.parametrize(
    ("error", "plain"),
    [
        (StoreError(path="/secret/plan.txt", reason=NO_PERMISSION), f"/vault/a.md: {PLAIN}"),
        (AlreadyExistsError(path="/secret/plan.txt"), "/vault/a.md already exists"),
        (
            NotADirectoryError_(path="/secret"),
            "/vault/a.md: a parent in the path is a file, not a directory",
        ),
        (
            StoreError("cannot write /a.md: /secret/plan.txt is locked", path="/secret/plan.txt"),
            f"/vault/a.md: {PLAIN}",
        ),
    ],
)
def test_an_unknown_path_becomes_the_plain_form(error: OperationError, plain: str) -> None:
    out = translated(error, "/a.md", "/vault/a.md", also={"/": "/vault"}, mount="/vault")
    assert type(out) is type(error)
    assert str(out) == plain
    assert "secret" not in str(out) and "plan" not in str(out)
    assert (out.path, out.mount) == ("/vault/a.md", "/vault")


def test_a_plain_message_goes_through_the_fallback() -> None:
    out = translated(StoreError(f"/a.md: {NO_PERMISSION}"), "/a.md", "/vault/a.md", mount="/vault")
    assert str(out) == f"/vault/a.md: {NO_PERMISSION}"
    assert out.mount == "/vault"
    hidden = translated(StoreError("/secret.key: locked"), "/a.md", "/vault/a.md")
    assert str(hidden) == f"/vault/a.md: {PLAIN}"


def test_another_path_named_around_the_error_s_own_is_never_told_as_it_is() -> None:
    error = StoreError("/a.md: blocked by /secret/plan.txt", path="/a.md")
    out = translated(error, "/a.md", "/vault/a.md", mount="/vault")
    assert str(out) == f"/vault/a.md: {PLAIN}"
    known = translated(error, "/a.md", "/vault/a.md", also={"/secret/plan.txt": "/vault/s.txt"})
    assert str(known) == "/vault/a.md: blocked by /vault/s.txt"


# -- through the guard ---------------------------------------------------------------------


class FailingStore(MemoryStore):
    """A memory store whose reads fail with a structured error about the folder above."""

    def __init__(self) -> None:
        super().__init__()
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
            raise StoreError(path=path.parent, reason=NO_PERMISSION)
        return await super().read_file(path, offset, length, check=check)


async def _failure(ws: Workspace, store: FailingStore, path: str) -> StoreError:
    store.failing = True
    try:
        with pytest.raises(StoreError) as caught:
            await ws.read_text(path)
    finally:
        store.failing = False
    return caught.value


async def test_the_guard_sets_the_workspace_path_and_the_mount() -> None:
    store = FailingStore()
    ws = Workspace([Mount.of("/share", store)], policy=Policy.allow_all())
    await ws.write("/share/sub/b.md", "tern\n")
    error = await _failure(ws, store, "/share/sub/b.md")
    assert str(error) == f"/share/sub: {NO_PERMISSION}"
    assert (error.path, error.mount, error.reason) == ("/share/sub", "/share", NO_PERMISSION)


async def test_the_guard_never_names_a_folder_the_caller_may_not_see() -> None:
    store = FailingStore()
    policy = Policy(rules=(Rule.deny("list", "/share/private"), Rule.allow("*", "/**")))
    ws = Workspace([Mount.of("/share", store)], policy=policy)
    await ws.write("/share/private/a.md", "auk\n")
    error = await _failure(ws, store, "/share/private/a.md")
    assert str(error) == f"/share/private/a.md: {PLAIN}"
    assert error.path == "/share/private/a.md"


async def test_a_missing_file_is_told_with_its_workspace_path_and_mount() -> None:
    ws = Workspace([Mount.of("/notes", MemoryStore())], policy=Policy.allow_all())
    with pytest.raises(NotFoundError) as caught:
        await ws.read_text("/notes/gone.md")
    assert (str(caught.value), caught.value.path, caught.value.mount) == (
        "/notes/gone.md not found",
        "/notes/gone.md",
        "/notes",
    )


# -- a mount that cannot be reached at start-up --------------------------------------------


class Unreachable(MemoryStore):
    kind = "unreachable"

    def __init__(self, error: StoreError) -> None:
        super().__init__()
        self.error = error

    async def stat(self, path: VPath) -> FileInfo:
        raise self.error


async def test_a_mount_check_tells_the_reason_the_store_gave() -> None:
    error = StoreError(path="/", reason="the bucket of this mount does not exist")
    with pytest.raises(ConfigurationError) as caught:
        await check_mounts([Mount.of("/data", Unreachable(error))])
    assert str(caught.value) == (
        "mount /data (unreachable): the bucket of this mount does not exist"
    )


async def test_a_mount_check_tells_a_plain_message_whole() -> None:
    error = StoreError("the server refused the connection")
    with pytest.raises(ConfigurationError) as caught:
        await check_mounts([Mount.of("/data", Unreachable(error))])
    assert str(caught.value) == "mount /data (unreachable): the server refused the connection"
