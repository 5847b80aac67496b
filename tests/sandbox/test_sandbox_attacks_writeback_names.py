"""Red team of the write-back's names and shapes, with real bubblewrap: a name that is not a
workspace name is refused on its own (folders with all they hold, not only files); a swap of
a file for a folder is a refusal, not a crash; what the principal cannot see can be neither
deleted nor relabelled through a command; a write-only mount keeps what it holds.

Attacks pinned (docs/sandbox.md, "What comes back"): NFD, NFKC-only and non-UTF-8 spellings of
*folders* (with files below them) beside their NFC twin; a newline, a tab and an escape in
names; case twins; a file replaced by a folder and a folder by a file; ``rm -rf`` and ``mv`` of
a folder that holds a file hidden from the principal; writing the sidecar of a hidden document
(to make it public) and loosening the sidecar of a visible one; a name that already exists in
a write-only mount; sparse files counted by their size; mode bits, set-user-ID and extended
attributes, which never come back.
"""

from __future__ import annotations

import unicodedata

import pytest
from sandbox_support import OWNER, READER, require_bwrap

from bastion import Labels, MemoryAuditSink, MemoryStore, Mount, Policy, Rule, Scope, Workspace
from bastion.core.errors import NotFoundError, PolicyDeniedError
from bastion.core.paths import VPath
from bastion.sandbox import RunLimits

pytestmark = pytest.mark.usefixtures("bwrap")

HIDDEN = b"---\nclassification: confidential\n---\nheron hidden canary\n"
RULES = (Rule.allow("execute", "/**"), Rule.allow("*", "/**"))


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


class World:
    """``/w`` (read-write: a folder ``d`` holding a visible and a hidden file, a hidden file at
    the top, a visible file with a sidecar) and ``/drop`` (write-only, one file in it); the
    command runs as READER, the owner looks."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.drop = MemoryStore()
        self.owner = Workspace(
            [Mount.of("/w", self.store), Mount.of("/drop", self.drop, Scope.WRITE_ONLY)],
            policy=Policy(rules=RULES),
            principal=OWNER,
            audit=MemoryAuditSink(),
        )
        self.ws = self.owner.with_principal(READER)

    async def fill(self) -> World:
        await self.store.mkdir(VPath.parse("/d"))
        for path, data in {
            "/d/open.md": b"open\n",
            "/d/secret.md": HIDDEN,
            "/secret.md": HIDDEN,
            "/a.txt": b"alpha\n",
            "/int.md": b"internal\n",
            "/int.md.labels.yaml": b"classification: internal\n",
        }.items():
            await self.store.write(VPath.parse(path), data)
        await self.drop.write(VPath.parse("/there.txt"), b"held\n")
        return self

    async def names(self) -> list[str]:
        return sorted(str(e.path) for e in await self.owner.list("/w", recursive=True))


async def _world() -> World:
    return await World().fill()


NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


@pytest.mark.parametrize(
    ("twin", "shown"),
    [
        (NFD, "/w/cafe\\u0301"),
        ("ﬁle", None),  # a ligature: NFC already (only NFKC folds it): a name of its own
        ("x\udcff", "/w/x\\xff"),  # a byte that is no UTF-8
    ],
)
async def test_a_folder_named_in_another_spelling_is_refused_with_all_it_holds(
    twin: str, shown: str | None
) -> None:
    world = await _world()
    script = (
        "import os, sys\n"
        "twin = os.fsencode(sys.argv[1])\n"
        "os.makedirs(twin + b'/in'); open(twin + b'/in/f', 'w').write('twin')\n"
        "os.makedirs(sys.argv[2].encode()); open(sys.argv[2].encode() + b'/f', 'w').write('nfc')\n"
    )
    result = await world.ws.run(["python3", "-c", script, twin, NFC], cwd="/w")
    assert result.exit_code == 0, result.stderr
    if shown is None:  # a valid name: it comes back under its own name, apart from café
        assert sorted(result.changed) == sorted([f"/w/{NFC}/f", f"/w/{twin}/in/f"])
    else:
        assert result.changed == (f"/w/{NFC}/f",)
        assert list(result.refused) == [shown]
        assert "rename it" in result.refused[shown]
    assert await world.owner.read_text(f"/w/{NFC}/f") == "nfc"


@pytest.mark.parametrize("name", ["new\nline", "tab\there", "esc\x1b[31m", "back\\slash"])
async def test_control_characters_and_backslashes_in_names_are_refused_alone(name: str) -> None:
    world = await _world()
    result = await world.ws.run(["sh", "-c", 'echo x > "$0"; echo y > ok', name], cwd="/w")
    assert result.changed == ("/w/ok",)
    (key,) = result.refused
    assert "\n" not in key and "\x1b" not in key and "\t" not in key
    assert "not a valid workspace path" in result.refused[key]


async def test_case_twins_come_back_as_two_names_where_the_store_keeps_case() -> None:
    world = await _world()
    result = await world.ws.run("echo A > Readme; echo B > README; mkdir D; echo c > D/x", cwd="/w")
    assert sorted(result.changed) == ["/w/D/x", "/w/README", "/w/Readme"]
    assert await world.owner.read_text("/w/Readme") == "A\n"


async def test_a_file_swapped_for_a_folder_and_back_is_refused_not_raised() -> None:
    world = await _world()
    result = await world.ws.run(
        "rm a.txt && mkdir a.txt && echo z > a.txt/x && rm -r d && echo f > d", cwd="/w"
    )
    assert result.exit_code == 0
    assert "/w/a.txt" in result.refused and "/w/a.txt/x" in result.refused
    assert await world.owner.read_text("/w/a.txt") == "alpha\n"
    assert "/w/d" in result.refused  # a folder is there (holding the hidden file): no file
    assert await world.owner.read_bytes("/w/d/secret.md") == HIDDEN


@pytest.mark.parametrize("command", ["rm -rf d", "mv d e", "rm -rf /w/*", "find . -delete"])
async def test_what_the_principal_cannot_see_is_never_deleted(command: str) -> None:
    world = await _world()
    result = await world.ws.run(command, cwd="/w")
    assert result.exit_code == 0, result.stderr
    assert await world.owner.read_bytes("/w/d/secret.md") == HIDDEN
    assert await world.owner.read_bytes("/w/secret.md") == HIDDEN
    assert "secret" not in repr(result)
    # the folder that holds only the hidden file is gone for the reader, as the guard shows it
    with pytest.raises(NotFoundError):
        await world.ws.stat("/w/d")


async def test_a_command_cannot_relabel_what_it_cannot_see_or_loosen_what_it_can() -> None:
    world = await _world()
    result = await world.ws.run(
        "printf 'classification: public\\n' > secret.md.labels.yaml; "
        "printf 'classification: public\\n' > d/secret.md.LABELS.YAML; "
        "printf 'classification: public\\n' > int.md.labels.yaml; "
        "printf 'classification: confidential\\n' > a.txt.labels.yaml",
        cwd="/w",
    )
    assert result.changed == ("/w/a.txt.labels.yaml",)  # tightening needs no label permission
    # each answer is the one the plain write gives: nothing more is learnt through a command
    for path in ("/w/secret.md.labels.yaml", "/w/d/secret.md.LABELS.YAML", "/w/int.md.labels.yaml"):
        with pytest.raises((NotFoundError, PolicyDeniedError)) as plain:
            await world.ws.write(path, "classification: public\n")
        assert result.refused[path] == str(plain.value)
    with pytest.raises(NotFoundError):
        await world.ws.read_text("/w/secret.md")
    assert await world.owner.read_text("/w/int.md.labels.yaml") == "classification: internal\n"
    assert "/w/secret.md.labels.yaml" not in await world.names()
    with pytest.raises(NotFoundError):
        await world.ws.read_text("/w/a.txt")  # confidential now: hidden from the reader


async def test_a_write_only_mount_shows_nothing_and_a_write_lands_blind() -> None:
    """The command sees nothing of the write-only mount, and a write there is a blind write
    (docs/policy.md, "Blind writes": the last write wins, told the same whether or not a file
    was there)."""
    world = await _world()
    result = await world.ws.run(
        "ls -A /drop; echo new > /drop/there.txt; echo fresh > /drop/fresh.txt", cwd="/w"
    )
    assert result.stdout == ""
    assert sorted(result.changed) == ["/drop/fresh.txt", "/drop/there.txt"]
    assert dict(result.refused) == {}
    assert await world.drop.read_range(VPath.parse("/there.txt")) == b"new\n"


async def test_sparse_files_count_by_their_size() -> None:
    world = await _world()
    limits = RunLimits(written_bytes=8 * 1024**2, file_bytes=64 * 1024**2)
    result = await world.ws.run(
        "truncate -s 20M hole && echo small > s", cwd="/w", limits=limits, timeout=30
    )
    assert result.limit == "written" and result.changed == ()
    assert set(result.refused) == {"/w/hole", "/w/s"}
    too_big = await world.ws.run("truncate -s 1T hole; echo $?", cwd="/w", timeout=30)
    assert too_big.stdout.strip() != "0"  # past the file-size limit: the kernel refuses it
    assert "/w/hole" not in too_big.changed or await world.owner.read_bytes("/w/hole") == b""


async def test_modes_set_user_id_and_extended_attributes_never_come_back() -> None:
    world = await _world()
    result = await world.ws.run(
        "echo '#!/bin/sh' > tool && chmod 4755 tool && chmod 000 a.txt && "
        "(setfattr -n user.x -v y tool 2>/dev/null || true)",
        cwd="/w",
    )
    assert result.changed == ("/w/tool",) and result.refused == {}
    info = await world.owner.stat("/w/tool")
    assert info.size == len("#!/bin/sh\n")
    again = await world.ws.run("stat -c %A tool", cwd="/w")
    assert again.stdout.startswith("-") and "s" not in again.stdout  # copied in afresh


async def test_a_hidden_mounts_name_is_answered_like_no_mount_at_all() -> None:
    owner = Workspace(
        [
            Mount.of("/s", MemoryStore()),
            Mount.of("/secret", MemoryStore(), labels=Labels(classification="confidential")),
        ],
        policy=Policy(rules=RULES),
        principal=OWNER,
    )
    ws = owner.with_principal(READER)
    result = await ws.run(
        "ls /; mkdir -p /secret/x /nomount/x; echo a > /secret/f; echo b > /nomount/f", cwd="/s"
    )
    assert "secret" not in result.stdout
    for name in ("x", "f"):
        hidden, none = result.refused[f"/secret/{name}"], result.refused[f"/nomount/{name}"]
        assert hidden.replace("/secret/", "/nomount/") == none
    assert await owner.list("/secret") == []
