"""The guard's safety net for store messages (``core.errors.translated`` / ``reworded``) finds
every path a message names that the edge did not map, in the forms a foreign error quotes it:
a URL (``file:///srv/...``, ``s3://bucket/key``), after an equals sign (``filename=/srv/x``),
inside brackets (``[/srv/x]``, ``</srv/x>``), after a semicolon or a comma without a space, a
Windows path (``C:\\data``, ``\\\\server\\share``). Such a message becomes the plain form
naming the workspace path. A visible path is kept as the caller named it, also when a full
stop or a bracket follows it, and template characters in a name (``{path}``, ``{0}``, ``%s``)
are text, never a template.

Through a workspace: a third-party store's plain message that quotes a host path answers the
caller with the plain form; the host path is in no part of the error.
"""

from __future__ import annotations

import traceback

import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    NotFoundError,
    OperationError,
    StoreError,
    translated,
)
from bastion.core.models import FileInfo
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

PLAIN = "the storage of this mount failed; try again later, and ask an operator if it persists"
HOST = "/srv/host/stores/docs"

FOREIGN = [
    f"cannot read file://{HOST}/a.md",
    "backend failed: s3://bucket/tenant-b/secret.md",
    f"backend failed (errno=5, filename={HOST}/a.md)",
    f"backend failed [{HOST}/a.md]",
    f"backend failed <{HOST}/a.md>",
    f"backend failed {{{HOST}/a.md}}",
    "/a.md failed;/secret/b.md",
    "/a.md failed,/secret/b.md",
    "/a.md failed:/secret/b.md",
    "backend failed at C:\\data\\secret.md",
    "backend failed at \\\\server\\share\\secret.md",
]


@pytest.mark.parametrize("message", FOREIGN)
def test_a_plain_message_quoting_a_foreign_path_becomes_the_plain_form(message: str) -> None:
    out = translated(StoreError(message), "/a.md", "/docs/a.md", mount="/docs")
    assert str(out) == f"/docs/a.md: {PLAIN}"
    assert (out.path, out.mount) == ("/docs/a.md", "/docs")


@pytest.mark.parametrize("message", FOREIGN)
def test_a_reason_quoting_a_foreign_path_becomes_the_plain_form(message: str) -> None:
    out = translated(StoreError(path="/a.md", reason=message), "/a.md", "/docs/a.md")
    assert str(out) == f"/docs/a.md: {PLAIN}"


@pytest.mark.parametrize(
    ("message", "told"),
    [
        ("cannot write /a.md.", "cannot write /docs/a.md."),
        ("cannot write [/a.md]", "cannot write [/docs/a.md]"),
        ("cannot write </a.md>", "cannot write </docs/a.md>"),
        ("cannot write {/a.md}", "cannot write {/docs/a.md}"),
        ("cannot write path=/a.md", "cannot write path=/docs/a.md"),
    ],
)
def test_a_visible_path_is_mapped_whatever_follows_it(message: str, told: str) -> None:
    assert str(translated(StoreError(message), "/a.md", "/docs/a.md")) == told


def test_a_longer_name_that_starts_with_a_known_path_is_not_that_path() -> None:
    """``/a.md.bak`` is not ``/a.md`` followed by text: it is another (unmapped) path."""
    out = translated(StoreError("/a.md.bak is in the way"), "/a.md", "/docs/a.md")
    assert str(out) == f"/docs/a.md: {PLAIN}"


@pytest.mark.parametrize("name", ["/a{path}.md", "/a{0}.md", "/a%s.md", "/a{path!r}.md", "/a}{.md"])
def test_template_characters_in_a_name_are_text(name: str) -> None:
    full = f"/docs{name}"
    out = translated(NotFoundError(path=name), name, full, mount="/docs")
    assert (str(out), out.path) == (f"{full} not found", full)
    out = translated(StoreError(path=name, reason="disk {path} %s failed"), name, full)
    assert str(out) == f"{full}: disk {{path}} %s failed"


def test_a_move_whose_message_names_its_hidden_source_tells_only_the_target() -> None:
    error = AlreadyExistsError("/src.md cannot move onto /dst.md", path="/dst.md")
    out = translated(error, "/dst.md", "/docs/dst.md")  # the source is not the caller's
    assert str(out) == "/docs/dst.md already exists"
    assert "src" not in repr(out.args)


class QuotingStore(MemoryStore):
    """A third-party store whose stat fails with a message quoting its host folder."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    async def stat(self, path: VPath) -> FileInfo:
        if path.is_root:
            return await super().stat(path)
        raise StoreError(self.message)


@pytest.mark.parametrize("message", FOREIGN[:5])
async def test_a_store_quoting_its_host_path_answers_the_plain_form(message: str) -> None:
    ws = Workspace([Mount.of("/docs", QuotingStore(message))], policy=Policy.allow_all())
    with pytest.raises(OperationError) as caught:
        await ws.stat("/docs/a.md")
    error = caught.value
    assert str(error) == f"/docs/a.md: {PLAIN}"
    seen = repr((error.args, error.path, error.reason, error.__context__, error.__cause__))
    seen += "".join(traceback.format_exception(error))
    assert HOST not in seen
    assert "bucket" not in seen


def test_a_reason_the_message_does_not_show_is_not_kept_with_its_path() -> None:
    """A raiser that gives a message and, apart, a reason naming a host path: the copy the
    guard makes would keep ``reason`` as it was, an attribute a front end may read."""
    error = StoreError("/a.md: disk failed", path="/a.md", reason=f"see {HOST}/log")
    out = translated(error, "/a.md", "/docs/a.md", mount="/docs")
    assert (str(out), out.reason) == ("/docs/a.md: disk failed", "disk failed")
    assert HOST not in repr(vars(out))


def test_a_reason_naming_another_store_path_is_told_with_its_workspace_path() -> None:
    error = StoreError(path="/b.md", reason="copy from /src.md failed")
    out = translated(error, "/b.md", "/docs/b.md", also={"/src.md": "/docs/src.md"})
    assert str(out) == "/docs/b.md: copy from /docs/src.md failed"
    assert out.reason == "copy from /docs/src.md failed"
    assert "'/src.md" not in repr(vars(out))


@pytest.mark.parametrize(
    "message",
    ["/a.md.labels.yaml is in the way", "/a.mdx is in the way", "cannot copy /a.md.tmp onto x"],
)
def test_a_path_inside_a_longer_name_is_not_the_error_s_path(message: str) -> None:
    """An error about ``/a.md`` whose message names ``/a.md.labels.yaml`` (a sidecar, which
    may be hidden) first: re-rendering it around ``/a.md`` would tell the longer name, with
    the workspace prefix in front, as if it were visible."""
    error = StoreError(message, path="/a.md")
    assert not error.renders_path
    out = translated(error, "/a.md", "/docs/a.md")
    assert str(out) == f"/docs/a.md: {PLAIN}"


def test_a_path_named_whole_after_a_longer_name_is_the_error_s_path() -> None:
    error = StoreError("/a.md.tmp left behind; /a.md: busy", path="/a.md")
    assert error.renders_path
    assert str(translated(error, "/a.md", "/docs/a.md")) == f"/docs/a.md: {PLAIN}"
