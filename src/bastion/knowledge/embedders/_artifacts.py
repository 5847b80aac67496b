"""Build-once model artifacts on disk: where they live, how they are keyed, how they appear.

An artifact (an exported or quantized ONNX model) is keyed by a digest of the files it was
built from plus a recipe string (graph version, variant, library versions), so a new model or
a new recipe never reuses a stale file. It is built into a private temporary file in the same
directory, flushed, and moved into place with :meth:`Path.replace` (``rename(2)``), which is
atomic: two processes that build it at the same time both succeed, a reader sees either no
file or a whole one, and a crash leaves at most a stray ``.tmp`` file that no reader opens.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["default_cache_dir", "digest_files", "publish"]


def default_cache_dir() -> Path:
    """``$BASTION_CACHE_DIR/models``, else ``$XDG_CACHE_HOME/bastion/models``, else
    ``~/.cache/bastion/models``."""
    if root := os.environ.get("BASTION_CACHE_DIR"):
        return Path(root) / "models"
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "bastion" / "models"
    return Path.home() / ".cache" / "bastion" / "models"


def digest_files(root: Path, names: Iterable[str], *, recipe: str = "") -> str:
    """sha256 over the recipe and each named file (name and bytes), as hex."""
    h = hashlib.sha256(recipe.encode("utf-8"))
    for name in names:
        h.update(b"\0" + name.encode("utf-8") + b"\0")
        with (root / name).open("rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def publish(target: Path, build: Callable[[Path], None]) -> Path:
    """Return ``target``, first building it with ``build(tmp_path)`` if it does not exist."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        build(tmp)
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
