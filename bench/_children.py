"""Measuring in child processes against another tree's ``src``: the before and after of one run.

A bench exports a revision's ``src`` (``export_src``) and runs itself as a child with that
``src`` first on ``PYTHONPATH`` (``run_child``), so both trees are measured by the same script,
interpreter and packages, back to back. The child prints one JSON object as its last line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def export_src(rev: str, into: Path) -> Path:
    """``git archive`` of ``rev``'s ``src`` unpacked under ``into``; the folder to import from."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "src.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_child(script: str, src: Path, arguments: list[str], *, label: str) -> dict[str, Any]:
    """Run ``script`` with ``arguments`` and ``src`` on ``PYTHONPATH``; its last output line."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(script).resolve()), *arguments]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{label} failed ({src}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def before_after(
    script: str, base: str, arguments: list[str], *, rounds: int, prefix: str
) -> dict[str, list[Any]]:
    """``rounds`` runs of ``script`` against ``base``'s exported ``src`` ("before") and this
    tree's ``src`` ("after"), alternating which goes first; each label's child results in order."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    got: dict[str, list[Any]] = {"before": [], "after": []}
    try:
        srcs = {"before": export_src(base, work / "base"), "after": Path("src").resolve()}
        for r in range(rounds):
            for label in ("before", "after") if r % 2 == 0 else ("after", "before"):
                got[label].append(run_child(script, srcs[label], arguments, label=label))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return got
