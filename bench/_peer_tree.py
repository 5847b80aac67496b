"""The generated tree of the peers benchmark (``bench/peers.py``): 2,020 files of ~15 KB
(30 MB) in 20 projects, one folder of exactly 50 files, 109 ``.yaml`` files, and one 50 MB
log. A literal (``NEEDLE_LITERAL``) and a regular-expression target
(``timeout = <3+ digits>``) each sit on 60 lines. Deterministic: the same tree every run.
Also the raw floor of a durable write that ``peers.py`` and ``grep_scan.py`` both time."""

from __future__ import annotations

import os
import random
from pathlib import Path

FILES = 2020
FILE_BYTES = 15_000
BIG_BYTES = 50 * 1024 * 1024
LITERAL = "NEEDLE_LITERAL"
REGEX = r"timeout\s*=\s*\d{3,}"
HITS = 60
YAML_FILES = 109
LIST_FOLDER = "proj00/list50"
BIG_FILE = "big/huge.log"

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
    "request",
    "response",
    "handler",
    "config",
    "value",
    "index",
    "store",
    "mount",
    "guard",
    "label",
    "policy",
    "reader",
    "writer",
    "buffer",
    "stream",
    "token",
    "session",
    "cache",
]


def _line(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 12)))


def _body(rng: random.Random, size: int, extra: list[str]) -> str:
    lines: list[str] = []
    total = 0
    while total < size:
        line = _line(rng)
        lines.append(line)
        total += len(line) + 1
    for text in extra:
        lines.insert(rng.randrange(len(lines)), text)
    return "\n".join(lines) + "\n"


def names() -> list[str]:
    """The relative paths of the 2,020 small files, in a fixed order."""
    out: list[str] = [f"{LIST_FOLDER}/item{i:02}.txt" for i in range(50)]
    exts = ["py", "md", "txt", "json"]
    i = 0
    while len(out) < FILES:
        project = f"proj{i % 20:02}"
        sub = ("src", "docs", "config", "tests", "lib/deep/er")[i % 5]
        ext = "yaml" if len(out) - 50 < YAML_FILES * 18 and (len(out) - 50) % 18 == 0 else ""
        ext = ext or exts[i % len(exts)]
        out.append(f"{project}/{sub}/file{i:04}.{ext}")
        i += 1
    return out


def build(root: Path) -> Path:
    """Write the tree under ``root`` (skipped when a complete one is there); ``root``."""
    marker = root.parent / f"{root.name}.complete"
    if marker.exists():
        return root
    rng = random.Random(31)
    all_names = names()
    literal_at = set(rng.sample(range(len(all_names)), HITS))
    regex_at = set(rng.sample(range(len(all_names)), HITS))
    for k, name in enumerate(all_names):
        extra = []
        if k in literal_at:
            extra.append(f"found {LITERAL} here")
        if k in regex_at:
            extra.append(f"timeout = {rng.randint(100, 99999)}")
        size = 200 if name.startswith(LIST_FOLDER) else FILE_BYTES
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_body(rng, size, extra))
    big = root / BIG_FILE
    big.parent.mkdir(parents=True, exist_ok=True)
    with big.open("w") as out:
        written = n = 0
        while written < BIG_BYTES:
            line = f"{n:09} " + _line(rng) + "\n"
            out.write(line)
            written += len(line)
            n += 1
    marker.write_text("ok\n")
    return root


def raw_durable_write(path: Path, data: bytes) -> None:
    """The floor of a durable write: temporary file, fsync, rename, folder fsync."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.rename(path)
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Make the entries of ``folder`` durable (a rename, a new name, a removal)."""
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def raw_durable_move(src: Path, dst: Path) -> None:
    """The floor of a durable move: rename, then fsync the folder(s) whose entries changed
    (a rename that is not on disk yet may come back after a crash as the old name)."""
    src.rename(dst)
    fsync_folder(dst.parent)
    if dst.parent != src.parent:
        fsync_folder(src.parent)


def raw_durable_delete(path: Path) -> None:
    """The floor of a durable delete: unlink, then fsync the folder."""
    path.unlink()
    fsync_folder(path.parent)
