"""grep answers the same whichever way it reads a file: the local fast lane (confined
descriptors, ``workspace.grep_local``) or the guarded read, one file at a time (every other
store). The same files are put on a local disk and in a memory store and every answer of
the one is compared with the other's: lines, context, case, caps, skipped files."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bastion import LocalStore, Mount, Policy, Workspace
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits
from bastion.stores.memory import MemoryStore
from bastion.workspace import grep_run
from bastion.workspace.grep_local import local_lane

CAP = 16384
TEXTS = {
    "a/plain.txt": b"alpha\nbeta NEEDLE\ngamma\nneedle delta\nepsilon\n",
    "a/crlf.txt": b"one\r\ntwo NEEDLE\r\n\r\nthree\r\n",
    "a/cr.txt": b"one\rtwo NEEDLE\rthree",
    "a/breaks.txt": "x NEEDLE\u2028y needle\x85z\x0cNEEDLE w\n".encode(),
    "a/latin1.txt": b"caf\xe9 NEEDLE \xff\nStra\xc3\x9fe grosse\nSTRASSE\n",
    "a/unicode.txt": "K\u212a kelvin\n\u00df\nne\u0301e\nNe\u0301E\n".encode(),
    "a/nofinal.txt": b"first\nlast NEEDLE",
    "a/empty.txt": b"",
    "b/binary.bin": b"NEEDLE\x00\x01\x02NEEDLE\n",
    "b/late-nul.txt": b"NEEDLE\n" + b"x" * 9000 + b"\x00NEEDLE\n",
    "b/big.log": b"NEEDLE\n" * (CAP // 7 + 10),
    "b/many.txt": b"".join(b"row %d NEEDLE\n" % i for i in range(40)),
    "b/config.yaml": b"timeout = 5000\ntimeout=12\nTIMEOUT = 999\n",
    "c/d/deep.md": b"# title\n\nsome NEEDLE text\n\nmore\n",
    "c/long.txt": b"y" * 700 + b" NEEDLE " + b"z" * 700 + b"\n",
}
CASES: list[tuple[str, dict[str, Any]]] = [
    ("NEEDLE", {}),
    ("needle", {}),
    ("needle", {"ignore_case": True}),
    ("strasse", {"ignore_case": True}),
    ("\u00df", {"ignore_case": True}),
    ("k", {"ignore_case": True}),
    ("\ufffd", {}),
    ("NEEDLE", {"context": 1}),
    ("NEEDLE", {"context": 3, "max_per_file": 2}),
    ("NEEDLE", {"max_total": 5}),
    ("NEEDLE", {"max_total": 12, "max_per_file": 4}),
    ("NEEDLE", {"glob": "*.txt"}),
    ("NEEDLE", {"glob": "**/d/*.md"}),
    ("timeout\\s*=\\s*\\d{3,}", {"regex": True}),
    ("(?i)^needle", {"regex": True}),
    ("^$", {"regex": True}),
    ("NEE.LE$", {"regex": True, "ignore_case": True, "context": 1}),
    ("\\Arow 3", {"regex": True}),
    ("caf.", {"regex": True}),
    ("ta\ngam", {}),
]


def _seed(root: Path) -> None:
    for name, data in TEXTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


async def _memory() -> MemoryStore:
    store = MemoryStore()
    for name, data in TEXTS.items():
        path = VPath.parse("/" + name)
        for depth in range(1, len(path.parts)):
            folder = VPath(path.parts[:depth])
            if not await store.exists(folder):
                await store.mkdir(folder)
        await store.write(path, data)
    return store


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("lanes")
    _seed(root)
    policy = Policy.allow_all(limits=FileLimits(max_file_bytes=CAP))
    mounts = [Mount.of("/disk", LocalStore(root)), Mount.of("/mem", asyncio.run(_memory()))]
    return Workspace(mounts, policy=policy)


def _answer(ws: Workspace, mount: str, pattern: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    found = ws.sync().grep(pattern, mount, **kwargs).to_dict()
    answer: dict[str, Any] = json.loads(json.dumps(found).replace(f'"{mount}/', '"/X/'))
    return answer


@pytest.mark.parametrize(("pattern", "kwargs"), CASES)
def test_the_local_lane_answers_as_the_guarded_read(
    pair: Workspace, pattern: str, kwargs: dict[str, Any]
) -> None:
    disk = _answer(pair, "/disk", pattern, kwargs)
    assert disk == _answer(pair, "/mem", pattern, kwargs)


@pytest.mark.parametrize(("pattern", "kwargs"), CASES[:12])
def test_small_hops_answer_as_one(
    pair: Workspace, pattern: str, kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many hops to the worker (a file or two each, by count or by bytes) answer as one."""
    monkeypatch.setattr(grep_run, "FIRST_BATCH", 1)
    monkeypatch.setattr(grep_run, "MAX_BATCH", 2)
    monkeypatch.setattr(grep_run, "BATCH_BYTES", 200)
    disk = _answer(pair, "/disk", pattern, kwargs)
    assert disk == _answer(pair, "/mem", pattern, kwargs)


def test_the_answers_compared_are_real_ones(pair: Workspace) -> None:
    found = pair.sync().grep("NEEDLE", "/disk")
    assert found.files_searched == len(TEXTS) - 2  # the binary one and the big log skipped
    assert sorted(found.skipped) == [
        "/disk/b/big.log: over the 16384-byte size limit",
        "/disk/b/binary.bin: binary",
    ]
    assert ("/disk/c/d/deep.md", 3) in [(m.path, m.line) for m in found.matches]
    assert "/disk/b/late-nul.txt" in {m.path for m in found.matches}


def test_the_local_mount_takes_the_lane_and_the_memory_mount_does_not(pair: Workspace) -> None:
    guarded = pair._router.guarded
    assert local_lane(guarded[VPath.parse("/disk")], CAP) is not None
    assert local_lane(guarded[VPath.parse("/mem")], CAP) is None


class ReadsItsOwnWay(LocalStore):
    """A local store whose reads are its own: grep must read through them."""

    async def read_file(self, path: VPath, *args: Any, **kwargs: Any) -> tuple[FileInfo, bytes]:
        info, data = await super().read_file(path, *args, **kwargs)
        return info, data.replace(b"NEEDLE", b"REDACT")


def test_a_store_with_reads_of_its_own_is_read_through_them(tmp_path: Path) -> None:
    _seed(tmp_path)
    ws = Workspace([Mount.of("/own", ReadsItsOwnWay(tmp_path))], policy=Policy.allow_all())
    guarded = ws._router.guarded[VPath.parse("/own")]
    lane = local_lane(guarded, CAP)
    rel = VPath.parse("/a/plain.txt")
    assert lane is not None and lane.read(asyncio.run(guarded.inner.stat(rel)), rel) is None
    found = ws.sync().grep("NEEDLE", "/own")
    assert found.matches == ()
    assert ws.sync().grep("REDACT", "/own").files_matched > 5


def test_a_file_listed_then_changed_is_left_to_the_guarded_read(tmp_path: Path) -> None:
    _seed(tmp_path)
    ws = Workspace([Mount.of("/d", LocalStore(tmp_path))], policy=Policy.allow_all())
    lane = local_lane(ws._router.guarded[VPath.parse("/d")], CAP)
    assert lane is not None
    rel = VPath.parse("/a/plain.txt")
    listed = asyncio.run(ws._router.guarded[VPath.parse("/d")].inner.stat(rel))
    read = lane.read(listed, rel)
    assert read is not None and read.data == TEXTS["a/plain.txt"]
    (tmp_path / "a" / "plain.txt").write_bytes(TEXTS["a/plain.txt"].upper())
    assert lane.read(listed, rel) is None  # another version: decided afresh
    os.replace(tmp_path / "a" / "crlf.txt", tmp_path / "a" / "plain.txt")
    assert lane.read(listed, rel) is None
